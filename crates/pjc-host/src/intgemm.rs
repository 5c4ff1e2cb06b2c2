//! Wrapping integer matrix products, the GEMM of integer convolutions
//! (`conv.rs`): `dst = a · b` with wrapping multiply-adds, exact modulo
//! 2^width, so wrapping the sums to the result's dtype gives the spec's
//! result (section 7: integer overflow wraps). Lanes are i32 when the result
//! is at most 32 bits wide (the low 32 bits of a wrapping sum depend only on
//! the low 32 bits of its terms) and i64 otherwise.
//!
//! On x86-64-v4 (AVX-512: i32 and i64 lanes) and v3 (AVX2: i32 lanes) a
//! tile of 4 rows by two vectors of columns stays in registers while the
//! kernel walks the contraction (intrinsics: left to itself the compiler
//! vectorises the contraction loop instead, at a tenth of the speed); the
//! baseline accumulates whole output rows, its column loop vectorised by the
//! compiler. The best level this CPU runs is chosen at run time (capped by
//! `PJC_CPU_LEVEL`), so an executable still runs on any x86-64-v2 CPU.

use crate::cpulevel::CpuLevel;
use std::sync::OnceLock;

/// Rows of the register tile.
const R: usize = 4;

/// An integer lane type of the products: i32 or i64, wrapping.
pub trait Lane: Copy + Default + Send + Sync + 'static {
    /// `dst[i·drs + j] = Σ_p a[i·ars + p] · b[p·brs + j]` (wrapping) for
    /// `i < m`, `j < n`, `p < k`, overwriting `dst`, on the calling thread.
    ///
    /// # Safety
    /// Every index named above must lie inside the allocations behind the
    /// pointers, and `dst`'s elements must not overlap `a`'s or `b`'s.
    #[allow(clippy::too_many_arguments)]
    unsafe fn matmul(m: usize, n: usize, k: usize, dst: *mut Self, drs: usize, a: *const Self, ars: usize, b: *const Self, brs: usize);
}

trait Mac: Copy + Default {
    fn mac(self, a: Self, b: Self) -> Self;
}
impl Mac for i32 {
    #[inline(always)]
    fn mac(self, a: i32, b: i32) -> i32 {
        self.wrapping_add(a.wrapping_mul(b))
    }
}
impl Mac for i64 {
    #[inline(always)]
    fn mac(self, a: i64, b: i64) -> i64 {
        self.wrapping_add(a.wrapping_mul(b))
    }
}

/// The columns `n0..n` of `rows` rows the plain way (what no whole tile
/// covers): each output row accumulates `a[r, p] · b[p, ..]` along its
/// columns (the inner loop runs over columns, so the compiler vectorises it).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn plain<T: Mac>(rows: usize, n0: usize, n: usize, k: usize, dst: *mut T, drs: usize, a: *const T, ars: usize, b: *const T, brs: usize) {
    if n0 >= n {
        return;
    }
    for r in 0..rows {
        let d = std::slice::from_raw_parts_mut(dst.add(r * drs + n0), n - n0);
        d.fill(T::default());
        for p in 0..k {
            let x = *a.add(r * ars + p);
            let w = std::slice::from_raw_parts(b.add(p * brs + n0), n - n0);
            for (o, &wv) in d.iter_mut().zip(w) {
                *o = o.mac(x, wv);
            }
        }
    }
}

