//! Reading and writing tensors as `.npy` and `.safetensors` files: the formats
//! in which `pjc eval` and compiled executables take inputs and give outputs
//! (spec section 10; bf16 in `.npy` per section 11).
//!
//! The file formats are parsed by the maintained crates (`npyz`, `safetensors`);
//! this module maps their dtypes to PIR's, turns every failure (missing file,
//! truncated or corrupt contents, a dtype PIR does not have) into a one-line
//! [`TensorError::Io`] naming the file, and never panics on bad input. Both
//! formats store row-major little-endian elements, which [`buf_to_le_bytes`] and
//! [`buf_from_le_bytes`] convert (they also serve `bitcast_convert`).

use std::io::Write;
use std::path::Path;

use half::{bf16, f16};
use npyz::{Endianness, NpyFile, NpyHeader, Order, TypeChar, WriterBuilder};
use pjc_dialects::DType;
use safetensors::{Dtype as StDtype, SafeTensors};

use crate::structural::transpose;
use crate::tensor::{Buf, Tensor, TensorError};

/// Elements as little-endian bytes, row-major (pred: one byte, 0 or 1).
pub fn buf_to_le_bytes(b: &Buf) -> Vec<u8> {
    buf_le_bytes(b).into_owned()
}

/// The bytes of a slice of plain numbers as they lie in memory: on a
/// little-endian machine, exactly their little-endian encoding.
#[cfg(target_endian = "little")]
fn raw<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: the element types here (floats, f16/bf16, integers) have no
    // padding, so every byte of the slice is initialised.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// [`buf_to_le_bytes`] without a copy where the machine's own layout is the
/// encoding (numbers on little-endian machines).
pub fn buf_le_bytes(b: &Buf) -> std::borrow::Cow<'_, [u8]> {
    use std::borrow::Cow;
    #[cfg(target_endian = "little")]
    macro_rules! le {
        ($v:expr) => {
            Cow::Borrowed(raw($v))
        };
    }
    #[cfg(not(target_endian = "little"))]
    macro_rules! le {
        ($v:expr) => {
            Cow::Owned($v.iter().flat_map(|x| x.to_le_bytes()).collect())
        };
    }
    match b {
        Buf::F64(v) => le!(v),
        Buf::F32(v) => le!(v),
        Buf::F16(v) => le!(v),
        Buf::BF16(v) => le!(v),
        Buf::I64(v) => le!(v),
        Buf::I32(v) => le!(v),
        Buf::I16(v) => le!(v),
        Buf::I8(v) => le!(v),
        Buf::U64(v) => le!(v),
        Buf::U32(v) => le!(v),
        Buf::U16(v) => le!(v),
        Buf::U8(v) => le!(v),
        Buf::Pred(v) => Cow::Owned(v.iter().map(|&x| x as u8).collect()),
    }
}

/// Elements of dtype `d` from little-endian bytes (pred: any non-zero byte is
/// true). Fails when the length is not a whole number of elements.
pub fn buf_from_le_bytes(d: DType, bytes: &[u8]) -> Result<Buf, String> {
    let size = d.size_bytes();
    if bytes.len() % size != 0 {
        return Err(format!("{} bytes are not a whole number of {d} elements", bytes.len()));
    }
    #[cfg(target_endian = "little")]
    macro_rules! from {
        ($t:ty) => {{
            let n = bytes.len() / size;
            let mut v: Vec<$t> = Vec::with_capacity(n);
            // SAFETY: n elements of capacity, filled with n·size bytes; every
            // bit pattern is a valid value of these number types, and on a
            // little-endian machine their layout is the encoding.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), v.as_mut_ptr() as *mut u8, n * size);
                v.set_len(n);
            }
            v
        }};
    }
    #[cfg(not(target_endian = "little"))]
    macro_rules! from {
        ($t:ty) => {
            bytes
                .chunks_exact(size)
                .map(|c| <$t>::from_le_bytes(c.try_into().expect("chunks_exact yields whole elements")))
                .collect()
        };
    }
    Ok(match d {
        DType::F64 => Buf::F64(from!(f64)),
        DType::F32 => Buf::F32(from!(f32)),
        DType::F16 => Buf::F16(from!(f16)),
        DType::BF16 => Buf::BF16(from!(bf16)),
        DType::I64 => Buf::I64(from!(i64)),
        DType::I32 => Buf::I32(from!(i32)),
        DType::I16 => Buf::I16(from!(i16)),
        DType::I8 => Buf::I8(from!(i8)),
        DType::U64 => Buf::U64(from!(u64)),
        DType::U32 => Buf::U32(from!(u32)),
        DType::U16 => Buf::U16(from!(u16)),
        DType::U8 => Buf::U8(from!(u8)),
        DType::Pred => Buf::Pred(bytes.iter().map(|&b| b != 0).collect()),
    })
}

