//! `reduce`, `argmax` and `argmin` (spec sections 7 and 11), plus the reduction
//! kinds that `reduce_window`, `select_and_scatter_add` and the collectives share.
//!
//! This is reference code: every float reduction accumulates in f64 and rounds
//! once to the result dtype (f16/bf16 through f32), integers accumulate in i128
//! and wrap once to the element width (wrapping sum/prod are the same mod 2^w),
//! and `pred` reduces with logic: sum/max/or are `or`, prod/min/and are `and`.
//! Elements of one output are combined in row-major input order, so results are
//! deterministic.

use crate::dot::affine_index;
use crate::tensor::invalid;
use crate::{Buf, Lanes, Tensor, TensorError};
use pjc_dialects::{DType, ReduceKind};

/// A reduction kind's arithmetic: its binary operator and identity, per lane class.
pub(crate) trait Kind: Sized {
    /// `self`, if it is one of `allowed`; `op` names the caller in the error message.
    fn check(self, op: &str, allowed: &[ReduceKind]) -> Result<Self, TensorError>;
    fn check_dtype(self, op: &str, d: DType) -> Result<(), TensorError>;
    fn f_identity(self) -> f64;
    fn f_apply(self, a: f64, b: f64) -> f64;
    fn i_identity(self, d: DType) -> i128;
    fn i_apply(self, a: i128, b: i128) -> i128;
    fn p_identity(self) -> bool;
    fn p_apply(self, a: bool, b: bool) -> bool;
}

impl Kind for ReduceKind {
    fn check(self, op: &str, allowed: &[ReduceKind]) -> Result<ReduceKind, TensorError> {
        if allowed.contains(&self) {
            return Ok(self);
        }
        let names: Vec<&str> = allowed.iter().map(|k| k.name()).collect();
        invalid(format!("{op}: unknown kind `{self}` (expected one of {})", names.join(", ")))
    }

    /// `and`/`or` have no meaning on floats.
    fn check_dtype(self, op: &str, d: DType) -> Result<(), TensorError> {
        if d.is_float() && matches!(self, ReduceKind::And | ReduceKind::Or) {
            return invalid(format!("{op}: kind={} is not defined on float dtype {d}", self.name()));
        }
        Ok(())
    }

    fn f_identity(self) -> f64 {
        match self {
            ReduceKind::Sum => 0.0,
            ReduceKind::Prod => 1.0,
            ReduceKind::Max => f64::NEG_INFINITY,
            ReduceKind::Min => f64::INFINITY,
            // Rejected by check_dtype; a harmless value.
            ReduceKind::And | ReduceKind::Or => 0.0,
        }
    }

    fn f_apply(self, a: f64, b: f64) -> f64 {
        match self {
            ReduceKind::Sum => a + b,
            ReduceKind::Prod => a * b,
            ReduceKind::Max => fmax(a, b),
            ReduceKind::Min => fmin(a, b),
            ReduceKind::And | ReduceKind::Or => a,
        }
    }

    /// Identity for integer dtype `d`: max starts at the type's minimum, min at
    /// its maximum, `and` at all ones (-1, which wraps to all ones unsigned).
    fn i_identity(self, d: DType) -> i128 {
        let (lo, hi) = d.int_range().unwrap_or((0, 0));
        match self {
            ReduceKind::Sum | ReduceKind::Or => 0,
            ReduceKind::Prod => 1,
            ReduceKind::Max => lo,
            ReduceKind::Min => hi,
            ReduceKind::And => -1,
        }
    }

    fn i_apply(self, a: i128, b: i128) -> i128 {
        match self {
            ReduceKind::Sum => a.wrapping_add(b),
            ReduceKind::Prod => a.wrapping_mul(b),
            ReduceKind::Max => a.max(b),
            ReduceKind::Min => a.min(b),
            ReduceKind::And => a & b,
            ReduceKind::Or => a | b,
        }
    }

    fn p_identity(self) -> bool {
        matches!(self, ReduceKind::Prod | ReduceKind::Min | ReduceKind::And)
    }