/// x86 kernels: a tile of `RR` rows by two vectors of columns stays in
/// registers while the contraction is walked (a broadcast of the row's
/// element times a row of `b` per step); the columns no whole tile covers go
/// the plain way.
macro_rules! simd {
    ($name:ident, $t:ty, $feat:literal, $lanes:expr, $zero:ident, $load:ident, $store:ident, $set1:ident, $mul:ident, $add:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feat)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name(m: usize, n: usize, k: usize, dst: *mut $t, drs: usize, a: *const $t, ars: usize, b: *const $t, brs: usize) {
            use std::arch::x86_64::*;
            const L: usize = $lanes;
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn tile<const RR: usize>(k: usize, dst: *mut $t, drs: usize, a: *const $t, ars: usize, b: *const $t, brs: usize) {
                let mut acc = [[$zero(); 2]; RR];
                for p in 0..k {
                    let w0 = $load(b.add(p * brs) as *const _);
                    let w1 = $load(b.add(p * brs + L) as *const _);
                    for (r, acc) in acc.iter_mut().enumerate() {
                        let x = $set1(*a.add(r * ars + p) as _);
                        acc[0] = $add(acc[0], $mul(x, w0));
                        acc[1] = $add(acc[1], $mul(x, w1));
                    }
                }
                for (r, acc) in acc.iter().enumerate() {
                    $store(dst.add(r * drs) as *mut _, acc[0]);
                    $store(dst.add(r * drs + L) as *mut _, acc[1]);
                }
            }
            let full = n / (2 * L) * (2 * L);
            let mut i = 0;
            while i < m {
                let rows = R.min(m - i);
                let (d, x) = (dst.add(i * drs), a.add(i * ars));
                let mut j = 0;
                while j < full {
                    if rows == R {
                        tile::<R>(k, d.add(j), drs, x, ars, b.add(j), brs);
                    } else {
                        for r in 0..rows {
                            tile::<1>(k, d.add(r * drs + j), drs, x.add(r * ars), ars, b.add(j), brs);
                        }
                    }
                    j += 2 * L;
                }
                plain(rows, full, n, k, d, drs, x, ars, b, brs);
                i += rows;
            }
        }
    };
}
simd!(i32_v4, i32, "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma", 16, _mm512_setzero_si512, _mm512_loadu_si512, _mm512_storeu_si512, _mm512_set1_epi32, _mm512_mullo_epi32, _mm512_add_epi32);
simd!(i64_v4, i64, "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma", 8, _mm512_setzero_si512, _mm512_loadu_si512, _mm512_storeu_si512, _mm512_set1_epi64, _mm512_mullo_epi64, _mm512_add_epi64);
simd!(i32_v3, i32, "avx2,fma", 8, _mm256_setzero_si256, _mm256_loadu_si256, _mm256_storeu_si256, _mm256_set1_epi32, _mm256_mullo_epi32, _mm256_add_epi32);

/// The baseline (and i64 without AVX-512, which has no 64-bit vector
/// multiply): the plain way over all columns, in blocks of `R` rows.
#[allow(clippy::too_many_arguments)]
unsafe fn baseline<T: Mac>(m: usize, n: usize, k: usize, dst: *mut T, drs: usize, a: *const T, ars: usize, b: *const T, brs: usize) {
    plain(m, 0, n, k, dst, drs, a, ars, b, brs)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn i64_v3(m: usize, n: usize, k: usize, dst: *mut i64, drs: usize, a: *const i64, ars: usize, b: *const i64, brs: usize) {
    plain(m, 0, n, k, dst, drs, a, ars, b, brs)
}

/// The x86-64 level the kernels run at: this CPU's best, capped by
/// `PJC_CPU_LEVEL` as the runtime caps the generated kernels (an unknown
/// name is the runtime's error to report; here it caps nothing).
fn level() -> CpuLevel {
    static LEVEL: OnceLock<CpuLevel> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let best = crate::cpulevel::best().unwrap_or(CpuLevel::V2);
        let cap = std::env::var("PJC_CPU_LEVEL").ok().and_then(|v| CpuLevel::parse(&v)).unwrap_or(CpuLevel::V4);
        best.min(cap)
    })
}

macro_rules! lane {
    ($t:ty, $v4:ident, $v3:ident) => {
        impl Lane for $t {
            unsafe fn matmul(m: usize, n: usize, k: usize, dst: *mut $t, drs: usize, a: *const $t, ars: usize, b: *const $t, brs: usize) {
                match level() {
                    #[cfg(target_arch = "x86_64")]
                    CpuLevel::V4 => $v4(m, n, k, dst, drs, a, ars, b, brs),
                    #[cfg(target_arch = "x86_64")]
                    CpuLevel::V3 => $v3(m, n, k, dst, drs, a, ars, b, brs),
                    _ => baseline(m, n, k, dst, drs, a, ars, b, brs),
                }
            }
        }
    };
}
lane!(i32, i32_v4, i32_v3);
lane!(i64, i64_v4, i64_v3);

