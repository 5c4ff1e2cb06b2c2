//! A system CBLAS (OpenBLAS, MKL, BLIS, ...) for f32/f64 products, loaded at
//! run time when `PJC_BLAS` names it (`PJC_BLAS=libopenblas.so.0`).
//!
//! Off by default, chosen by measurement: on the project's AVX-512 machines
//! the `gemm` crate (its AVX-512 kernels, one call per block of rows on each
//! thread) runs a 2048³ f32 product at about 340 GFLOP/s, Debian's OpenBLAS
//! 0.3.21 at about 220 (held to its AVX2 kernels there by
//! `OPENBLAS_CORETYPE`), numpy 225 (docs/benchmarks-steps.md). A machine with
//! a better-tuned BLAS can opt in; nothing links it, so an executable runs
//! anywhere without one. The library's own environment is left as it is.

use libloading::Library;
use std::sync::OnceLock;

const ROW_MAJOR: i32 = 101;
const NO_TRANS: i32 = 111;
const TRANS: i32 = 112;

type Sgemm = unsafe extern "C" fn(i32, i32, i32, i32, i32, i32, f32, *const f32, i32, *const f32, i32, f32, *mut f32, i32);
type Dgemm = unsafe extern "C" fn(i32, i32, i32, i32, i32, i32, f64, *const f64, i32, *const f64, i32, f64, *mut f64, i32);
type SetThreads = unsafe extern "C" fn(i32);

/// The loaded library's entry points.
pub struct Blas {
    /// Where it was loaded from, for `--list-devices`-like reports.
    pub name: String,
    sgemm: Sgemm,
    dgemm: Dgemm,
    set_threads: Option<SetThreads>,
    threads: std::sync::Mutex<i32>,
    _lib: Library,
}

/// The BLAS `PJC_BLAS` names, if any (looked up once; `none`, empty or
/// unset: none).
pub fn get() -> Option<&'static Blas> {
    static BLAS: OnceLock<Option<Blas>> = OnceLock::new();
    BLAS.get_or_init(|| match std::env::var("PJC_BLAS") {
        Ok(v) if v != "none" && !v.is_empty() => load(&[v.as_str()]),
        _ => None,
    })
    .as_ref()
}

/// The first of `names` that loads and has CBLAS's products.
pub fn load(names: &[&str]) -> Option<Blas> {
    for &name in names {
        // SAFETY: loading a BLAS runs its initialisers, which set up its
        // thread pool and nothing else of this process.
        let Ok(lib) = (unsafe { Library::new(name) }) else { continue };
        // SAFETY: the CBLAS symbols have the C signatures declared above.
        let found = unsafe {
            let s = lib.get::<Sgemm>(b"cblas_sgemm\0").map(|f| *f);
            let d = lib.get::<Dgemm>(b"cblas_dgemm\0").map(|f| *f);
            let t = lib.get::<SetThreads>(b"openblas_set_num_threads\0").map(|f| *f).ok();
            (s, d, t)
        };
        if let (Ok(sgemm), Ok(dgemm), set_threads) = found {
            return Some(Blas { name: name.to_string(), sgemm, dgemm, set_threads, threads: std::sync::Mutex::new(0), _lib: lib });
        }
    }
    None
}

/// A matrix operand as CBLAS takes it: transposed or not, and its leading
/// dimension, from element strides (rows, columns) of a `rows x cols` matrix;
/// `None` when neither stride is 1 (or the leading dimension is too small or
/// too large for CBLAS's `int`).
pub fn operand(rows: usize, cols: usize, rs: usize, cs: usize) -> Option<(i32, i32)> {
    let fits = |x: usize| i32::try_from(x).ok();
    if cs == 1 || cols <= 1 {
        let ld = if rows <= 1 { cols.max(1) } else { rs };
        (ld >= cols.max(1)).then_some((NO_TRANS, fits(ld)?))
    } else if rs == 1 || rows <= 1 {
        let ld = if cols <= 1 { rows.max(1) } else { cs };
        (ld >= rows.max(1)).then_some((TRANS, fits(ld)?))
    } else {
        None
    }
}

/// The element types CBLAS computes in.
pub trait Element: Copy + 'static {
    /// `c (m x n, row-major, ldc = n) = a (m x k) · b (k x n)`; false when
    /// a stride pattern does not fit CBLAS (nothing was written).
    ///
    /// # Safety
    /// The strides must address elements inside `a`, `b` and `c`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(blas: &Blas, m: usize, n: usize, k: usize, a: *const Self, a_rs: usize, a_cs: usize, b: *const Self, b_rs: usize, b_cs: usize, c: *mut Self) -> bool;
}

macro_rules! element {
    ($t:ty, $f:ident) => {
        impl Element for $t {
            unsafe fn gemm(blas: &Blas, m: usize, n: usize, k: usize, a: *const $t, a_rs: usize, a_cs: usize, b: *const $t, b_rs: usize, b_cs: usize, c: *mut $t) -> bool {
                let (Some((ta, lda)), Some((tb, ldb))) = (operand(m, k, a_rs, a_cs), operand(k, n, b_rs, b_cs)) else { return false };
                let (Ok(mi), Ok(ni), Ok(ki)) = (i32::try_from(m), i32::try_from(n), i32::try_from(k)) else { return false };
                // SAFETY: the caller's strides stay inside the buffers, and
                // the leading dimensions were derived from them.
                unsafe { (blas.$f)(ROW_MAJOR, ta, tb, mi, ni, ki, 1.0, a, lda, b, ldb, 0.0, c, ni.max(1)) };
                true
            }
        }
    };
}
element!(f32, sgemm);
element!(f64, dgemm);

impl Blas {
    /// Makes the library use `threads` threads (its pool is per process).
    pub fn use_threads(&self, threads: usize) {
        let Some(set) = self.set_threads else { return };
        let t = threads.clamp(1, i32::MAX as usize) as i32;
        let mut cur = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        if *cur != t {
            // SAFETY: openblas_set_num_threads takes any positive count.
            unsafe { set(t) };
            *cur = t;
        }
    }
}

/// OpenBLAS when this machine has it, for tests of the CBLAS path.
#[cfg(test)]
pub(crate) fn openblas() -> Option<&'static Blas> {
    static B: OnceLock<Option<Blas>> = OnceLock::new();
    B.get_or_init(|| load(&["libopenblas.so.0"])).as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cblas_operands_from_strides() {
        // Row-major m x k: no transpose, lda = row stride.
        assert_eq!(operand(4, 6, 6, 1), Some((NO_TRANS, 6)));
        // A row stride past the columns (rows of a wider array).
        assert_eq!(operand(4, 6, 10, 1), Some((NO_TRANS, 10)));
        // Column-major (a transposed operand): transpose, lda = column stride.
        assert_eq!(operand(4, 6, 1, 4), Some((TRANS, 4)));
        // Vectors: the stride of a size-1 dimension does not matter.
        assert_eq!(operand(1, 6, 0, 1), Some((NO_TRANS, 6)));
        assert_eq!(operand(6, 1, 1, 0), Some((NO_TRANS, 1)));
        // Neither stride 1: not a CBLAS operand.
        assert_eq!(operand(4, 6, 12, 2), None);
        // A leading dimension smaller than the row: overlapping rows, refused.
        assert_eq!(operand(4, 6, 3, 1), None);
    }
}
