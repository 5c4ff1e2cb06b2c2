//! The `Tensor` type, its element storage, and the crate's error
//! ([`TensorError`]; [`invalid`] is how kernels refuse their arguments).

use half::{bf16, f16};
use pjc_dialects::DType;

/// Errors from kernels and I/O. Messages are complete sentences for the user.
#[derive(Debug, thiserror::Error)]
pub enum TensorError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Io(String),
}

/// A kernel's refusal of its arguments, as the `Err` of any result type.
pub(crate) fn invalid<T>(msg: impl Into<String>) -> Result<T, TensorError> {
    Err(TensorError::Invalid(msg.into()))
}

impl From<pjc_dialects::AttrError> for TensorError {
    fn from(e: pjc_dialects::AttrError) -> TensorError {
        TensorError::Invalid(e.0)
    }
}

/// Row-major element storage, one variant per dtype.
#[derive(Clone, Debug, PartialEq)]
pub enum Buf {
    F64(Vec<f64>),
    F32(Vec<f32>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    I16(Vec<i16>),
    I8(Vec<i8>),
    U64(Vec<u64>),
    U32(Vec<u32>),
    U16(Vec<u16>),
    U8(Vec<u8>),
    Pred(Vec<bool>),
}

/// Applies `$body` with `$v` bound to the inner Vec of any `Buf` variant.
#[macro_export]
macro_rules! with_buf {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            $crate::Buf::F64($v) => $body,
            $crate::Buf::F32($v) => $body,
            $crate::Buf::F16($v) => $body,
            $crate::Buf::BF16($v) => $body,
            $crate::Buf::I64($v) => $body,
            $crate::Buf::I32($v) => $body,
            $crate::Buf::I16($v) => $body,
            $crate::Buf::I8($v) => $body,
            $crate::Buf::U64($v) => $body,
            $crate::Buf::U32($v) => $body,
            $crate::Buf::U16($v) => $body,
            $crate::Buf::U8($v) => $body,
            $crate::Buf::Pred($v) => $body,
        }
    };
}

/// Like [`with_buf!`] but rebuilds a `Buf` of the same variant from `$body`
/// (which must yield a Vec of the same element type).
#[macro_export]
macro_rules! map_buf {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            $crate::Buf::F64($v) => $crate::Buf::F64($body),
            $crate::Buf::F32($v) => $crate::Buf::F32($body),
            $crate::Buf::F16($v) => $crate::Buf::F16($body),
            $crate::Buf::BF16($v) => $crate::Buf::BF16($body),
            $crate::Buf::I64($v) => $crate::Buf::I64($body),
            $crate::Buf::I32($v) => $crate::Buf::I32($body),
            $crate::Buf::I16($v) => $crate::Buf::I16($body),
            $crate::Buf::I8($v) => $crate::Buf::I8($body),
            $crate::Buf::U64($v) => $crate::Buf::U64($body),
            $crate::Buf::U32($v) => $crate::Buf::U32($body),
            $crate::Buf::U16($v) => $crate::Buf::U16($body),
            $crate::Buf::U8($v) => $crate::Buf::U8($body),
            $crate::Buf::Pred($v) => $crate::Buf::Pred($body),
        }
    };
}

impl Buf {
    pub fn dtype(&self) -> DType {
        match self {
            Buf::F64(_) => DType::F64,
            Buf::F32(_) => DType::F32,
            Buf::F16(_) => DType::F16,
            Buf::BF16(_) => DType::BF16,
            Buf::I64(_) => DType::I64,
            Buf::I32(_) => DType::I32,
            Buf::I16(_) => DType::I16,
            Buf::I8(_) => DType::I8,
            Buf::U64(_) => DType::U64,
            Buf::U32(_) => DType::U32,
            Buf::U16(_) => DType::U16,
            Buf::U8(_) => DType::U8,
            Buf::Pred(_) => DType::Pred,
        }
    }