/// The `m × n` product of `a`'s rows (row stride `ars`, unit columns) and
/// `b`'s `k × n` columns (row stride `brs`), blocks of rows in parallel on
/// `threads` threads.
#[allow(clippy::too_many_arguments)]
pub fn product<T: Lane>(m: usize, n: usize, k: usize, a: &[T], ars: usize, b: &[T], brs: usize, threads: usize) -> Vec<T> {
    use rayon::prelude::*;
    let mut dst = vec![T::default(); m * n];
    if dst.is_empty() {
        return dst;
    }
    assert!(k == 0 || ((m - 1) * ars + k <= a.len() && (k - 1) * brs + n <= b.len()), "operand sizes");
    let mb = 64;
    // SAFETY: the assertion bounds every index; blocks write disjoint rows.
    let run = |(bi, out): (usize, &mut [T])| unsafe { T::matmul(out.len() / n, n, k, out.as_mut_ptr(), n, a.as_ptr().add(bi * mb * ars), ars, b.as_ptr(), brs) };
    match crate::pool::pool(threads).filter(|_| threads > 1 && m > mb && m * n * k >= 1 << 15) {
        Some(p) => p.install(|| dst.par_chunks_mut(mb * n).enumerate().for_each(run)),
        None => dst.chunks_mut(mb * n).enumerate().for_each(run),
    }
    dst
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(m: usize, n: usize, k: usize, a: &[i64], ars: usize, b: &[i64], brs: usize) -> Vec<i64> {
        let mut d = vec![0i64; m * n];
        for i in 0..m {
            for j in 0..n {
                for p in 0..k {
                    d[i * n + j] = d[i * n + j].wrapping_add(a[i * ars + p].wrapping_mul(b[p * brs + j]));
                }
            }
        }
        d
    }

    #[test]
    fn tiles_and_tails_wrap_like_the_plain_sum() {
        let mut seed = 5u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed as i64
        };
        // Sizes around the tile edges, row strides wider than the rows.
        for (m, n, k) in [(1, 1, 1), (3, 31, 5), (4, 32, 7), (9, 33, 17), (70, 65, 3), (5, 0, 3), (5, 4, 0)] {
            let (ars, brs) = (k + 3, n + 2);
            let a: Vec<i64> = (0..m * ars).map(|_| next()).collect();
            let b: Vec<i64> = (0..k.max(1) * brs).map(|_| next()).collect();
            let want = naive(m, n, k, &a, ars, &b, brs);
            assert_eq!(product(m, n, k, &a, ars, &b, brs, 2), want, "i64 {m}x{n}x{k}");
            let (a32, b32): (Vec<i32>, Vec<i32>) = (a.iter().map(|&x| x as i32).collect(), b.iter().map(|&x| x as i32).collect());
            let got: Vec<i64> = product(m, n, k, &a32, ars, &b32, brs, 1).into_iter().map(|x| x as i64).collect();
            let want32: Vec<i64> = want.iter().map(|&x| x as i32 as i64).collect();
            assert_eq!(got, want32, "i32 {m}x{n}x{k}");
        }
    }
}
#[cfg(test)]
mod speed {
    #[test]
    #[ignore]
    fn intgemm_speed() {
        let n = 512;
        let a: Vec<i32> = (0..n * n).map(|i| (i % 17) as i32 - 8).collect();
        for threads in [1, 2] {
            let t0 = std::time::Instant::now();
            let r = super::product(n, n, n, &a, n, &a, n, threads);
            let dt = t0.elapsed().as_secs_f64();
            eprintln!("i32 512^3 on {threads}: {:.1} ms {:.1} Gop/s {}", dt * 1e3, 2.0 * (n * n * n) as f64 / dt / 1e9, r[7]);
        }
    }
}
