//! Comparing a computed tensor with the one it should equal: the one numeric
//! comparison every test uses (partitioned against global, compiled against the
//! interpreter, the interpreter against numpy fixtures, ...), so that the
//! tolerance rules are written once and each test states its tolerance in the
//! call.
//!
//! [`close`] compares `got` with the reference `want` under a [`Tolerance`]:
//!
//! - Shapes and dtypes must be equal.
//! - Integer and `pred` elements must be equal, whatever the tolerance.
//! - With [`Tolerance::BITWISE`] float elements must be bit for bit equal (NaN
//!   payloads and the sign of zero included).
//! - Otherwise each float element (exact in f64, whatever its dtype) matches when
//!   1. both are NaN (any payload; a NaN matches nothing else);
//!   2. they are equal: the same infinity, or `-0.0` and `+0.0` unless
//!      [`Tolerance::signed_zeros`] asks for the sign of zeros to match;
//!   3. both are finite and `|got − want| ≤ atol + rtol·|want| + rtol_max·M`,
//!      where `M` is the largest finite magnitude in `want` (the spec's
//!      reassociation rule uses `rtol = rtol_max`);
//!   4. or both are finite and at most [`Tolerance::ulps`] units in the last
//!      place of the dtype apart.
//!
//!   An infinity therefore matches only itself, and an infinite `atol` accepts
//!   any finite pair (only the positions of infinities and NaNs are checked).
//!
//! Per-dtype defaults, from the spec's reproducibility rule (section 11):
//! [`Tolerance::spec`] — rtol 1e-12 for f64, 1e-5 for f32, 1e-2 for f16 and bf16
//! — and [`Tolerance::spec_long_sums`] (f32 1e-4, for programs with reductions
//! over more than 1,000 elements). Integers are always exact.
//!
//! A failure is a [`Mismatch`]: how many elements differ, the first bad index
//! (multi-dimensional and flat) with both values, and the largest error over
//! every finite pair.

use crate::{buf_to_le_bytes, Lanes, Tensor};
use pjc_dialects::DType;
use std::fmt;

/// How close float elements must be; see the [module docs](self) for the rules.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative to the element: `rtol·|want[i]|`.
    pub rtol: f64,
    /// Relative to the largest finite magnitude of `want`: `rtol_max·max|want|`.
    pub rtol_max: f64,
    /// Absolute.
    pub atol: f64,
    /// Also accept finite values at most this many units in the last place of
    /// the dtype apart (0: no ulp rule).
    pub ulps: u64,
    /// `-0.0` and `+0.0` differ.
    pub signed_zeros: bool,
    /// Bit for bit: every other field is ignored.
    pub bitwise: bool,
}

impl Tolerance {
    /// Equal values: NaN matches NaN, `-0.0` matches `+0.0`.
    pub const EXACT: Tolerance =
        Tolerance { rtol: 0.0, rtol_max: 0.0, atol: 0.0, ulps: 0, signed_zeros: false, bitwise: false };

    /// The same bytes.
    pub const BITWISE: Tolerance = Tolerance { bitwise: true, ..Tolerance::EXACT };

    /// The spec's reassociation rule with one rtol: `rtol·max|want| + rtol·|want|`.
    pub const fn reassoc(rtol: f64) -> Tolerance {
        Tolerance { rtol, rtol_max: rtol, ..Tolerance::EXACT }
    }

    /// Relative to each element only: `rtol·|want[i]|`.
    pub const fn rel(rtol: f64) -> Tolerance {
        Tolerance { rtol, ..Tolerance::EXACT }
    }

    /// Relative to the largest magnitude only: `rtol·max|want|`.
    pub const fn of_max(rtol: f64) -> Tolerance {
        Tolerance { rtol_max: rtol, ..Tolerance::EXACT }
    }

    /// Within `n` units in the last place of the dtype.
    pub const fn ulps(n: u64) -> Tolerance {
        Tolerance { ulps: n, ..Tolerance::EXACT }
    }