    fn p_apply(self, a: bool, b: bool) -> bool {
        match self {
            ReduceKind::Sum | ReduceKind::Max | ReduceKind::Or => a || b,
            ReduceKind::Prod | ReduceKind::Min | ReduceKind::And => a && b,
        }
    }
}

/// `max` of the spec: NaN propagates (the first NaN operand is returned), and
/// -0.0 orders below +0.0.
pub(crate) fn fmax(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        a
    } else if b.is_nan() {
        b
    } else if a > b || (a == b && a.is_sign_positive()) {
        a
    } else {
        b
    }
}

/// `min` of the spec: NaN propagates, -0.0 orders below +0.0.
pub(crate) fn fmin(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        a
    } else if b.is_nan() {
        b
    } else if a < b || (a == b && a.is_sign_negative()) {
        a
    } else {
        b
    }
}

/// `reduce %a {dims, kind}`: combines the elements along `dims` (removed from
/// the shape) with `kind` (sum prod max min and or), starting from the kind's
/// identity. `and`/`or` on integers are bitwise; on floats they are an error.
pub fn reduce(a: &Tensor, dims: &[usize], kind: ReduceKind) -> Result<Tensor, TensorError> {
    let k = kind;
    let d = a.dtype();
    k.check_dtype("reduce", d)?;
    let rank = a.rank();
    let mut reduced = vec![false; rank];
    for &dim in dims {
        if dim >= rank {
            return invalid(format!("reduce: dimension {dim} is out of range for rank {rank}"));
        }
        if reduced[dim] {
            return invalid(format!("reduce: dimension {dim} is listed twice"));
        }
        reduced[dim] = true;
    }
    let out_shape: Vec<usize> = (0..rank).filter(|&i| !reduced[i]).map(|i| a.shape[i]).collect();
    let n_out: usize = out_shape.iter().product();
    // Coefficient of each input dim in the output's linear index (0 if reduced).
    let mut coef = vec![0usize; rank];
    let mut s = 1;
    for i in (0..rank).rev() {
        if !reduced[i] {
            coef[i] = s;
            s *= a.shape[i];
        }
    }
    let map = affine_index(&a.shape, &coef);
    let lanes = match a.data.lanes() {
        Lanes::F(v) => {
            let mut acc = vec![k.f_identity(); n_out];
            for (&o, &x) in map.iter().zip(&v) {
                acc[o] = k.f_apply(acc[o], x);
            }
            Lanes::F(acc)
        }
        Lanes::I(v) => {
            let mut acc = vec![k.i_identity(d); n_out];
            for (&o, &x) in map.iter().zip(&v) {
                acc[o] = k.i_apply(acc[o], x);
            }
            Lanes::I(acc)
        }
        Lanes::P(v) => {
            let mut acc = vec![k.p_identity(); n_out];
            for (&o, &x) in map.iter().zip(&v) {
                acc[o] = k.p_apply(acc[o], x);
            }
            Lanes::P(acc)
        }
    };
    Ok(Tensor::new(out_shape, Buf::from_lanes(d, lanes)))
}

/// `argmax %a {dim}`: index of the first maximum along `dim`. A NaN counts as
/// the extreme value (the first NaN wins); -0.0 and +0.0 compare equal here (as
/// `compare` does, and as JAX/numpy argmax do), so the first of them wins; pred
/// orders false < true. `out` is I32 or I64; the result's shape removes `dim`.
pub fn argmax(a: &Tensor, dim: usize, out: DType) -> Result<Tensor, TensorError> {
    arg_extreme("argmax", a, dim, out, true)
}

/// `argmin %a {dim}`: index of the first minimum along `dim`; same rules as
/// [`argmax`] (NaN is extreme for both).
pub fn argmin(a: &Tensor, dim: usize, out: DType) -> Result<Tensor, TensorError> {
    arg_extreme("argmin", a, dim, out, false)
}