/// An OS error without Rust's " (os error N)" suffix.
fn os_msg(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, TensorError> {
    std::fs::read(path).map_err(|e| TensorError::Io(format!("cannot read '{}': {}", path.display(), os_msg(&e))))
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), TensorError> {
    write_atomically(path, |f| f.write_all(bytes)).map_err(TensorError::Io)
}

/// Writes the file `path` whole or not at all: `fill` writes a new temporary
/// file in the same directory (`.NAME.pjc-tmp-PID-N`), which is fsynced and
/// then renamed over `path`. When anything fails (a full disk, a crash before
/// the rename) `path` keeps its earlier contents, if it had any, and the
/// temporary is removed. The one way every output of pjc and of its
/// executables is written. Errors are one line: `cannot write 'PATH': WHY`.
pub fn write_atomically(path: &Path, fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>) -> Result<(), String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let fail = |e: &std::io::Error| format!("cannot write '{}': {}", path.display(), os_msg(e));
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let Some(name) = path.file_name() else {
        return Err(format!("cannot write '{}': it names no file", path.display()));
    };
    if path.is_dir() {
        return Err(format!("cannot write '{}': it is a directory", path.display()));
    }
    let tmp = dir.join(format!(".{}.pjc-tmp-{}-{}", name.to_string_lossy(), std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp).map_err(|e| fail(&e))?;
    let r = fill(&mut f).and_then(|_| f.sync_all());
    drop(f);
    if let Err(e) = r.and_then(|_| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(&e));
    }
    // Make the rename itself durable (best effort: not every file system
    // lets a directory be opened and synced).
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Writes results (spec section 10's `--output`): one `.safetensors` file, or
/// a directory of `NAME.npy` (created if missing). Each file is written with
/// [`write_atomically`]: a failure leaves every file either as it was or
/// complete, and no temporaries.
pub fn write_outputs(path: &Path, named: &[(String, Tensor)]) -> Result<(), TensorError> {
    let mkdir = |dir: &Path, what: &str| {
        std::fs::create_dir_all(dir).map_err(|e| TensorError::Io(format!("cannot create {what}'{}': {}", dir.display(), os_msg(&e))))
    };
    if path.extension().is_some_and(|e| e == "safetensors") {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            mkdir(dir, "")?;
        }
        return write_safetensors(path, named);
    }
    mkdir(path, "output directory ")?;
    for (name, t) in named {
        write_npy(&path.join(format!("{name}.npy")), t)?;
    }
    Ok(())
}

// ---- .npy -------------------------------------------------------------------------

/// Reads a `.npy` file: dtypes f64 f32 f16 i64..i8 u64..u8 bool, either byte
/// order, C or Fortran order (Fortran-order arrays are transposed into row-major
/// order on reading). Shape `()` gives a scalar (shape `[]`).
pub fn read_npy(path: &Path) -> Result<Tensor, TensorError> {
    let bytes = read_file(path)?;
    npy_from_bytes(&bytes).map_err(|m| TensorError::Io(format!("'{}' {m}", path.display())))
}

/// Writes a `.npy` file (little-endian, C order). bf16 is written as f32, which
/// is exact (spec section 11: `.npy` has no bf16).
pub fn write_npy(path: &Path, t: &Tensor) -> Result<(), TensorError> {
    let bytes = npy_to_bytes(t).map_err(|e| TensorError::Io(format!("cannot write '{}': {e}", path.display())))?;
    write_file(path, &bytes)
}

/// The PIR dtype of an npy type string, if PIR has one.
fn npy_dtype(t: &npyz::TypeStr) -> Option<DType> {
    Some(match (t.type_char(), t.size_field()) {
        (TypeChar::Float, 8) => DType::F64,
        (TypeChar::Float, 4) => DType::F32,
        (TypeChar::Float, 2) => DType::F16,
        (TypeChar::Int, 8) => DType::I64,
        (TypeChar::Int, 4) => DType::I32,
        (TypeChar::Int, 2) => DType::I16,
        (TypeChar::Int, 1) => DType::I8,
        (TypeChar::Uint, 8) => DType::U64,
        (TypeChar::Uint, 4) => DType::U32,
        (TypeChar::Uint, 2) => DType::U16,
        (TypeChar::Uint, 1) => DType::U8,
        (TypeChar::Bool, 1) => DType::Pred,
        _ => return None,
    })
}

/// A guard, not a parser: npyz multiplies the header's shape dimensions without
/// checking for overflow, which panics in debug builds (and would print a panic
/// message even if caught). Finds the `'shape'` tuple in the header text and
/// checks that the product of the numbers in it fits in a u64. Anything it does
/// not recognise is left to npyz.
fn shape_product_fits(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(1 << 20)];
    let Some(at) = head.windows(7).position(|w| w == b"'shape'" || w == b"\"shape\"") else {
        return true;
    };
    let rest = &head[at + 7..];
    let tuple = &rest[..rest.iter().position(|&c| c == b')').unwrap_or(rest.len())];
    let mut product: Option<u64> = Some(1);
    for num in tuple.split(|c| !c.is_ascii_digit()).filter(|n| !n.is_empty()) {
        let n = std::str::from_utf8(num).ok().and_then(|n| n.parse::<u64>().ok());
        product = product.zip(n).and_then(|(p, n)| p.checked_mul(n));
    }
    product.is_some()
}