    pub fn len(&self) -> usize {
        with_buf!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements picked by index: `out[i] = self[idx[i]]`. The workhorse of every
    /// data-movement kernel (transpose, slice, broadcast, gather, ...), which only
    /// compute index maps.
    pub fn take(&self, idx: &[usize]) -> Buf {
        map_buf!(self, v => idx.iter().map(|&i| v[i]).collect())
    }

    /// The elements of a row-major array of `shape` with its dimensions
    /// permuted (`perm[i]`: the source dimension of result dimension `i`).
    pub fn permuted(&self, shape: &[usize], perm: &[usize]) -> Buf {
        map_buf!(self, v => permute(v, shape, perm))
    }
}

/// `src` (row-major, `shape`) with its dimensions permuted (`perm[i]`: the
/// source dimension of result dimension `i`). When the innermost dimension
/// stays innermost, one pass over the result in order; otherwise the two
/// dimensions that trade places (the result's innermost and the source's) are
/// copied in square tiles, so that reads and writes both stay within a few
/// cache lines (a strided read per element misses the cache on every one).
fn permute<T: Copy>(src: &[T], shape: &[usize], perm: &[usize]) -> Vec<T> {
    const TILE: usize = 16;
    let rank = perm.len();
    let n: usize = shape.iter().product();
    if n == 0 || rank < 2 || perm[rank - 1] == rank - 1 {
        return permute_rows(src, shape, perm);
    }
    let st = strides(shape);
    let oshape: Vec<usize> = perm.iter().map(|&d| shape[d]).collect();
    let ost: Vec<usize> = perm.iter().map(|&d| st[d]).collect();
    let dst_st = strides(&oshape);
    // Result dimension q is the source's innermost (source stride 1).
    let q = perm.iter().position(|&d| d == rank - 1).expect("a permutation");
    let (nq, nl) = (oshape[q], oshape[rank - 1]);
    let (sl, dq) = (ost[rank - 1], dst_st[q]);
    let others: Vec<usize> = (0..rank - 1).filter(|&d| d != q).collect();
    let mut out = vec![src[0]; n];
    let mut idx = vec![0usize; others.len()];
    let (mut sbase, mut dbase) = (0usize, 0usize);
    loop {
        for i0 in (0..nq).step_by(TILE) {
            for j0 in (0..nl).step_by(TILE) {
                for i in i0..(i0 + TILE).min(nq) {
                    let (s, d) = (sbase + i, dbase + i * dq);
                    for j in j0..(j0 + TILE).min(nl) {
                        out[d + j] = src[s + j * sl];
                    }
                }
            }
        }
        // Next index of the other dimensions (an odometer).
        let mut k = others.len();
        loop {
            if k == 0 {
                return out;
            }
            k -= 1;
            let d = others[k];
            idx[k] += 1;
            sbase += ost[d];
            dbase += dst_st[d];
            if idx[k] < oshape[d] {
                break;
            }
            sbase -= ost[d] * oshape[d];
            dbase -= dst_st[d] * oshape[d];
            idx[k] = 0;
        }
    }
}

/// [`permute`] when the innermost dimension stays innermost (or for rank < 2):
/// the result in order, one contiguous row of the source at a time.
fn permute_rows<T: Copy>(src: &[T], shape: &[usize], perm: &[usize]) -> Vec<T> {
    let st = strides(shape);
    let rank = perm.len();
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    if rank == 0 {
        out.push(src[0]);
        return out;
    }
    let oshape: Vec<usize> = perm.iter().map(|&d| shape[d]).collect();
    let ost: Vec<usize> = perm.iter().map(|&d| st[d]).collect();
    let (inner, istride) = (oshape[rank - 1], ost[rank - 1]);
    let mut idx = vec![0usize; rank - 1];
    let mut base = 0usize;
    loop {
        out.extend((0..inner).map(|j| src[base + j * istride]));
        // Next index of the outer dimensions (an odometer).
        let mut d = rank - 1;
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            base += ost[d];
            if idx[d] < oshape[d] {
                break;
            }
            base -= ost[d] * oshape[d];
            idx[d] = 0;
        }
    }
}

/// One element value, dtype-independent: how literals and scalar reads travel.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    Int(i128),
    Float(f64),
    Bool(bool),
}

/// A host array: dtype, shape and row-major elements.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: Buf,
}

impl Tensor {
    pub fn new(shape: Vec<usize>, data: Buf) -> Tensor {
        debug_assert_eq!(shape.iter().product::<usize>(), data.len());
        Tensor { shape, data }
    }

    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }
}

/// Row-major strides (in elements) of a shape.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// `(size, stride)` of dimensions `group` of an array with `shape` and
/// `strides` taken as one dimension, when they are one strided dimension in
/// place: each one's stride is the next one's times its size (size-1
/// dimensions do not count). How products decide whether GEMM reads an
/// operand's rows or columns in place.
pub fn collapse(shape: &[usize], strides: &[usize], group: &[usize]) -> Option<(usize, usize)> {
    let size = group.iter().map(|&d| shape[d]).product();
    let real: Vec<usize> = group.iter().copied().filter(|&d| shape[d] != 1).collect();
    for w in real.windows(2) {
        if strides[w[0]] != strides[w[1]] * shape[w[1]] {
            return None;
        }
    }
    Some((size, real.last().map_or(0, |&d| strides[d])))
}

