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

#[cfg(test)]
mod tests {
    use super::*;
    use pjc_dialects::DType;

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