/// Parses `.npy` bytes. Errors are the part of a message after the file name.
fn npy_from_bytes(bytes: &[u8]) -> Result<Tensor, String> {
    let bad = |e: &dyn std::fmt::Display| format!("is not a valid .npy file: {e}");
    if !shape_product_fits(bytes) {
        return Err(bad(&"the header's shape is too large"));
    }
    let mut cur = std::io::Cursor::new(bytes);
    // Should anything else in npyz panic on a corrupt header, contain it.
    let header = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| NpyHeader::from_reader(&mut cur)))
        .map_err(|_| bad(&"the header is malformed"))?
        .map_err(|e| bad(&e))?;
    let data = &bytes[cur.position() as usize..];
    let ts = match header.dtype() {
        npyz::DType::Plain(ts) => ts,
        other => return Err(format!("holds the structured dtype {}, which PIR does not have", other.descr())),
    };
    let d = npy_dtype(&ts).ok_or_else(|| format!("holds dtype {ts}, which PIR does not have"))?;
    let file_shape: Vec<usize> = header
        .shape()
        .iter()
        .map(|&x| usize::try_from(x).ok())
        .collect::<Option<_>>()
        .ok_or_else(|| bad(&"the shape is too large"))?;
    let need = file_shape
        .iter()
        .try_fold(d.size_bytes(), |a, &x| a.checked_mul(x))
        .ok_or_else(|| bad(&"the shape is too large"))?;
    if data.len() < need {
        return Err(format!(
            "is truncated: its header promises {need} bytes of {ts} data, but only {} follow",
            data.len()
        ));
    }
    let data = &data[..need];
    fn typed<T: npyz::Deserialize>(h: NpyHeader, data: &[u8]) -> Result<Vec<T>, String> {
        NpyFile::with_header(h, data).into_vec::<T>().map_err(|e| format!("is not a valid .npy file: {e}"))
    }
    let order = header.order();
    let buf = match d {
        DType::F64 => Buf::F64(typed(header, data)?),
        DType::F32 => Buf::F32(typed(header, data)?),
        // npyz reads f16 only with its "half" feature; the elements are plain
        // 2-byte words in the file's byte order.
        DType::F16 => Buf::F16(
            data.chunks_exact(2)
                .map(|c| {
                    let w = [c[0], c[1]];
                    f16::from_bits(if ts.endianness() == Endianness::Big {
                        u16::from_be_bytes(w)
                    } else {
                        u16::from_le_bytes(w)
                    })
                })
                .collect(),
        ),
        DType::I64 => Buf::I64(typed(header, data)?),
        DType::I32 => Buf::I32(typed(header, data)?),
        DType::I16 => Buf::I16(typed(header, data)?),
        DType::I8 => Buf::I8(typed(header, data)?),
        DType::U64 => Buf::U64(typed(header, data)?),
        DType::U32 => Buf::U32(typed(header, data)?),
        DType::U16 => Buf::U16(typed(header, data)?),
        DType::U8 => Buf::U8(typed(header, data)?),
        DType::Pred => Buf::Pred(typed(header, data)?),
        DType::BF16 => unreachable!("npy has no bf16"),
    };
    if order == Order::Fortran && file_shape.len() > 1 {
        // Fortran order is C order of the reversed shape.
        let rev: Vec<usize> = file_shape.iter().rev().copied().collect();
        let perm: Vec<usize> = (0..rev.len()).rev().collect();
        return transpose(&Tensor::new(rev, buf), &perm).map_err(|e| e.to_string());
    }
    Ok(Tensor::new(file_shape, buf))
}

