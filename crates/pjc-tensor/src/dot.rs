//! `dot_general` (spec sections 7 and 11): the reference batched contraction,
//! plus the index helpers (`affine_index`, `transpose_index`) and the
//! multiply-accumulate trait that `convolution` reuses.
//!
//! Strategy: both operands are permuted into canonical row-major arrays,
//! lhs as [batch, M, K] and rhs as [batch, K, N], widened to one accumulation
//! type (f64 for every float dtype, i128 for integers, bool for pred), then
//! multiplied with an i-k-j loop over contiguous rows. The [batch, M, N] result
//! is already in the spec's result order (batch dims, lhs free dims, rhs free
//! dims) and is rounded or wrapped once to the result dtype. For one output
//! element the products are summed in increasing canonical k order.

use crate::tensor::invalid;
use crate::{strides, Buf, Lanes, Tensor, TensorError};
use pjc_dialects::DType;

/// For every element of `shape` in row-major order, `sum_d idx[d] * coef[d]`.
/// With `coef` = the source strides of permuted dims this is a transpose's
/// gather map; with zeros for some dims it maps elements to a reduction's output.
pub(crate) fn affine_index(shape: &[usize], coef: &[usize]) -> Vec<usize> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    let rank = shape.len();
    let mut idx = vec![0usize; rank];
    let mut cur = 0usize;
    for _ in 0..n {
        out.push(cur);
        let mut d = rank;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            cur += coef[d];
            if idx[d] < shape[d] {
                break;
            }
            cur -= coef[d] * shape[d];
            idx[d] = 0;
        }
    }
    out
}

/// Gather map of a transpose: result dim i is dim `perm[i]` of `shape`; entry j
/// is the source linear index of result element j.
pub(crate) fn transpose_index(shape: &[usize], perm: &[usize]) -> Vec<usize> {
    let st = strides(shape);
    let new_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let coef: Vec<usize> = perm.iter().map(|&p| st[p]).collect();
    affine_index(&new_shape, &coef)
}

pub(crate) fn gather<T: Copy>(v: &[T], idx: &[usize]) -> Vec<T> {
    idx.iter().map(|&i| v[i]).collect()
}

/// Multiply-accumulate in one accumulation type: f64 (floats), i128 with
/// wrapping (integers: the same result mod 2^w), bool (pred: or of ands).
pub(crate) trait Mac: Copy {
    const ZERO: Self;
    fn mac(acc: Self, a: Self, b: Self) -> Self;
}

impl Mac for f64 {
    const ZERO: f64 = 0.0;
    #[inline(always)]
    fn mac(acc: f64, a: f64, b: f64) -> f64 {
        acc + a * b
    }
}

impl Mac for i128 {
    const ZERO: i128 = 0;
    #[inline(always)]
    fn mac(acc: i128, a: i128, b: i128) -> i128 {
        acc.wrapping_add(a.wrapping_mul(b))
    }
}

impl Mac for bool {
    const ZERO: bool = false;
    #[inline(always)]
    fn mac(acc: bool, a: bool, b: bool) -> bool {
        acc || (a && b)
    }
}

/// The result dtype must be of the operands' class (float, integer or pred);
/// it may be wider or narrower: it is where the single rounding happens.
pub(crate) fn check_result_class(op: &str, operand: DType, out: DType) -> Result<(), TensorError> {
    let same = (operand.is_float() && out.is_float())
        || (operand.is_int() && out.is_int())
        || (operand.is_pred() && out.is_pred());
    if same {
        Ok(())
    } else {
        invalid(format!("{op}: result dtype {out} does not match the class of operand dtype {operand}"))
    }
}

/// c[b, i, j] = sum_k a[b, i, k] * b[b, k, j], with a: [nb, m, k], b: [nb, k, n].
fn matmul<T: Mac>(a: &[T], b: &[T], nb: usize, m: usize, k: usize, n: usize) -> Vec<T> {
    let mut c = vec![T::ZERO; nb * m * n];
    if n == 0 {
        return c;
    }
    for bi in 0..nb {
        let bmat = &b[bi * k * n..(bi + 1) * k * n];
        for i in 0..m {
            let arow = &a[(bi * m + i) * k..(bi * m + i + 1) * k];
            let crow = &mut c[(bi * m + i) * n..(bi * m + i + 1) * n];
            for (&av, brow) in arow.iter().zip(bmat.chunks_exact(n)) {
                for (cv, &bv) in crow.iter_mut().zip(brow) {
                    *cv = T::mac(*cv, av, bv);
                }
            }
        }
    }
    c
}

