//! bf16 products on Intel AMX tiles (`tdpbf16ps`: bf16 pairs multiplied and
//! summed into f32 accumulators, spec section 11's f32 accumulation), for
//! CPUs that have AMX-BF16 and an OS that grants the tile state; everything
//! else (and `PJC_AMX=0`, or `PJC_CPU_LEVEL` below x86-64-v4) takes the f32
//! GEMM after a conversion. Nothing is compiled for AMX: the instructions are
//! inline assembly behind a run-time check, so executables run anywhere.
//!
//! The operands are packed once per product: the lhs in blocks of 16 rows by
//! the contraction (rounded up to 32, zero-padded), the rhs in the pair-
//! interleaved ("VNNI") order the tile multiply reads, 16 columns by 32
//! contraction elements per tile. Each 32×32 block of the f32 result is four
//! accumulator tiles, updated over the contraction in steps of 32 from two
//! lhs and two rhs tiles; blocks of 128 rows run in parallel.
//!
//! The tile multiply treats subnormal inputs as zero and flushes subnormal
//! results, which the spec forbids. Packing therefore checks that every
//! nonzero operand element has a magnitude of at least 2^-56: then every
//! product, and every sum of products rounded to f32, is a multiple of
//! 2^-126 (the smallest normal f32) — no subnormal arises and the flushes do
//! nothing. Products with smaller elements take the f32 path.

use half::bf16;
use std::sync::OnceLock;

/// Contraction elements per tile (64 bytes of bf16 per tile row).
const KT: usize = 32;
/// Rows of the result per parallel task.
const ROWS_PER_TASK: usize = 256;
/// The smallest exponent field (biased) of a nonzero operand element the
/// tiles take: 2^(71-127) = 2^-56.
const MIN_EXP: u16 = 71;

/// Whether this process may run AMX-BF16 tile code (looked up once).
pub fn available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        if std::env::var("PJC_AMX").is_ok_and(|v| v == "0") {
            return false;
        }
        let cap = std::env::var("PJC_CPU_LEVEL").ok().and_then(|v| crate::cpulevel::CpuLevel::parse(&v));
        if cap.is_some_and(|c| c < crate::cpulevel::CpuLevel::V4) {
            return false;
        }
        detect()
    })
}