fn npy_to_bytes(t: &Tensor) -> std::io::Result<Vec<u8>> {
    let shape: Vec<u64> = t.shape.iter().map(|&x| x as u64).collect();
    let mut out = Vec::new();
    fn typed<T: npyz::Serialize + Copy>(out: &mut Vec<u8>, descr: &str, shape: &[u64], v: &[T]) -> std::io::Result<()> {
        let dtype = npyz::DType::new_scalar(descr.parse().expect("a valid type string"));
        let mut w = npyz::WriteOptions::new().dtype(dtype).shape(shape).writer(out).begin_nd()?;
        w.extend(v.iter().copied())?;
        w.finish()
    }
    match &t.data {
        Buf::F64(v) => typed(&mut out, "<f8", &shape, v)?,
        Buf::F32(v) => typed(&mut out, "<f4", &shape, v)?,
        Buf::BF16(v) => typed(&mut out, "<f4", &shape, &v.iter().map(|x| x.to_f32()).collect::<Vec<_>>())?,
        Buf::F16(v) => {
            // The header by npyz; the elements (which npyz writes only with its
            // "half" feature) as little-endian words.
            let dtype = npyz::DType::new_scalar("<f2".parse().expect("a valid type string"));
            npyz::WriteOptions::new_header_only().dtype(dtype).shape(&shape).writer(&mut out).write_header_only()?;
            out.extend(v.iter().flat_map(|x| x.to_le_bytes()));
        }
        Buf::I64(v) => typed(&mut out, "<i8", &shape, v)?,
        Buf::I32(v) => typed(&mut out, "<i4", &shape, v)?,
        Buf::I16(v) => typed(&mut out, "<i2", &shape, v)?,
        Buf::I8(v) => typed(&mut out, "|i1", &shape, v)?,
        Buf::U64(v) => typed(&mut out, "<u8", &shape, v)?,
        Buf::U32(v) => typed(&mut out, "<u4", &shape, v)?,
        Buf::U16(v) => typed(&mut out, "<u2", &shape, v)?,
        Buf::U8(v) => typed(&mut out, "|u1", &shape, v)?,
        Buf::Pred(v) => typed(&mut out, "|b1", &shape, v)?,
    }
    Ok(out)
}

// ---- .safetensors -------------------------------------------------------------------

fn st_dtype(d: StDtype) -> Option<DType> {
    Some(match d {
        StDtype::F64 => DType::F64,
        StDtype::F32 => DType::F32,
        StDtype::F16 => DType::F16,
        StDtype::BF16 => DType::BF16,
        StDtype::I64 => DType::I64,
        StDtype::I32 => DType::I32,
        StDtype::I16 => DType::I16,
        StDtype::I8 => DType::I8,
        StDtype::U64 => DType::U64,
        StDtype::U32 => DType::U32,
        StDtype::U16 => DType::U16,
        StDtype::U8 => DType::U8,
        StDtype::BOOL => DType::Pred,
        _ => return None,
    })
}

fn to_st_dtype(d: DType) -> StDtype {
    match d {
        DType::F64 => StDtype::F64,
        DType::F32 => StDtype::F32,
        DType::F16 => StDtype::F16,
        DType::BF16 => StDtype::BF16,
        DType::I64 => StDtype::I64,
        DType::I32 => StDtype::I32,
        DType::I16 => StDtype::I16,
        DType::I8 => StDtype::I8,
        DType::U64 => StDtype::U64,
        DType::U32 => StDtype::U32,
        DType::U16 => StDtype::U16,
        DType::U8 => StDtype::U8,
        DType::Pred => StDtype::BOOL,
    }
}

/// Reads every tensor of a `.safetensors` file, in the order of their data in
/// the file.
pub fn read_safetensors(path: &Path) -> Result<Vec<(String, Tensor)>, TensorError> {
    let bytes = read_file(path)?;
    safetensors_from_bytes(&bytes).map_err(|m| TensorError::Io(format!("'{}' {m}", path.display())))
}

/// Writes tensors to a `.safetensors` file (names must be distinct).
pub fn write_safetensors(path: &Path, tensors: &[(String, Tensor)]) -> Result<(), TensorError> {
    let bytes = safetensors_to_bytes(tensors)
        .map_err(|e| TensorError::Io(format!("cannot write '{}': {e}", path.display())))?;
    write_file(path, &bytes)
}

fn safetensors_from_bytes(bytes: &[u8]) -> Result<Vec<(String, Tensor)>, String> {
    let bad = |e: &dyn std::fmt::Display| format!("is not a valid .safetensors file: {e}");
    let st = SafeTensors::deserialize(bytes).map_err(|e| bad(&e))?;
    let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| bad(&e))?;
    let mut out = vec![];
    for name in meta.offset_keys() {
        let view = st.tensor(&name).map_err(|e| bad(&e))?;
        let d = st_dtype(view.dtype())
            .ok_or_else(|| format!("holds dtype {} (tensor '{name}'), which PIR does not have", view.dtype()))?;
        let buf = buf_from_le_bytes(d, view.data()).map_err(|e| bad(&e))?;
        if buf.len() != view.shape().iter().product::<usize>() {
            return Err(bad(&format!("tensor '{name}' has the wrong number of bytes")));
        }
        out.push((name, Tensor::new(view.shape().to_vec(), buf)));
    }
    Ok(out)
}

