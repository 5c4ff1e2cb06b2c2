//! Elementwise combining of per-device tensors: how the interpreter simulates
//! the reduction in `all_reduce` and `reduce_scatter` (spec section 8) when it
//! runs every device of a mesh in one process.
//!
//! The parts are combined in the order given (group order), elementwise, with
//! the same rules as `reduce`: floats in f64 rounded once (the compiled program
//! may reduce bf16/f16 in the element type, which the tolerance allows),
//! integers in i128 wrapped once, pred with logic (sum/max = or, prod/min = and);
//! max/min propagate NaN and order -0.0 below +0.0.

use crate::reduce::Kind;
use crate::tensor::invalid;
use pjc_dialects::ReduceKind;
use crate::{Buf, Lanes, Tensor, TensorError};
use pjc_dialects::DType;

/// Elementwise `kind` (sum prod max min) of equally shaped tensors of one
/// dtype, folded left to right starting from the first part.
pub fn combine(kind: ReduceKind, parts: &[&Tensor]) -> Result<Tensor, TensorError> {
    const OP: &str = "combine";
    let k = kind.check(OP, &ReduceKind::COLLECTIVE)?;
    let Some(first) = parts.first() else {
        return invalid(format!("{OP}: no tensors to combine"));
    };
    let d = first.dtype();
    for (i, p) in parts.iter().enumerate() {
        if p.dtype() != d || p.shape != first.shape {
            return invalid(format!(
                "{OP}: part {i} is {}{:?} but part 0 is {d}{:?}",
                p.dtype(),
                p.shape,
                first.shape
            ));
        }
    }
    let mut acc = first.data.lanes();
    for p in &parts[1..] {
        match (&mut acc, p.data.lanes()) {
            (Lanes::F(a), Lanes::F(b)) => a.iter_mut().zip(b).for_each(|(x, y)| *x = k.f_apply(*x, y)),
            (Lanes::I(a), Lanes::I(b)) => a.iter_mut().zip(b).for_each(|(x, y)| *x = k.i_apply(*x, y)),
            (Lanes::P(a), Lanes::P(b)) => a.iter_mut().zip(b).for_each(|(x, y)| *x = k.p_apply(*x, y)),
            _ => return invalid(format!("{OP}: parts have different dtypes")),
        }
    }
    Ok(Tensor::new(first.shape.clone(), Buf::from_lanes(d, acc)))
}

/// [`combine`] of `n` equal pieces laid end to end in `recv` (little-endian
/// elements of `dtype`, as a collective receives them), written to `out` (one
/// piece's bytes): the same bits as [`combine`] of the pieces as tensors
/// (floats folded in f64 in piece order from the first, rounded once), without
/// building tensors or f64 copies of them: one pass over `recv`, block by
/// block. Only f32 and f64 take this path (false for other dtypes and kinds:
/// use [`combine`]). What the MPI runtime's all-reduce and reduce-scatter run.
pub fn combine_le_into(kind: ReduceKind, dtype: DType, recv: &[u8], n: usize, out: &mut [u8]) -> bool {
    let es = match dtype {
        DType::F32 => 4,
        DType::F64 => 8,
        _ => return false,
    };
    if n == 0 || recv.len() != n * out.len() || out.len() % es != 0 {
        return false;
    }
    match kind {
        ReduceKind::Sum => fold_le(dtype, recv, n, out, |a, b| a + b),
        ReduceKind::Prod => fold_le(dtype, recv, n, out, |a, b| a * b),
        ReduceKind::Max => fold_le(dtype, recv, n, out, crate::reduce::fmax),
        ReduceKind::Min => fold_le(dtype, recv, n, out, crate::reduce::fmin),
        _ => return false,
    }
    true
}

/// An element type the byte path folds: read from and written to its
/// little-endian bytes, through f64.
trait LeFloat {
    const SIZE: usize;
    fn load(b: &[u8]) -> f64;
    fn store(v: f64, b: &mut [u8]);
}