#[cfg(target_arch = "x86_64")]
fn detect() -> bool {
    use std::arch::x86_64::__cpuid_count;
    let leaf7 = __cpuid_count(7, 0);
    let (tile, bf16) = (leaf7.edx & (1 << 24) != 0, leaf7.edx & (1 << 22) != 0);
    if !(tile && bf16 && std::is_x86_feature_detected!("avx512f")) {
        return false;
    }
    // Linux hands out the tile data state only on request
    // (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)); it fails where the
    // kernel or the machine does not support it.
    let ret: i64;
    // SAFETY: the arch_prctl system call reads its two integer arguments only.
    unsafe {
        std::arch::asm!("syscall", inlateout("rax") 158i64 => ret, in("rdi") 0x1023i64, in("rsi") 18i64, lateout("rcx") _, lateout("r11") _, options(nostack));
    }
    ret == 0
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> bool {
    false
}

/// The tile configuration: palette 1, eight tiles of 16 rows by 64 bytes.
#[repr(C, align(64))]
struct Config([u8; 64]);

impl Config {
    fn new() -> Config {
        let mut c = [0u8; 64];
        c[0] = 1;
        for t in 0..8 {
            c[16 + 2 * t] = 64; // bytes per row (u16, little-endian)
            c[48 + t] = 16; // rows
        }
        Config(c)
    }
}

/// Packed operands of one product.
struct Packed {
    /// kpad: the contraction rounded up to [`KT`].
    kp: usize,
    /// The lhs: `mp` rows (m rounded up to 32) of `kp` elements; empty
    /// when the tiles read the operand in place (its rows contiguous, whole
    /// tiles of rows and of the contraction).
    a: Vec<u16>,
    /// The rhs: per block of 16 columns (n rounded up to 32), `kp / 2` pairs
    /// of 16 columns × 2 elements.
    b: Vec<u16>,
}

/// bf16 elements as their bits.
fn bits(v: &[bf16]) -> &[u16] {
    // SAFETY: bf16 is a transparent u16.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u16, v.len()) }
}

static SPARE: std::sync::Mutex<Vec<Vec<u16>>> = std::sync::Mutex::new(Vec::new());

/// A buffer of `len` elements (contents unspecified), from [`keep`]'s spares
/// when one is large enough.
fn spare(len: usize) -> Vec<u16> {
    let mut s = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    match s.iter().position(|v| v.capacity() >= len) {
        Some(i) => {
            let mut v = s.swap_remove(i);
            v.resize(len, 0);
            v.truncate(len);
            v
        }
        None => vec![0; len],
    }
}

/// Returns a packing buffer for later products (at most four are kept).
fn keep(v: Vec<u16>) {
    let mut s = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    if s.len() < 4 {
        s.push(v);
    }
}

/// Packs both operands, or `None` when an element is too small for the
/// tiles (see the module doc).
#[allow(clippy::too_many_arguments)]
fn pack(m: usize, n: usize, k: usize, a: &[bf16], ars: usize, acs: usize, b: &[bf16], brs: usize, bcs: usize, threads: usize) -> Option<Packed> {
    use rayon::prelude::*;
    let (mp, np, kp) = (m.next_multiple_of(32), n.next_multiple_of(32), k.next_multiple_of(KT));
    let tiny = |x: bf16| {
        let v = x.to_bits();
        v & 0x7fff != 0 && (v >> 7) & 0xff < MIN_EXP
    };
    let direct = acs == 1 && mp == m && kp == k;
    // Buffers kept from earlier products: fresh pages cost more to fault in
    // than the packing itself. Padding is written explicitly below.
    let (mut pa, mut pb) = (if direct { Vec::new() } else { spare(mp * kp) }, spare(np * kp));
    // In place: only the check, in blocks of rows.
    let rows_a = |r0: usize| -> bool { (r0..m.min(r0 + 64)).all(|i| !tiny_in(bits(&a[i * ars..i * ars + k]))) };
    let row_a = |(i, row): (usize, &mut [u16])| -> bool {
        if i >= m {
            row.fill(0);
            return true;
        }
        row[k..].fill(0);
        if acs == 1 {
            let src = bits(&a[i * ars..i * ars + k]);
            row[..k].copy_from_slice(src);
            return !tiny_in(src);
        }
        let mut ok = true;
        for (p, o) in row[..k].iter_mut().enumerate() {
            let x = a[i * ars + p * acs];
            ok &= !tiny(x);
            *o = x.to_bits();
        }
        ok
    };
    // Blocks of 16 columns, `BB` at a time: pairs (2q, 2q + 1) of the
    // contraction, each as 16 columns × 2 elements.
    const BB: usize = 8;
    let blocks_b = |(jc, blk): (usize, &mut [u16])| -> bool {
        let j0 = jc * BB * 16;
        let cols = (BB * 16).min(n.saturating_sub(j0));
        if cols == 0 {
            blk.fill(0);
            return true;
        }
        if cols < BB * 16 || k < kp {
            blk.fill(0);
        }
        if bcs == 1 {
            // Rows of the operand in place: read each row's run of columns
            // once and interleave it with the next row's.
            let mut t = false;
            let row = |p: usize| -> &[u16] { bits(&b[p * brs + j0..p * brs + j0 + cols]) };
            for q in 0..k.div_ceil(2) {
                let r0 = row(2 * q);
                let r1 = if 2 * q + 1 < k { Some(row(2 * q + 1)) } else { None };
                t |= tiny_in(r0) | r1.is_some_and(tiny_in);
                for jb in 0..cols.div_ceil(16) {
                    let w = 16.min(cols - jb * 16);
                    let out = &mut blk[jb * 16 * kp + q * 32..][..32];
                    if let (16, Some(r1)) = (w, r1) {
                        // A whole block: fixed widths, which the compiler
                        // turns into vector unpacks.
                        let (x0, x1): (&[u16; 16], &[u16; 16]) = (r0[jb * 16..][..16].try_into().unwrap(), r1[jb * 16..][..16].try_into().unwrap());
                        let out: &mut [u16; 32] = out.try_into().unwrap();
                        for j in 0..16 {
                            out[2 * j] = x0[j];
                            out[2 * j + 1] = x1[j];
                        }
                        continue;
                    }
                    for j in 0..w {
                        out[2 * j] = r0[jb * 16 + j];
                    }
                    if let Some(r1) = r1 {
                        for j in 0..w {
                            out[2 * j + 1] = r1[jb * 16 + j];
                        }
                    }
                }
            }
            return !t;
        }
        let mut ok = true;
        for j in 0..cols {
            let (jb, jj) = (j / 16, j % 16);
            for p in 0..k {
                let x = b[p * brs + (j0 + j) * bcs];
                ok &= !tiny(x);
                blk[jb * 16 * kp + (p / 2) * 32 + jj * 2 + p % 2] = x.to_bits();
            }
        }
        ok
    };
    let ok = match crate::pool::pool(threads).filter(|_| threads > 1) {
        Some(pool) => pool.install(|| {
            let oa = if direct {
                (0..m.div_ceil(64)).into_par_iter().map(|b| rows_a(b * 64)).reduce(|| true, |x, y| x && y)
            } else {
                pa.par_chunks_mut(kp).enumerate().map(row_a).reduce(|| true, |x, y| x && y)
            };
            let ob = pb.par_chunks_mut(BB * 16 * kp).enumerate().map(blocks_b).reduce(|| true, |x, y| x && y);
            oa && ob
        }),
        None => {
            let oa = if direct { (0..m.div_ceil(64)).all(|b| rows_a(b * 64)) } else { pa.chunks_mut(kp).enumerate().map(row_a).fold(true, |x, y| x && y) };
            let ob = pb.chunks_mut(BB * 16 * kp).enumerate().map(blocks_b).fold(true, |x, y| x && y);
            oa && ob
        }
    };
    if !ok {
        if !pa.is_empty() {
            keep(pa);
        }
        keep(pb);
        return None;
    }
    Some(Packed { kp, a: pa, b: pb })
}

/// One 32×32 block of the padded result at `c` (row stride `cs` bytes) from
/// the packed lhs rows at `a` (row stride `ars` bytes) and the two packed rhs
/// column blocks at `b0`, `b1`, over `steps` steps of [`KT`].
///
/// # Safety
/// AMX is [`available`], the tile configuration is loaded on this thread,
/// and every pointer addresses what the strides and `steps` reach.
#[cfg(target_arch = "x86_64")]
unsafe fn block(c: *mut f32, cs: usize, a: *const u16, ars: usize, b0: *const u16, b1: *const u16, steps: usize) {
    use std::arch::asm;
    let a1 = a.add(16 * ars / 2);
    asm!("tilezero tmm0", "tilezero tmm1", "tilezero tmm2", "tilezero tmm3", options(nostack));
    for s in 0..steps {
        let (x0, x1) = (a.add(s * KT), a1.add(s * KT));
        let (y0, y1) = (b0.add(s * KT * 16), b1.add(s * KT * 16));
        asm!(
            "tileloadd tmm4, [{x0} + {ars}*1]",
            "tileloadd tmm5, [{x1} + {ars}*1]",
            "tileloadd tmm6, [{y0} + {bs}*1]",
            "tileloadd tmm7, [{y1} + {bs}*1]",
            "tdpbf16ps tmm0, tmm4, tmm6",
            "tdpbf16ps tmm1, tmm4, tmm7",
            "tdpbf16ps tmm2, tmm5, tmm6",
            "tdpbf16ps tmm3, tmm5, tmm7",
            x0 = in(reg) x0,
            x1 = in(reg) x1,
            y0 = in(reg) y0,
            y1 = in(reg) y1,
            ars = in(reg) ars,
            bs = in(reg) 64usize,
            options(nostack, readonly),
        );
    }
    let c1 = c.add(16 * cs / 4);
    asm!(
        "tilestored [{c0} + {cs}*1], tmm0",
        "tilestored [{c0b} + {cs}*1], tmm1",
        "tilestored [{c1} + {cs}*1], tmm2",
        "tilestored [{c1b} + {cs}*1], tmm3",
        c0 = in(reg) c,
        c0b = in(reg) c.add(16),
        c1 = in(reg) c1,
        c1b = in(reg) c1.add(16),
        cs = in(reg) cs,
        options(nostack),
    );
}

/// Whether the tiles take every element of `v` (none nonzero below 2^-56).
pub fn fits(v: &[bf16]) -> bool {
    v.chunks(1 << 16).all(|c| !tiny_in(bits(c)))
}

/// Whether a run of elements holds one too small for the tiles: 0 < |x| <
/// 2^-56 ⇔ 0 < x & 0x7fff < MIN_EXP << 7, one unsigned comparison after
/// subtracting 1, in a minimum the compiler vectorises.
fn tiny_in(v: &[u16]) -> bool {
    v.iter().fold(u16::MAX, |t, &x| t.min((x & 0x7fff).wrapping_sub(1))) < (MIN_EXP << 7) - 1
}

/// `out` (m×n f32, row stride `ors`) = a (m×k, strides `ars`, `acs`) · b
/// (k×n, strides `brs`, `bcs`), on AMX tiles, on `threads` threads. `false`
/// (and `out` unspecified) when AMX is not [`available`] or an operand
/// element is too small for the tiles; the caller then computes the product
/// otherwise.
#[allow(clippy::too_many_arguments)]
pub fn bf16_product(m: usize, n: usize, k: usize, a: &[bf16], ars: usize, acs: usize, b: &[bf16], brs: usize, bcs: usize, out: &mut [f32], ors: usize, threads: usize) -> bool {
    if !available() || m == 0 || n == 0 || k == 0 || out.len() < (m - 1) * ors + n || ors < n {
        return false;
    }
    assert!((m - 1) * ars + (k - 1) * acs < a.len() && (k - 1) * brs + (n - 1) * bcs < b.len(), "operand sizes");
    #[cfg(target_arch = "x86_64")]
    {
        use rayon::prelude::*;
        let t0 = std::time::Instant::now();
        let Some(p) = pack(m, n, k, a, ars, acs, b, brs, bcs, threads) else {
            return false;
        };
        let (mp, np, kp) = (m.next_multiple_of(32), n.next_multiple_of(32), p.kp);
        let direct = mp == m && np == n && ors == n;
        let mut padded = if direct { Vec::new() } else { vec![0f32; mp * np] };
        let c: &mut [f32] = if direct { &mut out[..m * n] } else { &mut padded };
        let cfg = Config::new();
        // The lhs rows the tiles read: packed, or the operand in place.
        let (ap, ars_bytes) = if p.a.is_empty() { (a.as_ptr() as *const u16, ars * 2) } else { (p.a.as_ptr(), kp * 2) };
        let ap = ap as usize;
        let tp = t0.elapsed();
        let task = |(t, rows): (usize, &mut [f32])| {
            let ap = ap as *const u16;
            // SAFETY: AMX is available (checked above); the configuration
            // describes the eight 16×64-byte tiles `block` uses; the packed
            // operands hold mp × kp and np × kp elements and `rows` is whole
            // rows of the padded result, so every tile load and store stays
            // inside them.
            unsafe {
                std::arch::asm!("ldtilecfg [{0}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly));
                // Each pair of rhs column blocks is read from memory once per
                // task and from cache for the task's other row blocks.
                for jb in 0..np / 32 {
                    for ib in 0..rows.len() / (32 * np) {
                        let i0 = t * ROWS_PER_TASK + ib * 32;
                        block(
                            rows.as_mut_ptr().add(ib * 32 * np + jb * 32),
                            np * 4,
                            ap.add(i0 * ars_bytes / 2),
                            ars_bytes,
                            p.b.as_ptr().add(2 * jb * 16 * kp),
                            p.b.as_ptr().add((2 * jb + 1) * 16 * kp),
                            kp / KT,
                        );
                    }
                }
                std::arch::asm!("tilerelease", options(nostack, nomem));
            }
        };
        match crate::pool::pool(threads).filter(|_| threads > 1 && mp > ROWS_PER_TASK) {
            Some(pool) => pool.install(|| c.par_chunks_mut(ROWS_PER_TASK * np).enumerate().for_each(task)),
            None => c.chunks_mut(ROWS_PER_TASK * np).enumerate().for_each(task),
        }
        if std::env::var("AMXT").is_ok() { eprintln!("amx pack {:?} total {:?}", tp, t0.elapsed()); }
        if !direct {
            for i in 0..m {
                out[i * ors..i * ors + n].copy_from_slice(&padded[i * np..i * np + n]);
            }
        }
        if !p.a.is_empty() {
            keep(p.a);
        }
        keep(p.b);
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(m: usize, n: usize, k: usize, a: &[bf16], ars: usize, acs: usize, b: &[bf16], brs: usize, bcs: usize) -> Vec<f64> {
        let mut d = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                for p in 0..k {
                    d[i * n + j] += a[i * ars + p * acs].to_f64() * b[p * brs + j * bcs].to_f64();
                }
            }
        }
        d
    }

    #[test]
    fn tiles_match_the_plain_sum_at_every_edge() {
        if !available() {
            eprintln!("no AMX-BF16 here: nothing to test");
            return;
        }
        let mut seed = 3u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            bf16::from_f32(((seed >> 40) % 17) as f32 * 0.5 - 4.0)
        };
        // Edges of every block size, both operand orders (rhs transposed).
        for (m, n, k, bt) in [(1, 1, 1, false), (32, 32, 32, false), (33, 17, 40, true), (130, 70, 65, false), (300, 64, 300, true), (16, 100, 7, false)] {
            let a: Vec<bf16> = (0..m * k).map(|_| next()).collect();
            let b: Vec<bf16> = (0..k * n).map(|_| next()).collect();
            let (brs, bcs) = if bt { (1, k) } else { (n, 1) };
            let want = naive(m, n, k, &a, k, 1, &b, brs, bcs);
            for threads in [1, 2] {
                let mut out = vec![f32::NAN; m * n];
                assert!(bf16_product(m, n, k, &a, k, 1, &b, brs, bcs, &mut out, n, threads));
                // Halves times halves, short sums: exact in f32.
                let got: Vec<f64> = out.iter().map(|&x| x as f64).collect();
                assert_eq!(got, want, "{m}x{n}x{k} rhs transposed {bt}, {threads} threads");
            }
        }
    }

    #[test]
    fn tiny_elements_are_refused() {
        if !available() {
            return;
        }
        let mut a = vec![bf16::from_f32(1.0); 4 * 4];
        let b = a.clone();
        let mut out = vec![0f32; 16];
        assert!(bf16_product(4, 4, 4, &a, 4, 1, &b, 4, 1, &mut out, 4, 1));
        assert_eq!(out, vec![4.0; 16]);
        // Infinities and NaN are IEEE's: inf · 0 and inf - inf give NaN.
        let (mut x, mut y) = (a.clone(), b.clone());
        x[0] = bf16::INFINITY; // row 0, p = 0
        y[1] = bf16::ZERO; // p = 0, column 1: inf · 0
        x[4 * 2] = bf16::NAN; // row 2
        x[4 * 3] = bf16::INFINITY; // row 3: inf · 1 + ... - inf
        x[4 * 3 + 1] = bf16::NEG_INFINITY;
        assert!(bf16_product(4, 4, 4, &x, 4, 1, &y, 4, 1, &mut out, 4, 1));
        assert!(out[1].is_nan() && out[0] == f32::INFINITY && out[2] == f32::INFINITY, "{out:?}");
        assert!(out[8..12].iter().all(|v| v.is_nan()) && out[12..16].iter().all(|v| v.is_nan()), "{out:?}");
        assert_eq!(&out[4..8], &[4.0, 3.0, 4.0, 4.0]);
        a[5] = bf16::from_f32(1e-20); // normal, but below 2^-56
        assert!(!bf16_product(4, 4, 4, &a, 4, 1, &b, 4, 1, &mut out, 4, 1));
        a[5] = bf16::from_bits(1); // subnormal
        assert!(!bf16_product(4, 4, 4, &a, 4, 1, &b, 4, 1, &mut out, 4, 1));
    }
}
