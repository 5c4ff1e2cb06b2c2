//! Reference kernels for the elementwise ops of PIR (spec sections 7 and 11):
//! unary and binary arithmetic, `compare`, `select`, `clamp`, `convert`,
//! `bitcast_convert` and `iota`.
//!
//! They exist as the oracle that compiled code is checked against, so every rule
//! of section 11 (integer division by zero, shifts by the bit width, NaN and -0.0
//! in `max`/`min`, saturating float-to-int conversion, ...) is spelled out here
//! once, plainly. Floats are computed in f64 and rounded once to the element type
//! (through f32 for f16/bf16, i.e. "compute in f32, round once"); integers are
//! computed in i128 and wrapped to the element width. The `match` on the opcode is
//! always outside the per-element loop.

use half::{bf16, f16};
use pjc_dialects::{BinaryOp, DType, UnaryOp};

use crate::io::{buf_from_le_bytes, buf_to_le_bytes};
use crate::structural::{broadcast, concat_bufs};
use crate::tensor::{invalid, strides, Buf, Lanes, Tensor, TensorError};

fn map_f(v: &[f64], f: impl Fn(f64) -> f64) -> Vec<f64> {
    v.iter().map(|&x| f(x)).collect()
}

fn map_i(v: &[i128], f: impl Fn(i128) -> i128) -> Vec<i128> {
    v.iter().map(|&x| f(x)).collect()
}

fn zip<T: Copy, U>(a: &[T], b: &[T], f: impl Fn(T, T) -> U) -> Vec<U> {
    a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
}

/// `sign` for floats: -1, 1, and the argument itself for ±0.0 and NaN.
fn fsign(x: f64) -> f64 {
    if x.is_nan() || x == 0.0 {
        x
    } else {
        x.signum()
    }
}

/// `max` for floats: NaN propagates, -0.0 < +0.0.
fn fmax(x: f64, y: f64) -> f64 {
    if x.is_nan() {
        x
    } else if y.is_nan() {
        y
    } else if x == 0.0 && y == 0.0 {
        if x.is_sign_positive() {
            x
        } else {
            y
        }
    } else if x > y {
        x
    } else {
        y
    }
}

/// `min` for floats: NaN propagates, -0.0 < +0.0.
fn fmin(x: f64, y: f64) -> f64 {
    if x.is_nan() {
        x
    } else if y.is_nan() {
        y
    } else if x == 0.0 && y == 0.0 {
        if x.is_sign_negative() {
            x
        } else {
            y
        }
    } else if x < y {
        x
    } else {
        y
    }
}

/// Integer power with wrapping (mod 2^128, which is consistent with the final
/// wrap to the element width). Negative exponents: 1 for base 1, ±1 for base -1,
/// otherwise 0 (spec section 11).
fn ipow(base: i128, exp: i128) -> i128 {
    if exp < 0 {
        return match base {
            1 => 1,
            -1 if exp & 1 == 1 => -1,
            -1 => 1,
            _ => 0,
        };
    }
    let (mut r, mut b, mut e) = (1i128, base, exp as u128);
    while e > 0 {
        if e & 1 == 1 {
            r = r.wrapping_mul(b);
        }
        b = b.wrapping_mul(b);
        e >>= 1;
    }
    r
}

/// Elementwise op with one operand (spec section 7, "unary elementwise").
pub fn unary(op: UnaryOp, a: &Tensor) -> Result<Tensor, TensorError> {
    use UnaryOp::*;
    type F = Option<fn(f64) -> f64>;
    type I = Option<fn(i128) -> i128>;
    type P = Option<fn(bool) -> bool>;
    let d = a.dtype();
    let undefined = || TensorError::Invalid(format!("{op} is not defined on {d}"));
    // Each op's arithmetic per lane class; `None` where the op is not defined.
    let (f, i, p): (F, I, P) = match op {
        Neg => (Some(|x| -x), Some(|x| -x), None),
        Abs => (Some(f64::abs), Some(i128::abs), None),
        Exp => (Some(f64::exp), None, None),
        Log => (Some(f64::ln), None, None),
        Log1p => (Some(f64::ln_1p), None, None),
        Expm1 => (Some(f64::exp_m1), None, None),
        Sqrt => (Some(f64::sqrt), None, None),
        Rsqrt => (Some(|x| 1.0 / x.sqrt()), None, None),
        Tanh => (Some(f64::tanh), None, None),
        Logistic => (Some(|x| 1.0 / (1.0 + (-x).exp())), None, None),
        Erf => (Some(libm::erf), None, None),
        Sin => (Some(f64::sin), None, None),
        Cos => (Some(f64::cos), None, None),
        Floor => (Some(f64::floor), None, None),
        Ceil => (Some(f64::ceil), None, None),
        Round => (Some(f64::round), None, None),
        RoundEven => (Some(f64::round_ties_even), None, None),
        Sign => (Some(fsign), Some(i128::signum), None),
        Not => (None, Some(|x| !x), Some(|x| !x)),
        IsFinite => {
            return match a.data.lanes() {
                Lanes::F(v) => Ok(Tensor::new(a.shape.clone(), Buf::Pred(v.iter().map(|x| x.is_finite()).collect()))),
                _ => Err(undefined()),
            }
        }
    };
    let data = match a.data.lanes() {
        Lanes::F(v) => Buf::from_f64(d, &map_f(&v, f.ok_or_else(undefined)?)),
        Lanes::I(v) => Buf::from_i128(d, &map_i(&v, i.ok_or_else(undefined)?)),
        Lanes::P(v) => {
            let p = p.ok_or_else(undefined)?;
            Buf::Pred(v.iter().map(|&x| p(x)).collect())
        }
    };
    Ok(Tensor::new(a.shape.clone(), data))
}