    /// The spec's default for results of dtype `d` (section 11, "Reproducibility"):
    /// [`reassoc`](Self::reassoc) with rtol 1e-12 (f64), 1e-5 (f32), 1e-2 (f16, bf16).
    /// Exact for integer and `pred` dtypes (which are exact under any tolerance).
    pub fn spec(d: DType) -> Tolerance {
        match d {
            DType::F64 => Tolerance::reassoc(1e-12),
            DType::F32 => Tolerance::reassoc(1e-5),
            DType::F16 | DType::BF16 => Tolerance::reassoc(1e-2),
            _ => Tolerance::EXACT,
        }
    }

    /// [`spec`](Self::spec) for programs with reductions over more than 1,000
    /// elements: f32 gets rtol 1e-4, the other dtypes are unchanged.
    pub fn spec_long_sums(d: DType) -> Tolerance {
        match d {
            DType::F32 => Tolerance::reassoc(1e-4),
            _ => Tolerance::spec(d),
        }
    }

    /// This tolerance plus an absolute term.
    pub const fn with_atol(self, atol: f64) -> Tolerance {
        Tolerance { atol, ..self }
    }

    /// This tolerance with the sign of zeros compared.
    pub const fn with_signed_zeros(self) -> Tolerance {
        Tolerance { signed_zeros: true, ..self }
    }

    /// Whether float `got` matches `want`, with `max_want` the largest finite
    /// magnitude of the reference tensor (rules 1–4 of the module docs; not
    /// bitwise).
    pub fn accepts(&self, want: f64, got: f64, max_want: f64, d: DType) -> bool {
        if want.is_nan() || got.is_nan() {
            return want.is_nan() && got.is_nan();
        }
        if want == got {
            return !(self.signed_zeros && want == 0.0 && want.is_sign_negative() != got.is_sign_negative());
        }
        if !want.is_finite() || !got.is_finite() {
            return false;
        }
        // An infinite bound accepts every finite pair (inf * 0 would be NaN).
        let term = |t: f64, x: f64| if t == 0.0 { 0.0 } else { t * x };
        let bound = self.atol + term(self.rtol, want.abs()) + term(self.rtol_max, max_want);
        (got - want).abs() <= bound || (self.ulps > 0 && ulp_distance(want, got, d) <= self.ulps)
    }
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.bitwise {
            return f.write_str("bitwise");
        }
        let mut parts = vec![];
        if self.atol != 0.0 {
            parts.push(format!("{:e}", self.atol));
        }
        if self.rtol != 0.0 {
            parts.push(format!("{:e}·|want|", self.rtol));
        }
        if self.rtol_max != 0.0 {
            parts.push(format!("{:e}·max|want|", self.rtol_max));
        }
        let mut s = if parts.is_empty() { "exact".to_string() } else { format!("within {}", parts.join(" + ")) };
        if self.ulps != 0 {
            s.push_str(&format!(" or {} ulp", self.ulps));
        }
        if self.signed_zeros {
            s.push_str(", signed zeros");
        }
        f.write_str(&s)
    }
}

/// Units in the last place of float dtype `d` between two finite values of it
/// (0 for equal values, `-0.0` and `+0.0` included; adjacent values are 1 apart,
/// across zero too). `u64::MAX` when either is NaN, or for a non-float dtype.
pub fn ulp_distance(a: f64, b: f64, d: DType) -> u64 {
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    // Sign-magnitude bits mapped onto a line where adjacent floats differ by 1.
    let key = |x: f64| -> i64 {
        let (bits, sign) = match d {
            DType::F64 => (x.to_bits() as i64, i64::MIN),
            DType::F32 => ((x as f32).to_bits() as i32 as i64, i32::MIN as i64),
            DType::F16 => (half::f16::from_f64(x).to_bits() as i16 as i64, i16::MIN as i64),
            DType::BF16 => (half::bf16::from_f64(x).to_bits() as i16 as i64, i16::MIN as i64),
            _ => return i64::MIN,
        };
        if bits < 0 {
            sign.wrapping_sub(bits)
        } else {
            bits
        }
    };
    if !d.is_float() {
        return u64::MAX;
    }
    key(a).abs_diff(key(b))
}

/// Why `got` does not match `want`.
#[derive(Clone, Debug, PartialEq)]
pub enum Mismatch {
    /// Different shapes.
    Shape { want: Vec<usize>, got: Vec<usize> },
    /// Different dtypes.
    DType { want: DType, got: DType },
    /// Different elements (boxed: the error stays small).
    Values(Box<Values>),
}