/// `dot_general %a, %b {lhs_batch, rhs_batch, lhs_contract, rhs_contract}`.
/// Result dims: batch dims (in `lhs_batch` order), then lhs free dims, then rhs
/// free dims, each in increasing order. Operands share one dtype; `out` is of
/// the same class and may be wider (bf16 × bf16 → f32). Floats accumulate in
/// f64 and round once; integers accumulate in i128 and wrap once to `out`.
pub fn dot_general(
    a: &Tensor,
    b: &Tensor,
    lhs_batch: &[usize],
    rhs_batch: &[usize],
    lhs_contract: &[usize],
    rhs_contract: &[usize],
    out: DType,
) -> Result<Tensor, TensorError> {
    const OP: &str = "dot_general";
    if a.dtype() != b.dtype() {
        return invalid(format!("{OP}: operand dtypes differ ({} and {})", a.dtype(), b.dtype()));
    }
    check_result_class(OP, a.dtype(), out)?;
    if lhs_batch.len() != rhs_batch.len() {
        return invalid(format!(
            "{OP}: lhs_batch has {} dims but rhs_batch has {}",
            lhs_batch.len(),
            rhs_batch.len()
        ));
    }
    if lhs_contract.len() != rhs_contract.len() {
        return invalid(format!(
            "{OP}: lhs_contract has {} dims but rhs_contract has {}",
            lhs_contract.len(),
            rhs_contract.len()
        ));
    }
    let lhs_free = free_dims("lhs", a, lhs_batch, lhs_contract)?;
    let rhs_free = free_dims("rhs", b, rhs_batch, rhs_contract)?;
    for (what, l, r) in [("batch", lhs_batch, rhs_batch), ("contracting", lhs_contract, rhs_contract)] {
        for (&i, &j) in l.iter().zip(r) {
            if a.shape[i] != b.shape[j] {
                return invalid(format!(
                    "{OP}: {what} dimension {i} of lhs has size {} but dimension {j} of rhs has size {}",
                    a.shape[i], b.shape[j]
                ));
            }
        }
    }
    let size = |t: &Tensor, dims: &[usize]| dims.iter().map(|&d| t.shape[d]).product::<usize>();
    let (nb, m, k, n) = (size(a, lhs_batch), size(a, &lhs_free), size(a, lhs_contract), size(b, &rhs_free));
    let perm_a: Vec<usize> = [lhs_batch, &lhs_free, lhs_contract].concat();
    let perm_b: Vec<usize> = [rhs_batch, rhs_contract, &rhs_free].concat();
    let ia = transpose_index(&a.shape, &perm_a);
    let ib = transpose_index(&b.shape, &perm_b);
    let lanes = match (a.data.lanes(), b.data.lanes()) {
        (Lanes::F(x), Lanes::F(y)) => Lanes::F(matmul(&gather(&x, &ia), &gather(&y, &ib), nb, m, k, n)),
        (Lanes::I(x), Lanes::I(y)) => Lanes::I(matmul(&gather(&x, &ia), &gather(&y, &ib), nb, m, k, n)),
        (Lanes::P(x), Lanes::P(y)) => Lanes::P(matmul(&gather(&x, &ia), &gather(&y, &ib), nb, m, k, n)),
        _ => return invalid(format!("{OP}: operand dtypes differ")),
    };
    let mut shape: Vec<usize> = lhs_batch.iter().map(|&d| a.shape[d]).collect();
    shape.extend(lhs_free.iter().map(|&d| a.shape[d]));
    shape.extend(rhs_free.iter().map(|&d| b.shape[d]));
    Ok(Tensor::new(shape, Buf::from_lanes(out, lanes)))
}