fn check_same(what: &str, a: &Tensor, b: &Tensor) -> Result<(), TensorError> {
    if a.dtype() != b.dtype() || a.shape != b.shape {
        return invalid(format!("{what}: operands differ: {}{:?} and {}{:?}", a.dtype(), a.shape, b.dtype(), b.shape));
    }
    Ok(())
}

/// Elementwise op with two operands of one type (spec section 7, "binary
/// elementwise"; exact integer, NaN and pred rules in section 11).
pub fn binary(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor, TensorError> {
    use BinaryOp::*;
    type F = Option<fn(f64, f64) -> f64>;
    /// Integer lanes, with the element width in bits.
    type I = Option<fn(i128, i128, i128) -> i128>;
    type P = Option<fn(bool, bool) -> bool>;
    check_same(op.name(), a, b)?;
    let d = a.dtype();
    let undefined = || TensorError::Invalid(format!("{op} is not defined on {d}"));
    // Each op's arithmetic per lane class; `None` where the op is not defined.
    let (f, i, p): (F, I, P) = match op {
        Add => (Some(|x, y| x + y), Some(|x, y, _| x.wrapping_add(y)), Some(|x, y| x | y)),
        Sub => (Some(|x, y| x - y), Some(|x, y, _| x.wrapping_sub(y)), None),
        Mul => (Some(|x, y| x * y), Some(|x, y, _| x.wrapping_mul(y)), Some(|x, y| x & y)),
        // In i128 nothing overflows: INT_MIN / -1 gives 2^(w-1), which
        // wraps back to INT_MIN; INT_MIN % -1 is 0.
        Div => (Some(|x, y| x / y), Some(|x, y, _| if y == 0 { -1 } else { x / y }), None),
        // Rust's float `%` is C fmod: the result has the dividend's sign.
        Rem => (Some(|x, y| x % y), Some(|x, y, _| if y == 0 { x } else { x % y }), None),
        Max => (Some(fmax), Some(|x, y, _| x.max(y)), Some(|x, y| x | y)),
        Min => (Some(fmin), Some(|x, y, _| x.min(y)), Some(|x, y| x & y)),
        Pow => (Some(f64::powf), Some(|x, y, _| ipow(x, y)), None),
        Atan2 => (Some(f64::atan2), None, None),
        And => (None, Some(|x, y, _| x & y), Some(|x, y| x & y)),
        Or => (None, Some(|x, y, _| x | y), Some(|x, y| x | y)),
        Xor => (None, Some(|x, y, _| x ^ y), Some(|x, y| x ^ y)),
        Shl => (None, Some(|x, y, bits| if y < 0 || y >= bits { 0 } else { x << y }), None),
        // Lanes of signed dtypes are sign-extended and those of unsigned
        // dtypes are non-negative, so `>>` on i128 is arithmetic for the
        // former and logical for the latter.
        Shr => (
            None,
            Some(|x, y, bits| {
                if y < 0 || y >= bits {
                    if x < 0 {
                        -1
                    } else {
                        0
                    }
                } else {
                    x >> y
                }
            }),
            None,
        ),
    };
    let data = match (a.data.lanes(), b.data.lanes()) {
        (Lanes::F(x), Lanes::F(y)) => Buf::from_f64(d, &zip(&x, &y, f.ok_or_else(undefined)?)),
        (Lanes::I(x), Lanes::I(y)) => {
            let (i, bits) = (i.ok_or_else(undefined)?, d.bits() as i128);
            Buf::from_i128(d, &zip(&x, &y, |x, y| i(x, y, bits)))
        }
        (Lanes::P(x), Lanes::P(y)) => Buf::Pred(zip(&x, &y, p.ok_or_else(undefined)?)),
        _ => unreachable!("operands of one dtype widen to one lane class"),
    };
    Ok(Tensor::new(a.shape.clone(), data))
}

fn cmp_all<T: PartialOrd + Copy>(dir: &str, a: &[T], b: &[T]) -> Result<Vec<bool>, TensorError> {
    Ok(match dir {
        "eq" => zip(a, b, |x, y| x == y),
        "ne" => zip(a, b, |x, y| x != y),
        "lt" => zip(a, b, |x, y| x < y),
        "le" => zip(a, b, |x, y| x <= y),
        "gt" => zip(a, b, |x, y| x > y),
        "ge" => zip(a, b, |x, y| x >= y),
        _ => return invalid(format!("unknown compare direction '{dir}' (expected eq ne lt le gt ge)")),
    })
}

/// `compare` with `dir` in `eq ne lt le gt ge`: IEEE comparisons for floats (NaN
/// compares false except for `ne`; -0.0 == +0.0), false < true for pred.
pub fn compare(dir: &str, a: &Tensor, b: &Tensor) -> Result<Tensor, TensorError> {
    check_same("compare", a, b)?;
    let r = match (a.data.lanes(), b.data.lanes()) {
        (Lanes::F(x), Lanes::F(y)) => cmp_all(dir, &x, &y)?,
        (Lanes::I(x), Lanes::I(y)) => cmp_all(dir, &x, &y)?,
        (Lanes::P(x), Lanes::P(y)) => cmp_all(dir, &x, &y)?,
        _ => unreachable!("operands of one dtype widen to one lane class"),
    };
    Ok(Tensor::new(a.shape.clone(), Buf::Pred(r)))
}

/// `select p, a, b`: `a` where `p` is true, else `b`. `p` is a pred scalar or has
/// the shape of `a`.
pub fn select(p: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor, TensorError> {
    check_same("select", a, b)?;
    let Buf::Pred(pv) = &p.data else {
        return invalid(format!("select: the predicate is {}, not pred", p.dtype()));
    };
    if !p.shape.is_empty() && p.shape != a.shape {
        return invalid(format!("select: predicate shape {:?} is neither [] nor {:?}", p.shape, a.shape));
    }
    let n = a.len();
    let scalar = p.shape.is_empty();
    let idx: Vec<usize> = (0..n).map(|i| if pv[if scalar { 0 } else { i }] { i } else { n + i }).collect();
    Ok(Tensor::new(a.shape.clone(), concat_bufs(&[&a.data, &b.data]).take(&idx)))
}

/// `clamp lo, x, hi` = `min(max(x, lo), hi)` with the `max`/`min` rules of
/// [`binary`]; `lo` and `hi` are scalars or have the shape of `x`.
pub fn clamp(lo: &Tensor, x: &Tensor, hi: &Tensor) -> Result<Tensor, TensorError> {
    let expand = |t: &Tensor, what: &str| -> Result<Tensor, TensorError> {
        if t.dtype() != x.dtype() {
            return invalid(format!("clamp: {what} is {}, x is {}", t.dtype(), x.dtype()));
        }
        if t.shape.is_empty() {
            broadcast(t, &[], &x.shape)
        } else if t.shape == x.shape {
            Ok(t.clone())
        } else {
            invalid(format!("clamp: {what} shape {:?} is neither [] nor {:?}", t.shape, x.shape))
        }
    };
    let (lo, hi) = (expand(lo, "lo")?, expand(hi, "hi")?);
    binary(BinaryOp::Min, &binary(BinaryOp::Max, x, &lo)?, &hi)
}

use pjc_dialects::dtype::f64_to_f32_odd;

/// An integer rounded to f32 with round-to-odd (see [`f64_to_f32_odd`]).
fn int_to_f32_odd(x: i128) -> f32 {
    let m = x.unsigned_abs();
    let len = 128 - m.leading_zeros();
    let m = if len <= 24 {
        m
    } else {
        let k = len - 24;
        let t = (m >> k) << k;
        if t == m {
            t
        } else {
            t | (1 << k)
        }
    };
    let f = m as f32; // exact: at most 24 significant bits
    if x < 0 {
        -f
    } else {
        f
    }
}

/// f32 rounded once (to nearest even) to float dtype `to`.
fn f32s_to(to: DType, v: Vec<f32>) -> Buf {
    match to {
        DType::F32 => Buf::F32(v),
        DType::F16 => Buf::F16(v.into_iter().map(f16::from_f32).collect()),
        DType::BF16 => Buf::BF16(v.into_iter().map(bf16::from_f32).collect()),
        _ => unreachable!(),
    }
}

/// `convert` (spec section 11): float→int truncates toward zero and saturates,
/// NaN→0; int→float and float→float round once to nearest even; int→int wraps;
/// number→pred is `!= 0`; pred→number is 1 or 0.
pub fn convert(a: &Tensor, to: DType) -> Result<Tensor, TensorError> {
    let data = match a.data.lanes() {
        Lanes::F(v) => {
            if to.is_pred() {
                Buf::Pred(v.iter().map(|&x| x != 0.0).collect())
            } else if let Some((lo, hi)) = to.int_range() {
                // `as` truncates toward zero, saturates and maps NaN to 0.
                Buf::from_i128(to, &map_f_i(&v, |x| (x as i128).clamp(lo, hi)))
            } else {
                match to {
                    DType::F64 => Buf::F64(v),
                    DType::F32 => Buf::F32(v.iter().map(|&x| x as f32).collect()),
                    _ => f32s_to(to, v.iter().map(|&x| f64_to_f32_odd(x)).collect()),
                }
            }
        }
        Lanes::I(v) => {
            if to.is_pred() {
                Buf::Pred(v.iter().map(|&x| x != 0).collect())
            } else if to.is_int() {
                Buf::from_i128(to, &v)
            } else {
                match to {
                    // Rust's int→float `as` rounds to nearest even.
                    DType::F64 => Buf::F64(v.iter().map(|&x| x as f64).collect()),
                    DType::F32 => Buf::F32(v.iter().map(|&x| x as f32).collect()),
                    _ => f32s_to(to, v.iter().map(|&x| int_to_f32_odd(x)).collect()),
                }
            }
        }
        Lanes::P(v) => {
            if to.is_pred() {
                Buf::Pred(v)
            } else if to.is_int() {
                Buf::from_i128(to, &v.iter().map(|&x| x as i128).collect::<Vec<_>>())
            } else {
                Buf::from_f64(to, &v.iter().map(|&x| x as u8 as f64).collect::<Vec<_>>())
            }
        }
    };
    Ok(Tensor::new(a.shape.clone(), data))
}

fn map_f_i(v: &[f64], f: impl Fn(f64) -> i128) -> Vec<i128> {
    v.iter().map(|&x| f(x)).collect()
}

/// `bitcast_convert`: the same bits read as another dtype of the same width.
pub fn bitcast_convert(a: &Tensor, to: DType) -> Result<Tensor, TensorError> {
    let from = a.dtype();
    if from.bits() != to.bits() || from.is_pred() != to.is_pred() {
        return invalid(format!("bitcast_convert from {from} to {to}: the widths differ or one side is pred"));
    }
    let data = buf_from_le_bytes(to, &buf_to_le_bytes(&a.data)).map_err(TensorError::Invalid)?;
    Ok(Tensor::new(a.shape.clone(), data))
}

/// `iota`: each element is its index along `dim` (rounded for float dtypes; pred
/// gets index != 0).
pub fn iota(d: DType, shape: &[usize], dim: usize) -> Tensor {
    assert!(dim < shape.len(), "iota dim {dim} out of range for shape {shape:?}");
    let n: usize = shape.iter().product();
    let (st, size) = (strides(shape)[dim], shape[dim]);
    let idx = (0..n).map(|i| (i / st) % size);
    let data = if d.is_float() {
        Buf::from_f64(d, &idx.map(|i| i as f64).collect::<Vec<_>>())
    } else if d.is_int() {
        Buf::from_i128(d, &idx.map(|i| i as i128).collect::<Vec<_>>())
    } else {
        Buf::Pred(idx.map(|i| i != 0).collect())
    };
    Tensor::new(shape.to_vec(), data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32t(v: &[f32]) -> Tensor {
        Tensor::new(vec![v.len()], Buf::F32(v.to_vec()))
    }
    fn f64t(v: &[f64]) -> Tensor {
        Tensor::new(vec![v.len()], Buf::F64(v.to_vec()))
    }
    fn bf(v: &[f32]) -> Tensor {
        Tensor::new(vec![v.len()], Buf::BF16(v.iter().map(|&x| bf16::from_f32(x)).collect()))
    }
    fn hf(v: &[f32]) -> Tensor {
        Tensor::new(vec![v.len()], Buf::F16(v.iter().map(|&x| f16::from_f32(x)).collect()))
    }
    fn ints(d: DType, v: &[i128]) -> Tensor {
        Tensor::new(vec![v.len()], Buf::from_i128(d, v))
    }
    fn preds(v: &[bool]) -> Tensor {
        Tensor::new(vec![v.len()], Buf::Pred(v.to_vec()))
    }
    fn lanes_i(t: &Tensor) -> Vec<i128> {
        match t.data.lanes() {
            Lanes::I(v) => v,
            l => panic!("not integer lanes: {l:?}"),
        }
    }
    fn lanes_f(t: &Tensor) -> Vec<f64> {
        match t.data.lanes() {
            Lanes::F(v) => v,
            l => panic!("not float lanes: {l:?}"),
        }
    }
    fn bits64(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }
    fn bin_i(op: BinaryOp, d: DType, a: &[i128], b: &[i128]) -> Vec<i128> {
        lanes_i(&binary(op, &ints(d, a), &ints(d, b)).unwrap())
    }

    #[test]
    fn unary_float_ops() {
        let t = f64t(&[-2.5, -0.5, 0.5, 1.5, 2.5]);
        let u = |op| lanes_f(&unary(op, &t).unwrap());
        assert_eq!(u(UnaryOp::Neg), [2.5, 0.5, -0.5, -1.5, -2.5]);
        assert_eq!(u(UnaryOp::Abs), [2.5, 0.5, 0.5, 1.5, 2.5]);
        assert_eq!(u(UnaryOp::Floor), [-3.0, -1.0, 0.0, 1.0, 2.0]);
        assert_eq!(u(UnaryOp::Ceil), [-2.0, -0.0, 1.0, 2.0, 3.0]);
        assert_eq!(u(UnaryOp::Round), [-3.0, -1.0, 1.0, 2.0, 3.0]);
        assert_eq!(u(UnaryOp::RoundEven), [-2.0, -0.0, 0.0, 2.0, 2.0]);
        assert_eq!(u(UnaryOp::Sign), [-1.0, -1.0, 1.0, 1.0, 1.0]);
        let t = f64t(&[0.0, 1.0, 4.0]);
        let u = |op| lanes_f(&unary(op, &t).unwrap());
        assert_eq!(u(UnaryOp::Sqrt), [0.0, 1.0, 2.0]);
        assert_eq!(u(UnaryOp::Rsqrt), [f64::INFINITY, 1.0, 0.5]);
        assert_eq!(u(UnaryOp::Exp)[1], std::f64::consts::E);
        assert_eq!(u(UnaryOp::Log), [f64::NEG_INFINITY, 0.0, 4f64.ln()]);
        assert_eq!(u(UnaryOp::Logistic)[0], 0.5);
        assert_eq!(u(UnaryOp::Tanh)[0], 0.0);
        assert_eq!(u(UnaryOp::Sin)[0], 0.0);
        assert_eq!(u(UnaryOp::Cos)[0], 1.0);
        assert_eq!(u(UnaryOp::Log1p)[1], 2f64.ln());
        assert_eq!(u(UnaryOp::Expm1)[0], 0.0);
        assert!((u(UnaryOp::Erf)[1] - 0.842_700_792_949_714_9).abs() < 1e-15);
        // f32 results are rounded once from f64.
        let e = unary(UnaryOp::Exp, &f32t(&[1.0])).unwrap();
        assert_eq!(e.data, Buf::F32(vec![std::f64::consts::E as f32]));
    }

    #[test]
    fn sign_keeps_negative_zero_and_nan() {
        let r = lanes_f(&unary(UnaryOp::Sign, &f64t(&[-0.0, 0.0, f64::NAN, -7.0, f64::INFINITY])).unwrap());
        assert_eq!(r[0].to_bits(), (-0.0f64).to_bits());
        assert_eq!(r[1].to_bits(), 0.0f64.to_bits());
        assert!(r[2].is_nan());
        assert_eq!(&r[3..], [-1.0, 1.0]);
        assert_eq!(lanes_i(&unary(UnaryOp::Sign, &ints(DType::I8, &[-128, 0, 5])).unwrap()), [-1, 0, 1]);
        assert_eq!(lanes_i(&unary(UnaryOp::Sign, &ints(DType::U8, &[0, 255])).unwrap()), [0, 1]);
    }

    #[test]
    fn unary_integer_and_pred_ops() {
        assert_eq!(lanes_i(&unary(UnaryOp::Neg, &ints(DType::I8, &[-128, 127, 0])).unwrap()), [-128, -127, 0]);
        assert_eq!(lanes_i(&unary(UnaryOp::Neg, &ints(DType::U8, &[1, 0])).unwrap()), [255, 0]);
        assert_eq!(lanes_i(&unary(UnaryOp::Abs, &ints(DType::I16, &[-32768, -3])).unwrap()), [-32768, 3]);
        assert_eq!(lanes_i(&unary(UnaryOp::Abs, &ints(DType::U16, &[65535])).unwrap()), [65535]);
        assert_eq!(lanes_i(&unary(UnaryOp::Not, &ints(DType::U8, &[0, 0x0f])).unwrap()), [255, 0xf0]);
        assert_eq!(lanes_i(&unary(UnaryOp::Not, &ints(DType::I32, &[0, -1])).unwrap()), [-1, 0]);
        assert_eq!(unary(UnaryOp::Not, &preds(&[true, false])).unwrap().data, Buf::Pred(vec![false, true]));
        let fin = unary(UnaryOp::IsFinite, &hf(&[1.0, f32::INFINITY, f32::NAN, -65504.0])).unwrap();
        assert_eq!(fin.data, Buf::Pred(vec![true, false, false, true]));
        assert!(unary(UnaryOp::Exp, &ints(DType::I32, &[1])).is_err());
        assert!(unary(UnaryOp::Neg, &preds(&[true])).is_err());
        assert!(unary(UnaryOp::Not, &f32t(&[1.0])).is_err());
    }

    #[test]
    fn bf16_and_f16_round_once_to_even() {
        // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties to even → 1.0.
        let r = binary(BinaryOp::Add, &bf(&[1.0, 1.0]), &bf(&[0.00390625, 0.01171875])).unwrap();
        // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even) → 1.015625.
        assert_eq!(r.data, Buf::BF16(vec![bf16::from_f32(1.0), bf16::from_f32(1.015625)]));
        // f16: 2048 + 1 is halfway between 2048 and 2050 → 2048; 2050 + 1 → 2052.
        let r = binary(BinaryOp::Add, &hf(&[2048.0, 2050.0]), &hf(&[1.0, 1.0])).unwrap();
        assert_eq!(r.data, Buf::F16(vec![f16::from_f32(2048.0), f16::from_f32(2052.0)]));
        // f16 overflow to inf.
        let r = binary(BinaryOp::Mul, &hf(&[65504.0]), &hf(&[2.0])).unwrap();
        assert_eq!(r.data, Buf::F16(vec![f16::INFINITY]));
        // bf16 unary: sqrt(2) rounds to 1.4140625.
        let r = unary(UnaryOp::Sqrt, &bf(&[2.0])).unwrap();
        assert_eq!(r.data, Buf::BF16(vec![bf16::from_f32(1.4140625)]));
    }

    #[test]
    fn float_binary_ops() {
        let a = f64t(&[7.5, -7.5, 1.0, 2.0]);
        let b = f64t(&[2.0, 2.0, 0.0, 10.0]);
        let bin = |op| lanes_f(&binary(op, &a, &b).unwrap());
        assert_eq!(bin(BinaryOp::Add), [9.5, -5.5, 1.0, 12.0]);
        assert_eq!(bin(BinaryOp::Sub), [5.5, -9.5, 1.0, -8.0]);
        assert_eq!(bin(BinaryOp::Mul), [15.0, -15.0, 0.0, 20.0]);
        assert_eq!(bin(BinaryOp::Div), [3.75, -3.75, f64::INFINITY, 0.2]);
        let rem = bin(BinaryOp::Rem);
        assert_eq!(&rem[..2], [1.5, -1.5]);
        assert!(rem[2].is_nan());
        assert_eq!(rem[3], 2.0);
        assert_eq!(bin(BinaryOp::Pow), [56.25, 56.25, 1.0, 1024.0]);
        let at = lanes_f(&binary(BinaryOp::Atan2, &f64t(&[1.0, 0.0]), &f64t(&[1.0, -1.0])).unwrap());
        assert_eq!(at, [std::f64::consts::FRAC_PI_4, std::f64::consts::PI]);
        assert!(binary(BinaryOp::And, &a, &b).is_err());
        assert!(binary(BinaryOp::Add, &a, &f32t(&[1.0, 2.0, 3.0, 4.0])).is_err());
    }

    #[test]
    fn max_min_propagate_nan_and_order_zeros() {
        let nan = f64::NAN;
        let a = f64t(&[nan, 1.0, -0.0, 0.0, -0.0, 3.0]);
        let b = f64t(&[1.0, nan, 0.0, -0.0, -0.0, -4.0]);
        let mx = lanes_f(&binary(BinaryOp::Max, &a, &b).unwrap());
        let mn = lanes_f(&binary(BinaryOp::Min, &a, &b).unwrap());
        assert!(mx[0].is_nan() && mx[1].is_nan() && mn[0].is_nan() && mn[1].is_nan());
        assert_eq!(bits64(&mx[2..]), bits64(&[0.0, 0.0, -0.0, 3.0]));
        assert_eq!(bits64(&mn[2..]), bits64(&[-0.0, -0.0, -0.0, -4.0]));
        // Same on f32.
        let r = binary(BinaryOp::Max, &f32t(&[-0.0]), &f32t(&[0.0])).unwrap();
        assert_eq!(r.data, Buf::F32(vec![0.0]));
        assert!(matches!(r.data, Buf::F32(ref v) if v[0].is_sign_positive()));
    }

    #[test]
    fn integer_division_edge_cases() {
        let d = DType::I32;
        let min = -(1i128 << 31);
        assert_eq!(bin_i(BinaryOp::Div, d, &[7, -7, 7, -7, 5, min], &[2, 2, -2, -2, 0, -1]), [3, -3, -3, 3, -1, min]);
        assert_eq!(bin_i(BinaryOp::Rem, d, &[7, -7, 7, -7, 5, min], &[2, 2, -2, -2, 0, -1]), [1, -1, 1, -1, 5, 0]);
        // i8 and i64 extremes.
        assert_eq!(bin_i(BinaryOp::Div, DType::I8, &[-128, -128], &[-1, 0]), [-128, -1]);
        let m64 = i64::MIN as i128;
        assert_eq!(bin_i(BinaryOp::Div, DType::I64, &[m64], &[-1]), [m64]);
        assert_eq!(bin_i(BinaryOp::Rem, DType::I64, &[m64], &[-1]), [0]);
        // Unsigned: x/0 is all bits set, x rem 0 is x.
        assert_eq!(bin_i(BinaryOp::Div, DType::U8, &[200, 7], &[0, 2]), [255, 3]);
        assert_eq!(bin_i(BinaryOp::Div, DType::U64, &[5], &[0]), [u64::MAX as i128]);
        assert_eq!(bin_i(BinaryOp::Rem, DType::U16, &[200, 7], &[0, 3]), [200, 1]);
        assert_eq!(bin_i(BinaryOp::Div, DType::U32, &[u32::MAX as i128], &[2]), [(u32::MAX / 2) as i128]);
    }

    #[test]
    fn integer_overflow_wraps() {
        assert_eq!(bin_i(BinaryOp::Add, DType::I8, &[127, -128], &[1, -1]), [-128, 127]);
        assert_eq!(bin_i(BinaryOp::Sub, DType::U8, &[0], &[1]), [255]);
        assert_eq!(bin_i(BinaryOp::Mul, DType::I16, &[300], &[300]), [90000 - 65536]);
        let m = u64::MAX as i128;
        assert_eq!(bin_i(BinaryOp::Mul, DType::U64, &[m], &[m]), [1]);
        assert_eq!(bin_i(BinaryOp::Max, DType::U8, &[3, 250], &[200, 1]), [200, 250]);
        assert_eq!(bin_i(BinaryOp::Min, DType::I8, &[3, -100], &[-5, 1]), [-5, -100]);
        assert_eq!(bin_i(BinaryOp::And, DType::U8, &[0b1100], &[0b1010]), [0b1000]);
        assert_eq!(bin_i(BinaryOp::Or, DType::I8, &[0b1100], &[-128]), [-128 + 0b1100]);
        assert_eq!(bin_i(BinaryOp::Xor, DType::I16, &[-1], &[0x00ff]), [-256]);
    }

    #[test]
    fn shifts() {
        let d = DType::I8;
        assert_eq!(bin_i(BinaryOp::Shl, d, &[1, 1, 1, 1, 3], &[7, 8, 100, -1, 1]), [-128, 0, 0, 0, 6]);
        assert_eq!(bin_i(BinaryOp::Shr, d, &[-128, -128, -1, 64, 64, -5], &[7, 8, -3, 8, 6, 1]), [-1, -1, -1, 0, 1, -3]);
        // Logical for unsigned.
        assert_eq!(bin_i(BinaryOp::Shr, DType::U8, &[0x80, 0x80, 0xff], &[7, 8, 4]), [1, 0, 0x0f]);
        assert_eq!(bin_i(BinaryOp::Shl, DType::U32, &[0xffff_ffff, 1], &[4, 32]), [0xffff_fff0, 0]);
        let m = u64::MAX as i128;
        assert_eq!(bin_i(BinaryOp::Shl, DType::U64, &[m, 1], &[63, m]), [1 << 63, 0]);
        assert_eq!(bin_i(BinaryOp::Shr, DType::U64, &[m], &[63]), [1]);
        assert_eq!(bin_i(BinaryOp::Shr, DType::I64, &[i64::MIN as i128], &[63]), [-1]);
        assert_eq!(bin_i(BinaryOp::Shl, DType::I64, &[1], &[64]), [0]);
    }

    #[test]
    fn integer_pow() {
        let d = DType::I32;
        assert_eq!(
            bin_i(BinaryOp::Pow, d, &[2, 2, 1, -1, -1, 0, 3, -3], &[10, -1, -5, -3, -4, 0, 0, 3]),
            [1024, 0, 1, -1, 1, 1, 1, -27]
        );
        assert_eq!(bin_i(BinaryOp::Pow, d, &[0, 2], &[-2, 31]), [0, -(1 << 31)]);
        assert_eq!(bin_i(BinaryOp::Pow, DType::U8, &[2, 3], &[9, 5]), [0, 243]);
        assert_eq!(bin_i(BinaryOp::Pow, DType::I8, &[3], &[5]), [243 - 256]);
        // Huge exponents terminate and wrap: 3^(2^63-1) mod 2^64 is odd; 2^big = 0.
        let r = bin_i(BinaryOp::Pow, DType::I64, &[2, -1, 1], &[i64::MAX as i128, i64::MAX as i128, i64::MIN as i128]);
        assert_eq!(r, [0, -1, 1]);
        let r = bin_i(BinaryOp::Pow, DType::U64, &[3], &[u64::MAX as i128]);
        assert_eq!(r[0] & 1, 1);
        // Float pow.
        assert_eq!(lanes_f(&binary(BinaryOp::Pow, &f64t(&[2.0, 4.0]), &f64t(&[-1.0, 0.5])).unwrap()), [0.5, 2.0]);
    }

    #[test]
    fn pred_binary_logic() {
        let a = preds(&[false, false, true, true]);
        let b = preds(&[false, true, false, true]);
        let p = |op| binary(op, &a, &b).unwrap().data;
        let or = Buf::Pred(vec![false, true, true, true]);
        let and = Buf::Pred(vec![false, false, false, true]);
        assert_eq!(p(BinaryOp::Or), or);
        assert_eq!(p(BinaryOp::Add), or);
        assert_eq!(p(BinaryOp::Max), or);
        assert_eq!(p(BinaryOp::And), and);
        assert_eq!(p(BinaryOp::Mul), and);
        assert_eq!(p(BinaryOp::Min), and);
        assert_eq!(p(BinaryOp::Xor), Buf::Pred(vec![false, true, true, false]));
        assert!(binary(BinaryOp::Sub, &a, &b).is_err());
        assert!(binary(BinaryOp::Div, &a, &b).is_err());
    }

    #[test]
    fn compare_dirs() {
        let nan = f64::NAN;
        let a = f64t(&[1.0, 2.0, nan, -0.0]);
        let b = f64t(&[2.0, 2.0, nan, 0.0]);
        let c = |dir| match compare(dir, &a, &b).unwrap().data {
            Buf::Pred(v) => v,
            _ => panic!(),
        };
        assert_eq!(c("eq"), [false, true, false, true]);
        assert_eq!(c("ne"), [true, false, true, false]);
        assert_eq!(c("lt"), [true, false, false, false]);
        assert_eq!(c("le"), [true, true, false, true]);
        assert_eq!(c("gt"), [false, false, false, false]);
        assert_eq!(c("ge"), [false, true, false, true]);
        assert!(compare("xx", &a, &b).is_err());
        let r = compare("lt", &ints(DType::U64, &[0, u64::MAX as i128]), &ints(DType::U64, &[u64::MAX as i128, 1]))
            .unwrap();
        assert_eq!(r.data, Buf::Pred(vec![true, false]));
        let r = compare("lt", &preds(&[false, true, false]), &preds(&[true, false, false])).unwrap();
        assert_eq!(r.data, Buf::Pred(vec![true, false, false]));
        let r = compare("ge", &ints(DType::I8, &[-128]), &ints(DType::I8, &[127])).unwrap();
        assert_eq!(r.data, Buf::Pred(vec![false]));
    }

    #[test]
    fn select_and_clamp() {
        let a = ints(DType::I32, &[1, 2, 3]);
        let b = ints(DType::I32, &[10, 20, 30]);
        let r = select(&preds(&[true, false, true]), &a, &b).unwrap();
        assert_eq!(lanes_i(&r), [1, 20, 3]);
        let s = Tensor::new(vec![], Buf::Pred(vec![false]));
        assert_eq!(lanes_i(&select(&s, &a, &b).unwrap()), [10, 20, 30]);
        assert!(select(&a, &a, &b).is_err());
        assert!(select(&preds(&[true, false]), &a, &b).is_err());

        let lo = Tensor::new(vec![], Buf::I32(vec![2]));
        let hi = ints(DType::I32, &[2, 2, 5]);
        let x = ints(DType::I32, &[0, 9, 4]);
        assert_eq!(lanes_i(&clamp(&lo, &x, &hi).unwrap()), [2, 2, 4]);
        // Float clamp: NaN propagates; lo > hi gives hi.
        let r =
            lanes_f(&clamp(&f64t(&[0.0, 0.0, 5.0]), &f64t(&[f64::NAN, -1.0, 1.0]), &f64t(&[1.0, 1.0, 3.0])).unwrap());
        assert!(r[0].is_nan());
        assert_eq!(&r[1..], [0.0, 3.0]);
        assert!(clamp(&f64t(&[0.0, 1.0]), &f64t(&[1.0]), &f64t(&[1.0])).is_err());
    }

    #[test]
    fn convert_float_to_int_saturates() {
        let v = f64t(&[2.9, -2.9, f64::NAN, 1e10, -1e10, f64::INFINITY, f64::NEG_INFINITY, -0.5]);
        assert_eq!(
            lanes_i(&convert(&v, DType::I32).unwrap()),
            [2, -2, 0, i32::MAX as i128, i32::MIN as i128, i32::MAX as i128, i32::MIN as i128, 0]
        );
        assert_eq!(lanes_i(&convert(&v, DType::U8).unwrap()), [2, 0, 0, 255, 0, 255, 0, 0]);
        assert_eq!(lanes_i(&convert(&v, DType::I64).unwrap())[3], 10_000_000_000);
        let big = f64t(&[9.3e18, 1.9e19, 1e30]);
        assert_eq!(lanes_i(&convert(&big, DType::I64).unwrap()), [i64::MAX as i128; 3]);
        assert_eq!(
            lanes_i(&convert(&big, DType::U64).unwrap()),
            [9_300_000_000_000_000_000, u64::MAX as i128, u64::MAX as i128]
        );
        let p = convert(&f64t(&[0.0, -0.0, 0.1, f64::NAN]), DType::Pred).unwrap();
        assert_eq!(p.data, Buf::Pred(vec![false, false, true, true]));
        assert_eq!(lanes_i(&convert(&bf(&[-1.5, 300.0]), DType::I8).unwrap()), [-1, 127]);
    }

    #[test]
    fn convert_between_classes() {
        // int → int wraps.
        assert_eq!(lanes_i(&convert(&ints(DType::I32, &[300, -1]), DType::U8).unwrap()), [44, 255]);
        assert_eq!(lanes_i(&convert(&ints(DType::U8, &[255]), DType::I8).unwrap()), [-1]);
        // int → float rounds to nearest even: 2^24 + 1 → 2^24, 2^24 + 3 → 2^24 + 4.
        let r = convert(&ints(DType::I32, &[16_777_217, 16_777_219]), DType::F32).unwrap();
        assert_eq!(r.data, Buf::F32(vec![16_777_216.0, 16_777_220.0]));
        // int → bf16 rounds once: 2^63 + 2^55 + 1 lies just above a tie, so it goes up,
        // where rounding through f64 would land on the tie and round down to 2^63.
        let x = (1i128 << 63) + (1 << 55) + 1;
        let r = convert(&ints(DType::U64, &[x, 257, 259]), DType::BF16).unwrap();
        let want = [2f32.powi(63) * (1.0 + 1.0 / 128.0), 256.0, 260.0];
        assert_eq!(r.data, Buf::BF16(want.iter().map(|&f| bf16::from_f32(f)).collect()));
        assert_eq!(
            convert(&ints(DType::I32, &[65519, 65520, -2049]), DType::F16).unwrap().data,
            Buf::F16(vec![f16::from_f32(65504.0), f16::INFINITY, f16::from_f32(-2048.0)])
        );
        // float → float rounds once: 1 + 2^-8 + 2^-40 is just above a bf16 tie.
        let r =
            convert(&f64t(&[1.0 + 2f64.powi(-8) + 2f64.powi(-40), 1.0 + 2f64.powi(-8), -1e300]), DType::BF16).unwrap();
        assert_eq!(r.data, Buf::BF16(vec![bf16::from_f32(1.0078125), bf16::from_f32(1.0), bf16::NEG_INFINITY]));
        let r = convert(&f64t(&[1.0 + 2f64.powi(-11) + 2f64.powi(-50)]), DType::F16).unwrap();
        assert_eq!(r.data, Buf::F16(vec![f16::from_f32(1.0 + 2f32.powi(-10))]));
        let r = convert(&bf(&[3.0]), DType::F16).unwrap();
        assert_eq!(r.data, Buf::F16(vec![f16::from_f32(3.0)]));
        let r = convert(&f64t(&[0.1]), DType::F32).unwrap();
        assert_eq!(r.data, Buf::F32(vec![0.1f32]));
        // pred ↔ number.
        assert_eq!(convert(&preds(&[true, false]), DType::F32).unwrap().data, Buf::F32(vec![1.0, 0.0]));
        assert_eq!(lanes_i(&convert(&preds(&[true, false]), DType::U16).unwrap()), [1, 0]);
        assert_eq!(convert(&ints(DType::I8, &[0, -3]), DType::Pred).unwrap().data, Buf::Pred(vec![false, true]));
        // NaN survives float → float.
        assert!(lanes_f(&convert(&f32t(&[f32::NAN]), DType::BF16).unwrap())[0].is_nan());
    }

    #[test]
    fn bitcasts() {
        let r = bitcast_convert(&f32t(&[1.0, -0.0]), DType::U32).unwrap();
        assert_eq!(r.data, Buf::U32(vec![0x3f80_0000, 0x8000_0000]));
        let r = bitcast_convert(&r, DType::I32).unwrap();
        assert_eq!(r.data, Buf::I32(vec![0x3f80_0000, i32::MIN]));
        let r = bitcast_convert(&bf(&[1.0]), DType::U16).unwrap();
        assert_eq!(r.data, Buf::U16(vec![0x3f80]));
        let r = bitcast_convert(&bf(&[1.0]), DType::F16).unwrap();
        assert_eq!(r.data, Buf::F16(vec![f16::from_bits(0x3f80)]));
        let r = bitcast_convert(&f64t(&[-2.0]), DType::I64).unwrap();
        assert_eq!(r.data, Buf::I64(vec![(-2.0f64).to_bits() as i64]));
        let r = bitcast_convert(&ints(DType::I8, &[-1, 5]), DType::U8).unwrap();
        assert_eq!(r.data, Buf::U8(vec![255, 5]));
        assert!(bitcast_convert(&f32t(&[1.0]), DType::F64).is_err());
        assert!(bitcast_convert(&ints(DType::U8, &[1]), DType::Pred).is_err());
    }

    #[test]
    fn iota_along_dims() {
        let t = iota(DType::I32, &[2, 3], 1);
        assert_eq!(lanes_i(&t), [0, 1, 2, 0, 1, 2]);
        let t = iota(DType::F32, &[2, 3, 1], 0);
        assert_eq!(t.data, Buf::F32(vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0]));
        let t = iota(DType::BF16, &[258], 0);
        assert_eq!(lanes_f(&t)[257], 256.0); // 257 rounds to even in bf16
        let t = iota(DType::U8, &[300], 0);
        assert_eq!(lanes_i(&t)[299], 43); // wraps
    }

    #[test]
    fn million_element_ops_are_fast() {
        let n = 1 << 20;
        let a = Tensor::new(vec![n], Buf::F32((0..n).map(|i| i as f32).collect()));
        let t0 = std::time::Instant::now();
        let r = binary(BinaryOp::Add, &a, &a).unwrap();
        let r = unary(UnaryOp::Exp, &r).unwrap();
        let r = compare("lt", &r, &a).unwrap();
        let _ = convert(&r, DType::I32).unwrap();
        assert!(t0.elapsed().as_secs_f64() < 3.0, "too slow: {:?}", t0.elapsed());
    }
}