/// The bytes of a `.safetensors` file holding `tensors` (names must be distinct).
pub fn safetensors_to_bytes(tensors: &[(String, Tensor)]) -> Result<Vec<u8>, String> {
    for (i, (name, _)) in tensors.iter().enumerate() {
        if tensors[..i].iter().any(|(n, _)| n == name) {
            return Err(format!("the tensor name '{name}' appears twice"));
        }
    }
    let bytes: Vec<Vec<u8>> = tensors.iter().map(|(_, t)| buf_to_le_bytes(&t.data)).collect();
    let views = tensors
        .iter()
        .zip(&bytes)
        .map(|((name, t), b)| {
            safetensors::tensor::TensorView::new(to_st_dtype(t.dtype()), t.shape.clone(), b)
                .map(|v| (name.as_str(), v))
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    safetensors::serialize(views, None).map_err(|e| e.to_string())
}

// ---- raw layouts (for readers that take one block of a mapped file) ---------------

/// Where a tensor's elements lie in a file, when they are stored little-endian
/// and row-major: a reader can then copy any block of it straight from the
/// file's bytes (e.g. a memory map) without decoding the rest.
#[derive(Clone, Debug, PartialEq)]
pub struct RawLayout {
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// Byte offset of the first element in the file.
    pub offset: usize,
}

impl RawLayout {
    pub fn byte_len(&self) -> usize {
        self.shape.iter().product::<usize>() * self.dtype.size_bytes()
    }
}

/// The layout of a `.npy` file's array, `Ok(None)` when its elements are
/// stored another way (big-endian, Fortran order: decode it whole with
/// [`decode_npy`]). Errors are the part of a message after the file name.
pub fn npy_layout(bytes: &[u8]) -> Result<Option<RawLayout>, String> {
    let bad = |e: &dyn std::fmt::Display| format!("is not a valid .npy file: {e}");
    if !shape_product_fits(bytes) {
        return Err(bad(&"the header's shape is too large"));
    }
    let mut cur = std::io::Cursor::new(bytes);
    let header = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| NpyHeader::from_reader(&mut cur)))
        .map_err(|_| bad(&"the header is malformed"))?
        .map_err(|e| bad(&e))?;
    let offset = cur.position() as usize;
    let ts = match header.dtype() {
        npyz::DType::Plain(ts) => ts,
        other => return Err(format!("holds the structured dtype {}, which PIR does not have", other.descr())),
    };
    let d = npy_dtype(&ts).ok_or_else(|| format!("holds dtype {ts}, which PIR does not have"))?;
    let shape: Vec<usize> = header
        .shape()
        .iter()
        .map(|&x| usize::try_from(x).ok())
        .collect::<Option<_>>()
        .ok_or_else(|| bad(&"the shape is too large"))?;
    let need = shape.iter().try_fold(d.size_bytes(), |a, &x| a.checked_mul(x)).ok_or_else(|| bad(&"the shape is too large"))?;
    if bytes.len() - offset < need {
        return Err(format!("is truncated: its header promises {need} bytes of {ts} data, but only {} follow", bytes.len() - offset));
    }
    let big = ts.endianness() == Endianness::Big && d.size_bytes() > 1;
    if big || (header.order() == Order::Fortran && shape.len() > 1) {
        return Ok(None);
    }
    Ok(Some(RawLayout { dtype: d, shape, offset }))
}

/// Decodes a whole `.npy` file's bytes (any byte order or memory order).
pub fn decode_npy(bytes: &[u8]) -> Result<Tensor, String> {
    npy_from_bytes(bytes)
}