/// The elements that differ.
#[derive(Clone, Debug, PartialEq)]
pub struct Values {
    pub dtype: DType,
    pub tolerance: Tolerance,
    /// How many elements differ, of how many.
    pub count: usize,
    pub total: usize,
    /// The first element that differs: flat index, index per dimension, and both
    /// values as text.
    pub first: usize,
    pub index: Vec<usize>,
    pub want: String,
    pub got: String,
    /// The largest `|got − want|` over all finite float pairs, and its flat index
    /// (None for integers and pred, or when no pair is finite).
    pub max_error: Option<(f64, usize)>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Shape { want, got } => write!(f, "shape {got:?}, expected {want:?}"),
            Mismatch::DType { want, got } => write!(f, "dtype {got}, expected {want}"),
            Mismatch::Values(v) => {
                let rule = if v.dtype.is_float() { v.tolerance.to_string() } else { "exact".to_string() };
                write!(
                    f,
                    "{} of {} {} elements differ ({rule}); first at {:?} (flat {}): got {}, expected {}",
                    v.count, v.total, v.dtype, v.index, v.first, v.got, v.want
                )?;
                if let Some((e, at)) = v.max_error {
                    write!(f, "; largest error {e:e} at flat {at}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Mismatch {}

/// Row-major multi-index of flat index `flat` in `shape`.
fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        if shape[d] > 0 {
            idx[d] = flat % shape[d];
            flat /= shape[d];
        }
    }
    idx
}

/// Compares `got` with the reference `want` under `tol` (rules in the module docs).
pub fn close(want: &Tensor, got: &Tensor, tol: Tolerance) -> Result<(), Mismatch> {
    if want.dtype() != got.dtype() {
        return Err(Mismatch::DType { want: want.dtype(), got: got.dtype() });
    }
    if want.shape != got.shape {
        return Err(Mismatch::Shape { want: want.shape.clone(), got: got.shape.clone() });
    }
    let d = want.dtype();
    let found = match (want.data.lanes(), got.data.lanes()) {
        (Lanes::F(x), Lanes::F(y)) => {
            // Each element's bytes, for the bitwise rule and to show its bits.
            let size = d.size_bytes();
            let (bw, bg) = (buf_to_le_bytes(&want.data), buf_to_le_bytes(&got.data));
            let bits = |b: &[u8], i: usize| b[i * size..(i + 1) * size].iter().rev().map(|b| format!("{b:02x}")).collect();
            floats(&x, &y, d, tol, |i| bw[i * size..(i + 1) * size] == bg[i * size..(i + 1) * size], |i| (bits(&bw, i), bits(&bg, i)))
        }
        (Lanes::I(x), Lanes::I(y)) => exact(&x, &y, d, tol),
        (Lanes::P(x), Lanes::P(y)) => exact(&x, &y, d, tol),
        _ => unreachable!("equal dtypes have equal lane classes"),
    };
    match found {
        None => Ok(()),
        Some(mut v) => {
            v.index = unravel(v.first, &want.shape);
            Err(Mismatch::Values(Box::new(v)))
        }
    }
}

/// [`close`] for float values of dtype `d` already widened to f64 (e.g. a test's
/// `Vec<f64>` of results); the ulp rule counts in `d`, the bitwise rule compares
/// the f64 bits.
pub fn close_values(want: &[f64], got: &[f64], d: DType, tol: Tolerance) -> Result<(), Mismatch> {
    if want.len() != got.len() {
        return Err(Mismatch::Shape { want: vec![want.len()], got: vec![got.len()] });
    }
    let bits = |x: f64| format!("{:016x}", x.to_bits());
    match floats(want, got, d, tol, |i| want[i].to_bits() == got[i].to_bits(), |i| (bits(want[i]), bits(got[i]))) {
        None => Ok(()),
        Some(v) => Err(Mismatch::Values(Box::new(v))),
    }
}

/// The float rules over `x` (want) and `y` (got); `same_bits(i)` says whether
/// element `i` is bitwise equal, `hex(i)` gives both elements' bits for the report.
fn floats(
    x: &[f64],
    y: &[f64],
    d: DType,
    tol: Tolerance,
    same_bits: impl Fn(usize) -> bool,
    hex: impl Fn(usize) -> (String, String),
) -> Option<Values> {
    let m = x.iter().filter(|v| v.is_finite()).fold(0.0f64, |m, v| m.max(v.abs()));
    let ok = |i: usize| if tol.bitwise { same_bits(i) } else { tol.accepts(x[i], y[i], m, d) };
    let bad: Vec<usize> = (0..x.len()).filter(|&i| !ok(i)).collect();
    let &first = bad.first()?;
    let mut max_error: Option<(f64, usize)> = None;
    for (i, (a, b)) in x.iter().zip(y).enumerate() {
        let e = (a - b).abs();
        if a.is_finite() && b.is_finite() && max_error.is_none_or(|(m, _)| e > m) {
            max_error = Some((e, i));
        }
    }
    let (mut want, mut got) = (format!("{:?}", x[first]), format!("{:?}", y[first]));
    if tol.bitwise {
        // Equal-looking values (NaN payloads, zero signs) differ in their bits.
        let (hw, hg) = hex(first);
        want = format!("{want} (0x{hw})");
        got = format!("{got} (0x{hg})");
    }
    Some(Values { dtype: d, tolerance: tol, count: bad.len(), total: x.len(), first, index: vec![first], want, got, max_error })
}

/// Integer or pred elements: equal, whatever the tolerance.
fn exact<T: PartialEq + fmt::Display>(x: &[T], y: &[T], d: DType, tol: Tolerance) -> Option<Values> {
    let bad: Vec<usize> = (0..x.len()).filter(|&i| x[i] != y[i]).collect();
    let &first = bad.first()?;
    Some(Values {
        dtype: d,
        tolerance: tol,
        count: bad.len(),
        total: x.len(),
        first,
        index: vec![first],
        want: x[first].to_string(),
        got: y[first].to_string(),
        max_error: None,
    })
}

/// [`close`], panicking with the report (and `what`, naming the result) when
/// `got` does not match.
#[track_caller]
pub fn assert_close(want: &Tensor, got: &Tensor, tol: Tolerance, what: &str) {
    if let Err(e) = close(want, got, tol) {
        panic!("{what}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Buf;
    use half::{bf16, f16};

    fn f32s(v: &[f32]) -> Tensor {
        Tensor::new(vec![v.len()], Buf::F32(v.to_vec()))
    }

    fn values(r: Result<(), Mismatch>) -> Values {
        match r {
            Err(Mismatch::Values(v)) => *v,
            other => panic!("expected a value mismatch, got {other:?}"),
        }
    }

    #[test]
    fn nan_matches_nan_and_nothing_else() {
        let nan = f32s(&[f32::NAN, 1.0]);
        let other_nan = f32s(&[f32::from_bits(0x7fc0_0001), 1.0]);
        assert_eq!(close(&nan, &other_nan, Tolerance::EXACT), Ok(()));
        let v = values(close(&nan, &f32s(&[1.0, 1.0]), Tolerance::reassoc(1.0)));
        assert_eq!((v.count, v.first), (1, 0));
        let v = values(close(&f32s(&[1.0, 1.0]), &nan, Tolerance::reassoc(1.0)));
        assert_eq!((v.count, v.first, v.got.as_str()), (1, 0, "NaN"));
        // Bitwise: payloads count.
        let v = values(close(&nan, &other_nan, Tolerance::BITWISE));
        assert_eq!(v.got, "NaN (0x7fc00001)");
    }

    #[test]
    fn infinities_match_only_themselves() {
        let inf = f32s(&[f32::INFINITY, f32::NEG_INFINITY, 2.0]);
        assert_eq!(close(&inf, &inf, Tolerance::EXACT), Ok(()));
        // No tolerance makes an infinity close to a finite value or the other infinity.
        let huge = Tolerance::reassoc(1e30).with_atol(f64::INFINITY);
        assert!(close(&inf, &f32s(&[f32::MAX, f32::NEG_INFINITY, 2.0]), huge).is_err());
        assert!(close(&inf, &f32s(&[f32::INFINITY, f32::INFINITY, 2.0]), huge).is_err());
        // An infinite atol checks only where the infinities and NaNs are.
        assert_eq!(close(&inf, &f32s(&[f32::INFINITY, f32::NEG_INFINITY, -7.0]), huge), Ok(()));
        // The largest finite magnitude ignores infinities (it would accept anything).
        let v = values(close(&inf, &f32s(&[f32::INFINITY, f32::NEG_INFINITY, 3.0]), Tolerance::of_max(0.1)));
        assert_eq!(v.first, 2);
    }

    #[test]
    fn zeros_are_equal_unless_signed() {
        let (p, n) = (f32s(&[0.0]), f32s(&[-0.0]));
        assert_eq!(close(&p, &n, Tolerance::EXACT), Ok(()));
        assert!(close(&p, &n, Tolerance::EXACT.with_signed_zeros()).is_err());
        assert!(close(&p, &n, Tolerance::BITWISE).is_err());
        assert_eq!(close(&n, &n, Tolerance::BITWISE), Ok(()));
    }

    #[test]
    fn the_bound_adds_atol_element_and_max_terms() {
        let want = f32s(&[100.0, 1.0, 0.0]);
        // Element 1 off by 0.5: 1e-3·100 (max) + 1e-3·1 (element) = 0.101 < 0.5.
        let got = f32s(&[100.0, 1.5, 0.0]);
        assert!(close(&want, &got, Tolerance::reassoc(1e-3)).is_err());
        // rtol_max 5e-3: 0.5 + 0.001 ≥ 0.5.
        assert_eq!(close(&want, &got, Tolerance { rtol_max: 5e-3, ..Tolerance::reassoc(1e-3) }), Ok(()));
        // An absolute term alone.
        assert_eq!(close(&want, &got, Tolerance::EXACT.with_atol(0.5)), Ok(()));
        assert!(close(&want, &got, Tolerance::EXACT.with_atol(0.49)).is_err());
        // Relative to the element only: 0.5 ≤ 0.5·1.
        assert_eq!(close(&want, &got, Tolerance::rel(0.5)), Ok(()));
        assert!(close(&want, &got, Tolerance::rel(0.49)).is_err());
        // The element term is relative to want, not got.
        assert!(close(&f32s(&[1.0]), &f32s(&[3.0]), Tolerance::rel(1.0)).is_err());
        assert_eq!(close(&f32s(&[3.0]), &f32s(&[1.0]), Tolerance::rel(1.0)), Ok(()));
    }

    #[test]
    fn spec_defaults_per_dtype() {
        assert_eq!(Tolerance::spec(DType::F64), Tolerance::reassoc(1e-12));
        assert_eq!(Tolerance::spec(DType::F32), Tolerance::reassoc(1e-5));
        assert_eq!(Tolerance::spec(DType::BF16), Tolerance::reassoc(1e-2));
        assert_eq!(Tolerance::spec(DType::F16), Tolerance::reassoc(1e-2));
        assert_eq!(Tolerance::spec(DType::I32), Tolerance::EXACT);
        assert_eq!(Tolerance::spec_long_sums(DType::F32), Tolerance::reassoc(1e-4));
        assert_eq!(Tolerance::spec_long_sums(DType::F64), Tolerance::reassoc(1e-12));
        let want = Tensor::new(vec![2], Buf::BF16(vec![bf16::from_f32(1.0), bf16::from_f32(2.0)]));
        let got = Tensor::new(vec![2], Buf::BF16(vec![bf16::from_f32(1.0), bf16::from_f32(2.015625)]));
        assert_eq!(close(&want, &got, Tolerance::spec(DType::BF16)), Ok(()));
        assert!(close(&want, &got, Tolerance::spec(DType::F32)).is_err());
    }

    #[test]
    fn integers_and_pred_are_exact_under_any_tolerance() {
        let a = Tensor::new(vec![3], Buf::I32(vec![1, 2, 3]));
        let b = Tensor::new(vec![3], Buf::I32(vec![1, 2, 4]));
        let v = values(close(&a, &b, Tolerance::reassoc(1.0).with_atol(10.0)));
        assert_eq!((v.count, v.first, v.want.as_str(), v.got.as_str(), v.max_error), (1, 2, "3", "4", None));
        let p = Tensor::new(vec![2], Buf::Pred(vec![true, false]));
        let q = Tensor::new(vec![2], Buf::Pred(vec![true, true]));
        assert!(close(&p, &q, Tolerance::reassoc(1.0)).is_err());
        assert_eq!(close(&p, &p, Tolerance::BITWISE), Ok(()));
    }

    #[test]
    fn shape_and_dtype_must_match() {
        let a = f32s(&[1.0, 2.0]);
        let b = Tensor::new(vec![2, 1], Buf::F32(vec![1.0, 2.0]));
        assert_eq!(close(&a, &b, Tolerance::EXACT), Err(Mismatch::Shape { want: vec![2], got: vec![2, 1] }));
        let c = Tensor::new(vec![2], Buf::F64(vec![1.0, 2.0]));
        assert_eq!(close(&a, &c, Tolerance::EXACT), Err(Mismatch::DType { want: DType::F32, got: DType::F64 }));
    }

    #[test]
    fn ulps_count_in_the_dtype() {
        let one = 1.0f32;
        let next = f32::from_bits(one.to_bits() + 1) as f64;
        assert_eq!(ulp_distance(1.0, next, DType::F32), 1);
        assert_eq!(ulp_distance(0.0, -0.0, DType::F32), 0);
        // Across zero: the smallest subnormals either side are 2 apart.
        let tiny = f32::from_bits(1) as f64;
        assert_eq!(ulp_distance(tiny, -tiny, DType::F32), 2);
        assert_eq!(ulp_distance(1.0, 1.0 + 1.0 / 128.0, DType::BF16), 1);
        assert_eq!(ulp_distance(1.0, 1.0 + 1.0 / 1024.0, DType::F16), 1);
        assert_eq!(ulp_distance(f64::NAN, 1.0, DType::F32), u64::MAX);
        let want = f32s(&[1.0]);
        let got = f32s(&[f32::from_bits(1.0f32.to_bits() + 3)]);
        assert_eq!(close(&want, &got, Tolerance::ulps(4)), Ok(()));
        assert!(close(&want, &got, Tolerance::ulps(2)).is_err());
        let h = |x: f32| Tensor::new(vec![1], Buf::F16(vec![f16::from_f32(x)]));
        assert_eq!(close(&h(1.0), &h(1.0 + 2.0 / 1024.0), Tolerance::ulps(2)), Ok(()));
        // In f64 carriers of f16 values the ulp rule counts f16 ulps.
        assert_eq!(close_values(&[1.0], &[1.0 + 2.0 / 1024.0], DType::F16, Tolerance::ulps(2)), Ok(()));
        assert!(close_values(&[1.0], &[1.0 + 2.0 / 1024.0], DType::F64, Tolerance::ulps(2)).is_err());
    }

    #[test]
    fn the_report_names_the_first_bad_index_and_the_largest_error() {
        let want = Tensor::new(vec![2, 3], Buf::F64(vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]));
        let got = Tensor::new(vec![2, 3], Buf::F64(vec![0.0, 1.0, 2.5, 3.0, 9.0, 5.0]));
        let e = close(&want, &got, Tolerance::reassoc(1e-12)).unwrap_err();
        let v = values(Err(e.clone()));
        assert_eq!((v.count, v.total, v.first, v.index.clone()), (2, 6, 2, vec![0, 2]));
        assert_eq!(v.max_error, Some((5.0, 4)));
        assert_eq!(
            e.to_string(),
            "2 of 6 f64 elements differ (within 1e-12·|want| + 1e-12·max|want|); first at [0, 2] (flat 2): \
             got 2.5, expected 2.0; largest error 5e0 at flat 4"
        );
        assert_eq!(Tolerance::EXACT.to_string(), "exact");
        assert_eq!(Tolerance::ulps(4).with_atol(1e-3).to_string(), "within 1e-3 or 4 ulp");
    }

    #[test]
    #[should_panic(expected = "result 0: 1 of 1 f32 elements differ")]
    fn assert_close_panics_with_the_report() {
        assert_close(&f32s(&[1.0]), &f32s(&[2.0]), Tolerance::spec(DType::F32), "result 0");
    }

    #[test]
    fn close_values_compares_slices() {
        assert_eq!(close_values(&[1.0, 2.0], &[1.0, 2.0 + 1e-13], DType::F64, Tolerance::rel(1e-12)), Ok(()));
        assert!(close_values(&[1.0, 2.0], &[1.0, 2.1], DType::F64, Tolerance::rel(1e-12)).is_err());
        assert!(matches!(close_values(&[1.0], &[1.0, 2.0], DType::F64, Tolerance::EXACT), Err(Mismatch::Shape { .. })));
    }
}