/// Dims of `t` that are neither batch nor contracting, after checking that those
/// are in range and distinct.
fn free_dims(side: &str, t: &Tensor, batch: &[usize], contract: &[usize]) -> Result<Vec<usize>, TensorError> {
    let rank = t.rank();
    let mut used = vec![false; rank];
    for &d in batch.iter().chain(contract) {
        if d >= rank {
            return invalid(format!("dot_general: {side} dimension {d} is out of range for rank {rank}"));
        }
        if used[d] {
            return invalid(format!("dot_general: {side} dimension {d} is listed twice in batch/contracting dims"));
        }
        used[d] = true;
    }
    Ok((0..rank).filter(|&d| !used[d]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;

    fn t(shape: &[usize], data: Buf) -> Tensor {
        Tensor::new(shape.to_vec(), data)
    }

    #[test]
    fn plain_matmul_by_hand() {
        let a = t(&[2, 3], Buf::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
        let b = t(&[3, 2], Buf::F32(vec![7.0, 8.0, 9.0, 10.0, 11.0, 12.0]));
        let r = dot_general(&a, &b, &[], &[], &[1], &[0], DType::F32).unwrap();
        assert_eq!(r.shape, vec![2, 2]);
        assert_eq!(r.data, Buf::F32(vec![58.0, 64.0, 139.0, 154.0]));
        // Contracting lhs dim 0 with rhs dim 1: a^T b^T = (b a)^T.
        let r = dot_general(&a, &b, &[], &[], &[0], &[1], DType::F32).unwrap();
        assert_eq!(r.shape, vec![3, 3]);
        // r[i][j] = sum_k a[k][i] * b[j][k]
        assert_eq!(r.data, Buf::F32(vec![39.0, 49.0, 59.0, 54.0, 68.0, 82.0, 69.0, 87.0, 105.0]));
        // Outer product (nothing contracted).
        let u = t(&[2], Buf::I32(vec![2, 3]));
        let v = t(&[3], Buf::I32(vec![1, 10, 100]));
        let r = dot_general(&u, &v, &[], &[], &[], &[], DType::I32).unwrap();
        assert_eq!(r.shape, vec![2, 3]);
        assert_eq!(r.data, Buf::I32(vec![2, 20, 200, 3, 30, 300]));
    }

    fn lhs_val(k1: usize, bb: usize, m: usize, k2: usize) -> i128 {
        ((k1 * 7 + bb * 5 + m * 3 + k2 * 11) % 13) as i128 - 6
    }
    fn rhs_val(k2: usize, bb: usize, n: usize, k1: usize) -> i128 {
        ((k2 * 5 + bb * 3 + n * 7 + k1 * 2) % 11) as i128 - 5
    }

    /// lhs [K1=2, B=3, M=4, K2=5], rhs [K2=5, B=3, N=6, K1=2]; batch (1,1),
    /// contract lhs [0,3] with rhs [3,0]; result [B, M, N].
    fn batched_case(d: DType) -> (Tensor, Tensor, Vec<i128>) {
        let mut av = vec![];
        for k1 in 0..2 {
            for bb in 0..3 {
                for m in 0..4 {
                    for k2 in 0..5 {
                        av.push(lhs_val(k1, bb, m, k2));
                    }
                }
            }
        }
        let mut bv = vec![];
        for k2 in 0..5 {
            for bb in 0..3 {
                for n in 0..6 {
                    for k1 in 0..2 {
                        bv.push(rhs_val(k2, bb, n, k1));
                    }
                }
            }
        }
        let mk = |shape: &[usize], v: &[i128]| {
            let data = if d.is_float() {
                Buf::from_f64(d, &v.iter().map(|&x| x as f64).collect::<Vec<_>>())
            } else {
                Buf::from_i128(d, v)
            };
            t(shape, data)
        };
        let mut want = vec![];
        for bb in 0..3 {
            for m in 0..4 {
                for n in 0..6 {
                    let mut s = 0;
                    for k1 in 0..2 {
                        for k2 in 0..5 {
                            s += lhs_val(k1, bb, m, k2) * rhs_val(k2, bb, n, k1);
                        }
                    }
                    want.push(s);
                }
            }
        }
        (mk(&[2, 3, 4, 5], &av), mk(&[5, 3, 6, 2], &bv), want)
    }

    #[test]
    fn batch_and_two_contracting_dims_against_loops() {
        for d in [DType::F64, DType::F32, DType::BF16, DType::I32, DType::I64, DType::I8] {
            let (a, b, want) = batched_case(d);
            let r = dot_general(&a, &b, &[1], &[1], &[0, 3], &[3, 0], d).unwrap();
            assert_eq!(r.shape, vec![3, 4, 6]);
            let want_buf = if d.is_float() {
                Buf::from_f64(d, &want.iter().map(|&x| x as f64).collect::<Vec<_>>())
            } else {
                Buf::from_i128(d, &want)
            };
            assert_eq!(r.data, want_buf, "{d}");
        }
    }

    #[test]
    fn free_dims_keep_order_and_batch_order_follows_lhs() {
        // lhs [B1=2, M=3, B2=2], rhs [B2=2, N=2, B1=2]; lhs_batch [2,0], rhs_batch [0,2]:
        // result [B2, B1, M, N]; r[q][p][m][n] = a[p][m][q] * b[q][n][p].
        let av: Vec<f64> = (0..12).map(|x| x as f64).collect();
        let bv: Vec<f64> = (0..8).map(|x| (x * x) as f64).collect();
        let a = t(&[2, 3, 2], Buf::F64(av.clone()));
        let b = t(&[2, 2, 2], Buf::F64(bv.clone()));
        let r = dot_general(&a, &b, &[2, 0], &[0, 2], &[], &[], DType::F64).unwrap();
        assert_eq!(r.shape, vec![2, 2, 3, 2]);
        let mut want = vec![];
        for q in 0..2 {
            for p in 0..2 {
                for m in 0..3 {
                    for n in 0..2 {
                        want.push(av[p * 6 + m * 2 + q] * bv[q * 4 + n * 2 + p]);
                    }
                }
            }
        }
        assert_eq!(r.data, Buf::F64(want));
    }

    #[test]
    fn bf16_operands_f32_result_and_single_rounding() {
        // [1, 2^-8, 2^-8] . [1, 1, 1] = 1 + 2^-7 exactly in f32; rounding every
        // partial sum to bf16 would give 1.0.
        let e = 1.0 / 256.0;
        let a = t(&[3], Buf::from_f64(DType::BF16, &[1.0, e, e]));
        let b = t(&[3], Buf::from_f64(DType::BF16, &[1.0, 1.0, 1.0]));
        let r = dot_general(&a, &b, &[], &[], &[0], &[0], DType::F32).unwrap();
        assert_eq!(r.data, Buf::F32(vec![1.0 + 2.0 * e as f32]));
        let r = dot_general(&a, &b, &[], &[], &[0], &[0], DType::BF16).unwrap();
        assert_eq!(r.data, Buf::BF16(vec![bf16::from_f64(1.0 + 2.0 * e)]));
        // A wider int result: i8 x i8 accumulated exactly then wrapped to i32.
        let a = t(&[2], Buf::I8(vec![100, 100]));
        let r = dot_general(&a, &a, &[], &[], &[0], &[0], DType::I32).unwrap();
        assert_eq!(r.data, Buf::I32(vec![20000]));
        let r = dot_general(&a, &a, &[], &[], &[0], &[0], DType::I8).unwrap();
        assert_eq!(r.data, Buf::I8(vec![(20000i32 as u32 & 0xff) as u8 as i8]));
    }

    #[test]
    fn invalid_arguments_are_errors() {
        let a = t(&[2, 3], Buf::F32(vec![0.0; 6]));
        let b = t(&[3, 2], Buf::F32(vec![0.0; 6]));
        let c = t(&[3, 2], Buf::F64(vec![0.0; 6]));
        assert!(dot_general(&a, &c, &[], &[], &[1], &[0], DType::F32).is_err());
        assert!(dot_general(&a, &b, &[], &[], &[1], &[0], DType::I32).is_err());
        assert!(dot_general(&a, &b, &[], &[], &[0], &[0], DType::F32).is_err());
        assert!(dot_general(&a, &b, &[], &[], &[1, 1], &[0, 1], DType::F32).is_err());
        assert!(dot_general(&a, &b, &[], &[], &[2], &[0], DType::F32).is_err());
        assert!(dot_general(&a, &b, &[0], &[], &[1], &[0], DType::F32).is_err());
    }

    #[test]
    fn index_helpers() {
        assert_eq!(transpose_index(&[2, 3], &[1, 0]), vec![0, 3, 1, 4, 2, 5]);
        assert_eq!(affine_index(&[2, 2], &[0, 1]), vec![0, 1, 0, 1]);
        assert_eq!(affine_index(&[], &[]), vec![0]);
    }

    /// 512x512x512 f32 must stay well under 2 s at opt-level 1. Run with
    /// `cargo test -p pjc-tensor -- --ignored dot_general_speed`.
    #[test]
    #[ignore]
    fn dot_general_speed() {
        let n = 512;
        let v: Vec<f32> = (0..n * n).map(|i| (i % 17) as f32 - 8.0).collect();
        let a = t(&[n, n], Buf::F32(v.clone()));
        let b = t(&[n, n], Buf::F32(v));
        let start = std::time::Instant::now();
        let r = dot_general(&a, &b, &[], &[], &[1], &[0], DType::F32).unwrap();
        let dt = start.elapsed();
        eprintln!("512^3 f32 dot_general: {dt:?}");
        assert_eq!(r.shape, vec![n, n]);
        assert!(dt.as_secs_f64() < 2.0);
    }
}