/// The layouts of every tensor of a `.safetensors` file, in the order of
/// their data in the file.
pub fn safetensors_layouts(bytes: &[u8]) -> Result<Vec<(String, RawLayout)>, String> {
    let bad = |e: &dyn std::fmt::Display| format!("is not a valid .safetensors file: {e}");
    let (header_len, meta) = SafeTensors::read_metadata(bytes).map_err(|e| bad(&e))?;
    let base = 8 + header_len;
    let mut out = vec![];
    for name in meta.offset_keys() {
        let info = meta.info(&name).ok_or_else(|| bad(&format!("tensor '{name}' has no entry")))?;
        let d = st_dtype(info.dtype)
            .ok_or_else(|| format!("holds dtype {} (tensor '{name}'), which PIR does not have", info.dtype))?;
        let (a, b) = info.data_offsets;
        let l = RawLayout { dtype: d, shape: info.shape.clone(), offset: base + a };
        if b < a || base + b > bytes.len() || l.byte_len() != b - a {
            return Err(bad(&format!("tensor '{name}' has the wrong number of bytes")));
        }
        out.push((name, l));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pjc-tensor-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    /// One tensor of every dtype, shape [2, 3, 1] (odd sizes), with values that
    /// exercise signs, extremes, NaN and -0.0.
    fn samples() -> Vec<Tensor> {
        let sh = vec![2, 3, 1];
        let f = [0.5, -0.0, f64::NAN, f64::INFINITY, -3.25, 1e-7];
        let mut out = vec![];
        for d in DType::ALL {
            let data = if d.is_float() {
                Buf::from_f64(d, &f)
            } else if let Some((lo, hi)) = d.int_range() {
                Buf::from_i128(d, &[lo, hi, 0, 1, -1, 7])
            } else {
                Buf::Pred(vec![true, false, false, true, true, false])
            };
            out.push(Tensor::new(sh.clone(), data));
        }
        out
    }

    /// Bitwise equality (NaN == NaN, -0.0 != 0.0).
    fn same_bits(a: &Tensor, b: &Tensor) -> bool {
        a.shape == b.shape && a.dtype() == b.dtype() && buf_to_le_bytes(&a.data) == buf_to_le_bytes(&b.data)
    }

    fn io_msg(r: Result<impl std::fmt::Debug, TensorError>) -> String {
        match r {
            Err(TensorError::Io(m)) => m,
            other => panic!("expected an I/O error, got {other:?}"),
        }
    }

    #[test]
    fn npy_round_trips_every_dtype() {
        for t in samples() {
            let p = tmp(&format!("rt_{}.npy", t.dtype()));
            write_npy(&p, &t).unwrap();
            let back = read_npy(&p).unwrap();
            if t.dtype() == DType::BF16 {
                // Written as f32, exactly.
                assert_eq!(back.dtype(), DType::F32);
                let Buf::BF16(v) = &t.data else { panic!() };
                let want = Tensor::new(t.shape.clone(), Buf::F32(v.iter().map(|x| x.to_f32()).collect()));
                assert!(same_bits(&back, &want));
            } else {
                assert!(same_bits(&back, &t), "{}: {back:?} vs {t:?}", t.dtype());
            }
        }
    }

    #[test]
    fn npy_scalars_and_header_text() {
        let t = Tensor::new(vec![], Buf::I32(vec![-7]));
        let bytes = npy_to_bytes(&t).unwrap();
        let text = String::from_utf8_lossy(&bytes[10..]);
        assert!(text.contains("'descr': '<i4'") && text.contains("'shape': ()"), "{text}");
        assert_eq!(npy_from_bytes(&bytes).unwrap(), t);
        let f16t = Tensor::new(vec![], Buf::F16(vec![f16::from_f32(1.5)]));
        let bytes = npy_to_bytes(&f16t).unwrap();
        assert!(String::from_utf8_lossy(&bytes).contains("'<f2'"));
        assert_eq!(&bytes[bytes.len() - 2..], &[0x00, 0x3e]);
        assert_eq!(npy_from_bytes(&bytes).unwrap(), f16t);
    }

    /// An npy file with any type string, built with npyz's header writer.
    fn npy_with(descr: &str, shape: &[u64], order: Order, data: &[u8]) -> Vec<u8> {
        let mut out = vec![];
        let dtype = npyz::DType::new_scalar(descr.parse().unwrap());
        npyz::WriteOptions::new_header_only()
            .dtype(dtype)
            .shape(shape)
            .order(order)
            .writer(&mut out)
            .write_header_only()
            .unwrap();
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn npy_big_endian_and_fortran_order() {
        let b = npy_with(">i4", &[2], Order::C, &[0, 0, 1, 2, 0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(npy_from_bytes(&b).unwrap().data, Buf::I32(vec![0x102, -2]));
        let b = npy_with(">f2", &[1], Order::C, &[0x3e, 0x00]);
        assert_eq!(npy_from_bytes(&b).unwrap().data, Buf::F16(vec![f16::from_f32(1.5)]));
        // Fortran order: the file lists column 0 first.
        let b = npy_with("|u1", &[2, 3], Order::Fortran, &[1, 4, 2, 5, 3, 6]);
        let t = npy_from_bytes(&b).unwrap();
        assert_eq!(t.shape, [2, 3]);
        assert_eq!(t.data, Buf::U8(vec![1, 2, 3, 4, 5, 6]));
        let b = npy_with("|u1", &[2, 1, 3], Order::Fortran, &[1, 4, 2, 5, 3, 6]);
        assert_eq!(npy_from_bytes(&b).unwrap().data, Buf::U8(vec![1, 2, 3, 4, 5, 6]));
    }

    #[test]
    fn npy_corrupt_files_give_clear_errors() {
        let good = npy_to_bytes(&Tensor::new(vec![3, 1], Buf::F32(vec![1.0, 2.0, 3.0]))).unwrap();
        let m = npy_from_bytes(&good[..good.len() - 1]).unwrap_err();
        assert!(m.starts_with("is truncated"), "{m}");
        for cut in [0, 5, 9, 20, 60] {
            let m = npy_from_bytes(&good[..cut]).unwrap_err();
            assert!(m.starts_with("is not a valid .npy file"), "{cut}: {m}");
        }
        let m = npy_from_bytes(b"garbage garbage garbage garbage garbage garbage garbage").unwrap_err();
        assert!(m.starts_with("is not a valid .npy file"), "{m}");
        let mut bad_header = good.clone();
        bad_header[20] = b'!';
        assert!(npy_from_bytes(&bad_header).is_err());
        // Every single-byte corruption of the header is an error or a tensor, never a panic.
        for i in 0..good.len() {
            for v in [0u8, b'(', b'9', 0xff] {
                let mut b = good.clone();
                b[i] = v;
                let _ = npy_from_bytes(&b);
            }
        }
        let m = npy_from_bytes(&npy_with("<c8", &[1], Order::C, &[0; 8])).unwrap_err();
        assert_eq!(m, "holds dtype <c8, which PIR does not have");
        let m = npy_from_bytes(&npy_with("<f16", &[1], Order::C, &[0; 16])).unwrap_err();
        assert!(m.contains("which PIR does not have"), "{m}");
        // Shapes whose element count or byte size overflows.
        let text = |b: &[u8]| String::from_utf8_lossy(b).replace("1000000000000, 1000000", "9999999999999,99999999");
        let huge = text(&npy_with("<f8", &[1_000_000_000_000, 1_000_000], Order::C, &[]));
        assert!(huge.contains("9999999999999,99999999"));
        assert_eq!(
            npy_from_bytes(huge.as_bytes()).unwrap_err(),
            "is not a valid .npy file: the header's shape is too large"
        );
        let huge = npy_with("<f8", &[1 << 40, 1 << 23], Order::C, &[]);
        assert!(npy_from_bytes(&huge).unwrap_err().contains("too large"));
        let huge = npy_with("<f8", &[1 << 20, 1 << 20], Order::C, &[0; 8]);
        assert!(npy_from_bytes(&huge).unwrap_err().starts_with("is truncated"));
        // bool bytes other than 0 and 1.
        let m = npy_from_bytes(&npy_with("|b1", &[2], Order::C, &[1, 7])).unwrap_err();
        assert!(m.starts_with("is not a valid .npy file"), "{m}");
    }

    #[test]
    fn npy_file_errors_name_the_file() {
        let p = tmp("does_not_exist.npy");
        let m = io_msg(read_npy(&p));
        assert_eq!(m, format!("cannot read '{}': No such file or directory", p.display()));
        let p = tmp("corrupt.npy");
        std::fs::write(&p, b"\x93NUMPY\x01\x00garbage").unwrap();
        let m = io_msg(read_npy(&p));
        assert!(m.starts_with(&format!("'{}' is not a valid .npy file: ", p.display())), "{m}");
        assert!(!m.contains('\n'));
        let m = io_msg(write_npy(&tmp("no_such_dir").join("x.npy"), &Tensor::new(vec![], Buf::U8(vec![1]))));
        assert!(m.starts_with("cannot write '") && m.ends_with("No such file or directory"), "{m}");
    }

    #[test]
    fn safetensors_round_trips_every_dtype() {
        let ts: Vec<(String, Tensor)> = samples().into_iter().map(|t| (format!("t_{}", t.dtype()), t)).collect();
        let p = tmp("all.safetensors");
        write_safetensors(&p, &ts).unwrap();
        let back = read_safetensors(&p).unwrap();
        assert_eq!(back.len(), ts.len());
        for (name, t) in &ts {
            let (_, b) = back.iter().find(|(n, _)| n == name).unwrap();
            assert!(same_bits(b, t), "{name}");
        }
        // Scalars and an empty file.
        let p = tmp("scalar.safetensors");
        let s = vec![("s".to_string(), Tensor::new(vec![], Buf::BF16(vec![bf16::from_f32(-2.5)])))];
        write_safetensors(&p, &s).unwrap();
        assert_eq!(read_safetensors(&p).unwrap(), s);
        write_safetensors(&p, &[]).unwrap();
        assert!(read_safetensors(&p).unwrap().is_empty());
        let m = io_msg(write_safetensors(&p, &[s[0].clone(), s[0].clone()]));
        assert!(m.contains("appears twice"), "{m}");
    }

    /// A safetensors file from a hand-written JSON header.
    fn st_raw(json: &str, data: &[u8]) -> Vec<u8> {
        let mut b = (json.len() as u64).to_le_bytes().to_vec();
        b.extend_from_slice(json.as_bytes());
        b.extend_from_slice(data);
        b
    }

    #[test]
    fn safetensors_corrupt_files_give_clear_errors() {
        let good = safetensors_to_bytes(&[("w".into(), Tensor::new(vec![2], Buf::F32(vec![1.0, 2.0])))]).unwrap();
        assert_eq!(safetensors_from_bytes(&good).unwrap().len(), 1);
        for cut in [0, 4, 8, 12, good.len() - 1] {
            let m = safetensors_from_bytes(&good[..cut]).unwrap_err();
            assert!(m.starts_with("is not a valid .safetensors file: "), "{cut}: {m}");
        }
        for i in 0..good.len() {
            for v in [0u8, b'"', b'9', 0xff] {
                let mut b = good.clone();
                b[i] = v;
                let _ = safetensors_from_bytes(&b);
            }
        }
        assert!(safetensors_from_bytes(&[0xff; 64]).is_err());
        let f8 = st_raw(r#"{"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}}"#, &[0, 0]);
        assert_eq!(
            safetensors_from_bytes(&f8).unwrap_err(),
            "holds dtype F8_E4M3 (tensor 'w'), which PIR does not have"
        );
        let short = st_raw(r#"{"w":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}}"#, &[0; 7]);
        assert!(safetensors_from_bytes(&short).is_err());
        let p = tmp("w.safetensors");
        std::fs::write(&p, &f8).unwrap();
        let m = io_msg(read_safetensors(&p));
        assert_eq!(m, format!("'{}' holds dtype F8_E4M3 (tensor 'w'), which PIR does not have", p.display()));
        let m = io_msg(read_safetensors(&tmp("missing.safetensors")));
        assert!(m.starts_with("cannot read '") && m.ends_with("': No such file or directory"), "{m}");
    }

    #[test]
    fn safetensors_keeps_file_order() {
        let t = |x: i64| Tensor::new(vec![1], Buf::I64(vec![x]));
        let b = st_raw(
            r#"{"z":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},"a":{"dtype":"I64","shape":[1],"data_offsets":[8,16]}}"#,
            &[1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0],
        );
        assert_eq!(safetensors_from_bytes(&b).unwrap(), vec![("z".to_string(), t(1)), ("a".to_string(), t(2))]);
    }

    /// The names in `dir`, sorted.
    fn names_in(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect();
        v.sort();
        v
    }

    #[test]
    fn a_failed_write_leaves_the_earlier_file_and_no_temporary() {
        let dir = tmp("atomic");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("out.safetensors");
        let first = vec![("w".to_string(), Tensor::new(vec![2], Buf::F32(vec![1.0, 2.0])))];
        write_safetensors(&out, &first).unwrap();
        let before = std::fs::read(&out).unwrap();
        // A writer that gets part of the way and then finds the disk full.
        let m = write_atomically(&out, |f| {
            f.write_all(&before[..before.len() / 2])?;
            Err(std::io::Error::from_raw_os_error(libc_enospc()))
        })
        .unwrap_err();
        assert_eq!(m, format!("cannot write '{}': No space left on device", out.display()));
        assert_eq!(std::fs::read(&out).unwrap(), before, "the earlier result is untouched");
        assert_eq!(names_in(&dir), ["out.safetensors"], "no temporary is left");
        // A successful write replaces it whole.
        write_atomically(&out, |f| f.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        assert_eq!(names_in(&dir), ["out.safetensors"]);
        // A directory in the way (of a file in a directory of .npy outputs).
        let npys = dir.join("npys");
        std::fs::create_dir_all(npys.join("b.npy")).unwrap();
        let t = Tensor::new(vec![1], Buf::I32(vec![7]));
        let m = io_msg(write_outputs(&npys, &[("a".into(), t.clone()), ("b".into(), t.clone())]));
        assert!(m.starts_with("cannot write '") && m.contains("b.npy") && !m.contains('\n'), "{m}");
        assert_eq!(read_npy(&npys.join("a.npy")).unwrap(), t);
        assert_eq!(names_in(&npys), ["a.npy", "b.npy"], "no temporary is left");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// ENOSPC on Linux.
    fn libc_enospc() -> i32 {
        28
    }

    #[test]
    fn le_bytes_round_trip() {
        for t in samples() {
            let b = buf_to_le_bytes(&t.data);
            assert_eq!(b.len(), t.len() * t.dtype().size_bytes());
            assert!(same_bits(&Tensor::new(t.shape.clone(), buf_from_le_bytes(t.dtype(), &b).unwrap()), &t));
        }
        assert!(buf_from_le_bytes(DType::I32, &[0; 6]).is_err());
        assert_eq!(buf_from_le_bytes(DType::I16, &[1, 0x80]).unwrap(), Buf::I16(vec![-32767]));
    }
}

/// One tensor for an input named `name`: a `.npy` file, or a `.safetensors`
/// file holding a tensor called `name` (or exactly one tensor).
pub fn read_named(name: &str, path: &Path) -> Result<Tensor, TensorError> {
    if path.extension().is_some_and(|e| e == "safetensors") {
        let mut all = read_safetensors(path)?;
        if let Some(i) = all.iter().position(|(n, _)| n == name) {
            return Ok(all.swap_remove(i).1);
        }
        if all.len() == 1 {
            return Ok(all.pop().unwrap().1);
        }
        return Err(TensorError::Io(format!(
            "'{}' holds no tensor named '{name}' (it holds {})",
            path.display(),
            all.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
        )));
    }
    read_npy(path)
}