fn arg_extreme(op: &str, a: &Tensor, dim: usize, out: DType, want_max: bool) -> Result<Tensor, TensorError> {
    let rank = a.rank();
    if dim >= rank {
        return invalid(format!("{op}: dimension {dim} is out of range for rank {rank}"));
    }
    if out != DType::I32 && out != DType::I64 {
        return invalid(format!("{op}: the result dtype must be i32 or i64, not {out}"));
    }
    let outer: usize = a.shape[..dim].iter().product();
    let n = a.shape[dim];
    let inner: usize = a.shape[dim + 1..].iter().product();
    let mut shape = a.shape.clone();
    shape.remove(dim);
    // `better(x, y)`: does candidate element x replace the current best y?
    let lanes = a.data.lanes();
    let better = |x: usize, y: usize| -> bool {
        match &lanes {
            Lanes::F(v) => {
                let (x, y) = (v[x], v[y]);
                if y.is_nan() {
                    false
                } else if x.is_nan() {
                    true
                } else if want_max {
                    x > y
                } else {
                    x < y
                }
            }
            Lanes::I(v) => {
                if want_max {
                    v[x] > v[y]
                } else {
                    v[x] < v[y]
                }
            }
            Lanes::P(v) => {
                if want_max {
                    v[x] && !v[y]
                } else {
                    !v[x] && v[y]
                }
            }
        }
    };
    let mut idx = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| (o * n + j) * inner + i;
            let mut best = 0;
            for j in 1..n {
                if better(at(j), at(best)) {
                    best = j;
                }
            }
            idx.push(best as i128);
        }
    }
    Ok(Tensor::new(shape, Buf::from_i128(out, &idx)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;

    fn t(shape: &[usize], data: Buf) -> Tensor {
        Tensor::new(shape.to_vec(), data)
    }

    /// 3x5x7 values 0..105 (exact in every float type used here).
    fn iota3(d: DType) -> Tensor {
        let v: Vec<f64> = (0..105).map(|x| x as f64).collect();
        t(&[3, 5, 7], Buf::from_f64(d, &v))
    }

    fn naive_sum_over_0_2(i: usize) -> f64 {
        // element (a,b,c) = 35a + 7b + c
        let mut s = 0.0;
        for a in 0..3 {
            for c in 0..7 {
                s += (35 * a + 7 * i + c) as f64;
            }
        }
        s
    }

    #[test]
    fn sum_over_two_dims_floats() {
        for d in [DType::F64, DType::F32, DType::F16, DType::BF16] {
            let r = reduce(&iota3(d), &[0, 2], ReduceKind::Sum).unwrap();
            assert_eq!(r.shape, vec![5]);
            let want: Vec<f64> = (0..5).map(naive_sum_over_0_2).collect();
            assert_eq!(r.data, Buf::from_f64(d, &want), "{d}");
        }
    }

    #[test]
    fn reduce_dims_listed_out_of_order_int() {
        let v: Vec<i128> = (0..105).collect();
        let a = t(&[3, 5, 7], Buf::from_i128(DType::I32, &v));
        let r = reduce(&a, &[2, 0], ReduceKind::Sum).unwrap();
        let want: Vec<i128> = (0..5).map(|i| naive_sum_over_0_2(i) as i128).collect();
        assert_eq!(r.data, Buf::from_i128(DType::I32, &want));
        // max over dim 1 keeps a 3x7 result: element (a, 4, c).
        let r = reduce(&a, &[1], ReduceKind::Max).unwrap();
        assert_eq!(r.shape, vec![3, 7]);
        let want: Vec<i128> = (0..3).flat_map(|a| (0..7).map(move |c| 35 * a + 28 + c)).collect();
        assert_eq!(r.data, Buf::from_i128(DType::I32, &want));
        let r = reduce(&a, &[0, 1, 2], ReduceKind::Min).unwrap();
        assert_eq!(r.shape, Vec::<usize>::new());
        assert_eq!(r.data, Buf::I32(vec![0]));
    }

    #[test]
    fn integer_sum_and_prod_wrap() {
        let a = t(&[3], Buf::I8(vec![100, 100, 100]));
        assert_eq!(reduce(&a, &[0], ReduceKind::Sum).unwrap().data, Buf::I8(vec![44])); // 300 - 256
        let a = t(&[2], Buf::U8(vec![16, 17]));
        assert_eq!(reduce(&a, &[0], ReduceKind::Prod).unwrap().data, Buf::U8(vec![16])); // 272 - 256
        let a = t(&[3], Buf::I64(vec![i64::MAX, 1, 1]));
        assert_eq!(reduce(&a, &[0], ReduceKind::Sum).unwrap().data, Buf::I64(vec![i64::MIN + 1]));
    }

    #[test]
    fn bitwise_and_or_on_integers() {
        let a = t(&[2, 3], Buf::U8(vec![0b1100, 0b1010, 0b1001, 0xff, 0x0f, 0xf0]));
        assert_eq!(reduce(&a, &[1], ReduceKind::And).unwrap().data, Buf::U8(vec![0b1000, 0x00]));
        assert_eq!(reduce(&a, &[1], ReduceKind::Or).unwrap().data, Buf::U8(vec![0b1111, 0xff]));
        assert_eq!(reduce(&a, &[0], ReduceKind::And).unwrap().data, Buf::U8(vec![0b1100, 0b1010, 0]));
        let a = t(&[2], Buf::I16(vec![-1, -2]));
        assert_eq!(reduce(&a, &[0], ReduceKind::And).unwrap().data, Buf::I16(vec![-2]));
        let f = t(&[2], Buf::F32(vec![1.0, 2.0]));
        assert!(reduce(&f, &[0], ReduceKind::And).is_err());
        assert!(reduce(&f, &[1], ReduceKind::Sum).is_err());
        assert!(reduce(&f, &[0, 0], ReduceKind::Sum).is_err());
    }

    #[test]
    fn integer_max_min_identities() {
        let a = t(&[2], Buf::I8(vec![-128, -128]));
        assert_eq!(reduce(&a, &[0], ReduceKind::Max).unwrap().data, Buf::I8(vec![-128]));
        let a = t(&[2], Buf::U16(vec![65535, 7]));
        assert_eq!(reduce(&a, &[0], ReduceKind::Max).unwrap().data, Buf::U16(vec![65535]));
        assert_eq!(reduce(&a, &[0], ReduceKind::Min).unwrap().data, Buf::U16(vec![7]));
    }

    #[test]
    fn pred_reductions_are_logic() {
        let a = t(&[2, 3], Buf::Pred(vec![true, false, true, false, false, false]));
        for (k, want) in [
            (ReduceKind::Sum, vec![true, false]),
            (ReduceKind::Max, vec![true, false]),
            (ReduceKind::Or, vec![true, false]),
            (ReduceKind::Prod, vec![false, false]),
            (ReduceKind::Min, vec![false, false]),
            (ReduceKind::And, vec![false, false]),
        ] {
            assert_eq!(reduce(&a, &[1], k).unwrap().data, Buf::Pred(want), "{k}");
        }
        let a = t(&[2], Buf::Pred(vec![true, true]));
        assert_eq!(reduce(&a, &[0], ReduceKind::And).unwrap().data, Buf::Pred(vec![true]));
    }

    #[test]
    fn nan_and_signed_zero() {
        let nan = f64::NAN;
        let a = t(&[2, 3], Buf::F64(vec![1.0, nan, 3.0, -0.0, 0.0, -0.0]));
        let mx = reduce(&a, &[1], ReduceKind::Max).unwrap();
        let Buf::F64(v) = mx.data else { panic!() };
        assert!(v[0].is_nan());
        assert_eq!(v[1], 0.0);
        assert!(v[1].is_sign_positive());
        let mn = reduce(&a, &[1], ReduceKind::Min).unwrap();
        let Buf::F64(v) = mn.data else { panic!() };
        assert!(v[0].is_nan());
        assert!(v[1] == 0.0 && v[1].is_sign_negative());
        // -0.0 then +0.0 in the other order too.
        let a = t(&[2], Buf::F32(vec![0.0, -0.0]));
        let Buf::F32(v) = reduce(&a, &[0], ReduceKind::Max).unwrap().data else { panic!() };
        assert!(v[0].is_sign_positive());
        let Buf::F32(v) = reduce(&a, &[0], ReduceKind::Min).unwrap().data else { panic!() };
        assert!(v[0].is_sign_negative());
        // sum of NaN is NaN, max of -inf only is -inf.
        let a = t(&[2], Buf::F32(vec![f32::NEG_INFINITY, f32::NEG_INFINITY]));
        assert_eq!(reduce(&a, &[0], ReduceKind::Max).unwrap().data, Buf::F32(vec![f32::NEG_INFINITY]));
    }

    #[test]
    fn bf16_sum_rounds_once() {
        // 1 + 2^-8 is a tie in bf16 (8 significant bits) that rounds to 1.0, so
        // an element-type accumulator would give 1.0; rounding once gives 1 + 2^-7.
        let e = 1.0 / 256.0;
        let a = t(&[3], Buf::BF16(vec![bf16::from_f64(1.0), bf16::from_f64(e), bf16::from_f64(e)]));
        let r = reduce(&a, &[0], ReduceKind::Sum).unwrap();
        assert_eq!(r.data, Buf::BF16(vec![bf16::from_f64(1.0 + 2.0 * e)]));
        assert_ne!(r.data, Buf::BF16(vec![bf16::from_f64(1.0)]));
        // f32: 1e8 + 1 + 1 + 1 + 1 - 1e8 is 0 step by step, 4 in f64.
        let a = t(&[6], Buf::F32(vec![1e8, 1.0, 1.0, 1.0, 1.0, -1e8]));
        assert_eq!(reduce(&a, &[0], ReduceKind::Sum).unwrap().data, Buf::F32(vec![4.0]));
    }

    #[test]
    fn reduce_no_dims_and_prod() {
        let a = t(&[2, 2], Buf::F16(vec![half::f16::from_f64(1.5), half::f16::from_f64(-2.0), half::f16::from_f64(3.0), half::f16::from_f64(0.5)]));
        let r = reduce(&a, &[], ReduceKind::Prod).unwrap();
        assert_eq!(r, a);
        let r = reduce(&a, &[0, 1], ReduceKind::Prod).unwrap();
        assert_eq!(r.data, Buf::from_f64(DType::F16, &[-4.5]));
    }

    #[test]
    fn argmax_ties_and_nan() {
        let nan = f32::NAN;
        let a = t(&[3, 4], Buf::F32(vec![1.0, 5.0, 5.0, 2.0, nan, 1.0, nan, 9.0, -0.0, 0.0, -1.0, 0.0]));
        let r = argmax(&a, 1, DType::I32).unwrap();
        assert_eq!(r.shape, vec![3]);
        assert_eq!(r.data, Buf::I32(vec![1, 0, 0]));
        let r = argmin(&a, 1, DType::I64).unwrap();
        assert_eq!(r.data, Buf::I64(vec![0, 0, 2]));
        // Along dim 0 of a 3x4: column-wise.
        let r = argmax(&a, 0, DType::I32).unwrap();
        assert_eq!(r.shape, vec![4]);
        assert_eq!(r.data, Buf::I32(vec![1, 0, 1, 1]));
        let r = argmin(&a, 0, DType::I32).unwrap();
        assert_eq!(r.data, Buf::I32(vec![1, 2, 1, 2]));
        assert!(argmax(&a, 2, DType::I32).is_err());
        assert!(argmax(&a, 0, DType::F32).is_err());
    }

    #[test]
    fn argmax_ints_pred_3d() {
        // 2x3x2: argmax along the middle dim.
        let a = t(&[2, 3, 2], Buf::I8(vec![3, -1, 3, 4, 2, 4, -5, 0, -5, 0, -7, -1]));
        let r = argmax(&a, 1, DType::I32).unwrap();
        assert_eq!(r.shape, vec![2, 2]);
        assert_eq!(r.data, Buf::I32(vec![0, 1, 0, 0]));
        let r = argmin(&a, 1, DType::I32).unwrap();
        assert_eq!(r.data, Buf::I32(vec![2, 0, 2, 2]));
        let p = t(&[4], Buf::Pred(vec![false, true, false, true]));
        assert_eq!(argmax(&p, 0, DType::I32).unwrap().data, Buf::I32(vec![1]));
        assert_eq!(argmin(&p, 0, DType::I32).unwrap().data, Buf::I32(vec![0]));
    }
}