/// How a product reads an operand of `shape` as a (batched) matrix with
/// dimensions `batch`, `rows` and `cols`: `None` when its rows and its
/// columns each lie as one strided dimension ([`collapse`]), so GEMM reads it
/// in place; otherwise the permutation `batch ++ rows ++ cols` that one
/// transposing copy applies first.
pub fn gemm_order(shape: &[usize], batch: &[usize], rows: &[usize], cols: &[usize]) -> Option<Vec<usize>> {
    let st = strides(shape);
    if collapse(shape, &st, rows).is_some() && collapse(shape, &st, cols).is_some() {
        return None;
    }
    Some(batch.iter().chain(rows).chain(cols).copied().collect())
}

/// Elements widened to one computation type per dtype class: floats as f64,
/// integers as i128, pred as bool. Kernels compute on lanes and narrow back with
/// [`Buf::from_lanes`], which rounds or wraps exactly once.
#[derive(Clone, Debug, PartialEq)]
pub enum Lanes {
    F(Vec<f64>),
    I(Vec<i128>),
    P(Vec<bool>),
}

/// Rounds an f64 to the element type `d` (a float dtype) and back to f64.
/// f16/bf16 round through f32 (round to nearest even at each step), matching the
/// spec's "compute in f32, round once to the element type".
pub fn round_to_dtype(x: f64, d: DType) -> f64 {
    match d {
        DType::F64 => x,
        DType::F32 => x as f32 as f64,
        DType::F16 => f16::from_f32(x as f32).to_f64(),
        DType::BF16 => bf16::from_f32(x as f32).to_f64(),
        _ => panic!("round_to_dtype on {d}"),
    }
}

/// Wraps an i128 into the range of integer dtype `d` (two's complement).
pub fn wrap_to_dtype(x: i128, d: DType) -> i128 {
    let bits = d.bits();
    let m = x & ((1i128 << bits) - 1);
    if d.is_signed_int() && m >= (1i128 << (bits - 1)) {
        m - (1i128 << bits)
    } else {
        m
    }
}

impl Buf {
    /// Widen to lanes (see [`Lanes`]).
    pub fn lanes(&self) -> Lanes {
        match self {
            Buf::F64(v) => Lanes::F(v.clone()),
            Buf::F32(v) => Lanes::F(v.iter().map(|&x| x as f64).collect()),
            Buf::F16(v) => Lanes::F(v.iter().map(|x| x.to_f64()).collect()),
            Buf::BF16(v) => Lanes::F(v.iter().map(|x| x.to_f64()).collect()),
            Buf::I64(v) => Lanes::I(v.iter().map(|&x| x as i128).collect()),
            Buf::I32(v) => Lanes::I(v.iter().map(|&x| x as i128).collect()),
            Buf::I16(v) => Lanes::I(v.iter().map(|&x| x as i128).collect()),
            Buf::I8(v) => Lanes::I(v.iter().map(|&x| x as i128).collect()),
            Buf::U64(v) => Lanes::I(v.iter().map(|&x| x as i128).collect()),
            Buf::U32(v) => Lanes::I(v.iter().map(|&x| x as i128).collect()),
            Buf::U16(v) => Lanes::I(v.iter().map(|&x| x as i128).collect()),
            Buf::U8(v) => Lanes::I(v.iter().map(|&x| x as i128).collect()),
            Buf::Pred(v) => Lanes::P(v.clone()),
        }
    }

    /// Narrow lanes to dtype `d`: floats round to nearest even (through f32 for
    /// f16/bf16), integers wrap. Panics if the lane class does not match `d`'s
    /// class: converting between classes is `convert`'s job, with its own rules.
    pub fn from_lanes(d: DType, lanes: Lanes) -> Buf {
        match lanes {
            Lanes::F(v) => Buf::from_f64(d, &v),
            Lanes::I(v) => Buf::from_i128(d, &v),
            Lanes::P(v) => {
                assert!(d.is_pred(), "pred lanes narrowed to {d}");
                Buf::Pred(v)
            }
        }
    }

    /// Floats rounded to float dtype `d`.
    pub fn from_f64(d: DType, v: &[f64]) -> Buf {
        match d {
            DType::F64 => Buf::F64(v.to_vec()),
            DType::F32 => Buf::F32(v.iter().map(|&x| x as f32).collect()),
            DType::F16 => Buf::F16(v.iter().map(|&x| f16::from_f32(x as f32)).collect()),
            DType::BF16 => Buf::BF16(v.iter().map(|&x| bf16::from_f32(x as f32)).collect()),
            _ => panic!("float lanes narrowed to {d}"),
        }
    }