impl LeFloat for f32 {
    const SIZE: usize = 4;
    #[inline(always)]
    fn load(b: &[u8]) -> f64 {
        f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64
    }
    #[inline(always)]
    fn store(v: f64, b: &mut [u8]) {
        b.copy_from_slice(&(v as f32).to_le_bytes());
    }
}

impl LeFloat for f64 {
    const SIZE: usize = 8;
    #[inline(always)]
    fn load(b: &[u8]) -> f64 {
        f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }
    #[inline(always)]
    fn store(v: f64, b: &mut [u8]) {
        b.copy_from_slice(&v.to_le_bytes());
    }
}

fn fold_le(dtype: DType, recv: &[u8], n: usize, out: &mut [u8], f: impl Fn(f64, f64) -> f64 + Copy) {
    match dtype {
        DType::F32 => fold_as::<f32>(recv, n, out, f),
        _ => fold_as::<f64>(recv, n, out, f),
    }
}

fn fold_as<T: LeFloat>(recv: &[u8], n: usize, out: &mut [u8], f: impl Fn(f64, f64) -> f64) {
    const BLOCK: usize = 2048;
    let es = T::SIZE;
    let piece = out.len();
    let mut acc = [0f64; BLOCK];
    let elems = piece / es;
    let mut start = 0;
    while start < elems {
        let len = BLOCK.min(elems - start);
        let at = |k: usize| &recv[k * piece + start * es..k * piece + (start + len) * es];
        for (a, b) in acc[..len].iter_mut().zip(at(0).chunks_exact(es)) {
            *a = T::load(b);
        }
        for k in 1..n {
            for (a, b) in acc[..len].iter_mut().zip(at(k).chunks_exact(es)) {
                *a = f(*a, T::load(b));
            }
        }
        for (o, &a) in out[start * es..(start + len) * es].chunks_exact_mut(es).zip(&acc[..len]) {
            T::store(a, o);
        }
        start += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte path gives [`combine`]'s bits (NaNs as NaNs) for f32 and f64, every kind,
    /// over values with NaNs, signed zeros, infinities and wide exponent
    /// gaps (where folding in f64 then rounding once differs from f32 sums),
    /// at 1 to 5 pieces and lengths across the block size.
    #[test]
    fn the_byte_path_equals_combine_bit_for_bit() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for dtype in [DType::F32, DType::F64] {
            for n in 1..=5usize {
                for len in [1usize, 7, 2048, 2049, 5000] {
                    let parts: Vec<Tensor> = (0..n)
                        .map(|_| {
                            let v: Vec<f64> = (0..len)
                                .map(|_| match next() % 16 {
                                    0 => f64::NAN,
                                    1 => -0.0,
                                    2 => 0.0,
                                    3 => f64::INFINITY,
                                    4 => 1e30 * ((next() % 1000) as f64 - 500.0),
                                    5 => 1e-30 * ((next() % 1000) as f64 - 500.0),
                                    _ => ((next() % 2_000_001) as f64 - 1e6) / 997.0,
                                })
                                .collect();
                            Tensor::new(vec![len], Buf::from_f64(dtype, &v))
                        })
                        .collect();
                    let refs: Vec<&Tensor> = parts.iter().collect();
                    let recv: Vec<u8> = parts.iter().flat_map(|p| crate::buf_to_le_bytes(&p.data)).collect();
                    for kind in [ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min] {
                        let want = crate::buf_to_le_bytes(&combine(kind, &refs).unwrap().data);
                        let mut got = vec![0u8; want.len()];
                        assert!(combine_le_into(kind, dtype, &recv, n, &mut got));
                        // Bit for bit, except a NaN's sign and payload (LLVM
                        // may swap a commutative product's operands).
                        let es = dtype.size_bytes();
                        let value = |b: &[u8]| if es == 4 { f32::from_le_bytes(b.try_into().unwrap()) as f64 } else { f64::from_le_bytes(b.try_into().unwrap()) };
                        for (i, (g, w)) in got.chunks(es).zip(want.chunks(es)).enumerate() {
                            let same = g == w || (value(g).is_nan() && value(w).is_nan());
                            assert!(same, "{dtype} {kind:?} n={n} len={len} element {i}: {} against {}", value(g), value(w));
                        }
                    }
                }
            }
        }
        let mut out = [0u8; 2];
        assert!(!combine_le_into(ReduceKind::Sum, DType::BF16, &[0u8; 4], 2, &mut out));
    }

    fn t(shape: &[usize], data: Buf) -> Tensor {
        Tensor::new(shape.to_vec(), data)
    }

    #[test]
    fn sum_prod_max_min_floats() {
        let a = t(&[2, 2], Buf::F32(vec![1.0, -2.0, f32::NAN, -0.0]));
        let b = t(&[2, 2], Buf::F32(vec![3.0, 5.0, 1.0, 0.0]));
        let c = t(&[2, 2], Buf::F32(vec![-1.0, 0.5, 2.0, -0.0]));
        let r = combine(ReduceKind::Sum, &[&a, &b, &c]).unwrap();
        let Buf::F32(v) = r.data else { panic!() };
        assert_eq!((v[0], v[1], v[3]), (3.0, 3.5, 0.0));
        assert!(v[2].is_nan());
        assert_eq!(combine(ReduceKind::Prod, &[&a, &b]).unwrap().data.get(1), crate::Scalar::Float(-10.0));
        let Buf::F32(v) = combine(ReduceKind::Max, &[&a, &b, &c]).unwrap().data else { panic!() };
        assert_eq!((v[0], v[1]), (3.0, 5.0));
        assert!(v[2].is_nan());
        assert!(v[3] == 0.0 && v[3].is_sign_positive());
        let Buf::F32(v) = combine(ReduceKind::Min, &[&a, &b, &c]).unwrap().data else { panic!() };
        assert_eq!((v[0], v[1]), (-1.0, -2.0));
        assert!(v[2].is_nan());
        assert!(v[3] == 0.0 && v[3].is_sign_negative());
    }

    #[test]
    fn rounds_once_and_wraps_once() {
        let e = 1.0 / 256.0;
        let a = t(&[1], Buf::from_f64(DType::BF16, &[1.0]));
        let b = t(&[1], Buf::from_f64(DType::BF16, &[e]));
        let r = combine(ReduceKind::Sum, &[&a, &b, &b]).unwrap();
        assert_eq!(r.data, Buf::from_f64(DType::BF16, &[1.0 + 2.0 * e]));
        let a = t(&[2], Buf::U8(vec![200, 3]));
        let b = t(&[2], Buf::U8(vec![100, 200]));
        assert_eq!(combine(ReduceKind::Sum, &[&a, &b]).unwrap().data, Buf::U8(vec![44, 203]));
        assert_eq!(combine(ReduceKind::Prod, &[&a, &b]).unwrap().data, Buf::U8(vec![(20000u32 % 256) as u8, (600u32 % 256) as u8]));
        assert_eq!(combine(ReduceKind::Max, &[&a, &b]).unwrap().data, Buf::U8(vec![200, 200]));
        let p = t(&[2], Buf::Pred(vec![true, false]));
        let q = t(&[2], Buf::Pred(vec![true, true]));
        assert_eq!(combine(ReduceKind::Sum, &[&p, &q]).unwrap().data, Buf::Pred(vec![true, true]));
        assert_eq!(combine(ReduceKind::Min, &[&p, &q]).unwrap().data, Buf::Pred(vec![true, false]));
        // One part: itself.
        assert_eq!(combine(ReduceKind::Sum, &[&a]).unwrap(), a);
    }

    #[test]
    fn errors() {
        let a = t(&[2], Buf::F32(vec![0.0; 2]));
        let b = t(&[3], Buf::F32(vec![0.0; 3]));
        let c = t(&[2], Buf::F64(vec![0.0; 2]));
        assert!(combine(ReduceKind::Sum, &[]).is_err());
        assert!(combine(ReduceKind::Sum, &[&a, &b]).is_err());
        assert!(combine(ReduceKind::Sum, &[&a, &c]).is_err());
        assert!(combine(ReduceKind::And, &[&a, &a]).is_err());
    }
}