    /// Integers wrapped to integer dtype `d`.
    pub fn from_i128(d: DType, v: &[i128]) -> Buf {
        let w = |x: i128| wrap_to_dtype(x, d);
        match d {
            DType::I64 => Buf::I64(v.iter().map(|&x| w(x) as i64).collect()),
            DType::I32 => Buf::I32(v.iter().map(|&x| w(x) as i32).collect()),
            DType::I16 => Buf::I16(v.iter().map(|&x| w(x) as i16).collect()),
            DType::I8 => Buf::I8(v.iter().map(|&x| w(x) as i8).collect()),
            DType::U64 => Buf::U64(v.iter().map(|&x| w(x) as u64).collect()),
            DType::U32 => Buf::U32(v.iter().map(|&x| w(x) as u32).collect()),
            DType::U16 => Buf::U16(v.iter().map(|&x| w(x) as u16).collect()),
            DType::U8 => Buf::U8(v.iter().map(|&x| w(x) as u8).collect()),
            _ => panic!("integer lanes narrowed to {d}"),
        }
    }

    /// A buffer of `n` copies of `s`. The scalar must already be valid for `d`
    /// (the front end range-checks literals).
    pub fn splat(d: DType, s: Scalar, n: usize) -> Buf {
        // Rounded once, then repeated in the element type (no wide copy).
        let mut one = Buf::from_scalars(d, &[s]);
        with_buf!(&mut one, v => {
            let x = v[0];
            *v = vec![x; n];
        });
        one
    }

    /// A buffer from literal elements: `Int` for integer dtypes (wrapped) or float
    /// dtypes (rounded), `Float` for float dtypes (rounded), `Bool` for pred.
    pub fn from_scalars(d: DType, s: &[Scalar]) -> Buf {
        if d.is_float() {
            let v: Vec<f64> = s
                .iter()
                .map(|x| match *x {
                    Scalar::Float(f) => f,
                    Scalar::Int(i) => i as f64,
                    Scalar::Bool(b) => b as u8 as f64,
                })
                .collect();
            Buf::from_f64(d, &v)
        } else if d.is_int() {
            let v: Vec<i128> = s
                .iter()
                .map(|x| match *x {
                    Scalar::Int(i) => i,
                    Scalar::Float(f) => f as i128,
                    Scalar::Bool(b) => b as i128,
                })
                .collect();
            Buf::from_i128(d, &v)
        } else {
            Buf::Pred(
                s.iter()
                    .map(|x| match *x {
                        Scalar::Bool(b) => b,
                        Scalar::Int(i) => i != 0,
                        Scalar::Float(f) => f != 0.0,
                    })
                    .collect(),
            )
        }
    }

    /// Element `i` as a scalar.
    pub fn get(&self, i: usize) -> Scalar {
        match self {
            Buf::F64(v) => Scalar::Float(v[i]),
            Buf::F32(v) => Scalar::Float(v[i] as f64),
            Buf::F16(v) => Scalar::Float(v[i].to_f64()),
            Buf::BF16(v) => Scalar::Float(v[i].to_f64()),
            Buf::I64(v) => Scalar::Int(v[i] as i128),
            Buf::I32(v) => Scalar::Int(v[i] as i128),
            Buf::I16(v) => Scalar::Int(v[i] as i128),
            Buf::I8(v) => Scalar::Int(v[i] as i128),
            Buf::U64(v) => Scalar::Int(v[i] as i128),
            Buf::U32(v) => Scalar::Int(v[i] as i128),
            Buf::U16(v) => Scalar::Int(v[i] as i128),
            Buf::U8(v) => Scalar::Int(v[i] as i128),
            Buf::Pred(v) => Scalar::Bool(v[i]),
        }
    }
}

impl Tensor {
    /// A tensor filled from literal elements: one element fills the shape,
    /// otherwise there must be exactly one per element.
    pub fn from_scalars(d: DType, shape: Vec<usize>, s: &[Scalar]) -> Tensor {
        let n = shape.iter().product();
        let data = if s.len() == 1 { Buf::splat(d, s[0], n) } else { Buf::from_scalars(d, s) };
        Tensor::new(shape, data)
    }

    /// A scalar element read as a (clamped) index: integer tensors only.
    pub fn index_at(&self, i: usize) -> i128 {
        match self.data.get(i) {
            Scalar::Int(v) => v,
            s => panic!("index_at on non-integer element {s:?}"),
        }
    }
}
