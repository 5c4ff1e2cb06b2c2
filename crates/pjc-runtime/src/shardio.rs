//! Reading only this rank's part of an input file: the file is memory-mapped
//! and the shard's block (or, for datasets, the step's rows) is copied out of
//! the mapping, so a rank touches the pages of its own shard and never holds
//! the whole array unless its shard is the whole array. Arrays a `.npy` file
//! stores big-endian or in Fortran order are decoded whole (rare; said in
//! docs/executable.md).

use crate::error::io_reason;
use crate::pack::extract_block;
use crate::RuntimeError;
use memmap2::Mmap;
use pjc_ir::DType;
use pjc_tensor::{RawLayout, Tensor};
use std::path::Path;
use std::sync::Arc;

/// One array in a file, mapped (or decoded, when not stored row-major LE).
#[derive(Clone)]
pub struct Source {
    data: Data,
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// The file, for messages.
    pub path: String,
}

#[derive(Clone)]
enum Data {
    Mapped { map: Arc<Bytes>, offset: usize },
    Whole(Arc<Vec<u8>>),
}

/// A file's bytes: mapped, or read (empty files cannot be mapped).
enum Bytes {
    Map(Mmap),
    Read(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Read(v) => v,
        }
    }
}

fn map_file(path: &Path) -> Result<Arc<Bytes>, RuntimeError> {
    let err = |e: std::io::Error| RuntimeError::Env(format!("cannot read '{}': {}", path.display(), io_reason(&e)));
    let f = std::fs::File::open(path).map_err(err)?;
    let meta = f.metadata().map_err(err)?;
    if meta.is_dir() {
        return Err(RuntimeError::Env(format!("cannot read '{}': it is a directory", path.display())));
    }
    if meta.len() == 0 {
        return Ok(Arc::new(Bytes::Read(vec![])));
    }
    // SAFETY: the mapping is read-only; a file truncated by another process
    // while this one runs would fault, as with any mapped input.
    let m = unsafe { Mmap::map(&f) }.map_err(err)?;
    Ok(Arc::new(Bytes::Map(m)))
}

impl Source {
    fn mapped(map: &Arc<Bytes>, l: RawLayout, path: &Path) -> Source {
        Source { data: Data::Mapped { map: map.clone(), offset: l.offset }, dtype: l.dtype, shape: l.shape, path: path.display().to_string() }
    }

    fn whole(t: Tensor, path: &Path) -> Source {
        Source {
            dtype: t.dtype(),
            shape: t.shape.clone(),
            data: Data::Whole(Arc::new(pjc_tensor::buf_to_le_bytes(&t.data))),
            path: path.display().to_string(),
        }
    }

    fn bytes(&self) -> &[u8] {
        match &self.data {
            Data::Mapped { map, offset } => &map[*offset..*offset + self.byte_len()],
            Data::Whole(v) => v,
        }
    }

    fn byte_len(&self) -> usize {
        self.shape.iter().product::<usize>() * self.dtype.size_bytes()
    }

    /// The block at `start` of extent `size`.
    pub fn block(&self, start: &[usize], size: &[usize]) -> Tensor {
        let es = self.dtype.size_bytes();
        let b = extract_block(self.bytes(), &self.shape, es, start, size);
        Tensor::new(size.to_vec(), pjc_tensor::buf_from_le_bytes(self.dtype, &b).expect("whole elements"))
    }

    /// Rows `rows` of dimension 0 (in that order), each cut to the block at
    /// `start` of extent `size` on the other dimensions.
    pub fn rows(&self, rows: &[usize], start: &[usize], size: &[usize]) -> Tensor {
        let es = self.dtype.size_bytes();
        let row_shape = &self.shape[1..];
        let row_bytes = row_shape.iter().product::<usize>() * es;
        let all = self.bytes();
        let mut out = vec![];
        for &r in rows {
            let row = &all[r * row_bytes..(r + 1) * row_bytes];
            out.extend(extract_block(row, row_shape, es, start, size));
        }
        let mut shape = vec![rows.len()];
        shape.extend(size);
        Tensor::new(shape, pjc_tensor::buf_from_le_bytes(self.dtype, &out).expect("whole elements"))
    }
}

/// Every array of a `.safetensors` file.
pub fn open_safetensors(path: &Path) -> Result<Vec<(String, Source)>, RuntimeError> {
    let map = map_file(path)?;
    let ls = pjc_tensor::safetensors_layouts(&map).map_err(|m| RuntimeError::Env(format!("'{}' {m}", path.display())))?;
    Ok(ls.into_iter().map(|(n, l)| (n, Source::mapped(&map, l, path))).collect())
}

/// The array for input `name`: a `.npy` file, or a `.safetensors` file
/// holding a tensor called `name` (or exactly one tensor).
pub fn open_named(name: &str, path: &Path) -> Result<Source, RuntimeError> {
    if path.extension().is_some_and(|e| e == "safetensors") {
        let mut all = open_safetensors(path)?;
        if let Some(i) = all.iter().position(|(n, _)| n == name) {
            return Ok(all.swap_remove(i).1);
        }
        if all.len() == 1 {
            return Ok(all.pop().unwrap().1);
        }
        let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
        return Err(RuntimeError::Env(format!("'{}' holds no tensor named '{name}' (it holds {})", path.display(), names.join(", "))));
    }
    let map = map_file(path)?;
    let bad = |m: String| RuntimeError::Env(format!("'{}' {m}", path.display()));
    match pjc_tensor::npy_layout(&map).map_err(bad)? {
        Some(l) => Ok(Source::mapped(&map, l, path)),
        None => Ok(Source::whole(pjc_tensor::decode_npy(&map).map_err(bad)?, path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_rows_of_a_mapped_npy() {
        let dir = std::env::temp_dir().join(format!("pjc-shardio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.npy");
        let t = Tensor::new(vec![4, 3], pjc_tensor::Buf::I32((0..12).collect()));
        pjc_tensor::write_npy(&p, &t).unwrap();
        let s = open_named("a", &p).unwrap();
        assert_eq!((s.dtype, s.shape.clone()), (DType::I32, vec![4, 3]));
        assert_eq!(s.block(&[1, 1], &[2, 2]).data, pjc_tensor::Buf::I32(vec![4, 5, 7, 8]));
        // Rows 3 then 0 (a wrapped batch), columns 1..3.
        assert_eq!(s.rows(&[3, 0], &[1], &[2]).data, pjc_tensor::Buf::I32(vec![10, 11, 1, 2]));
        let st = dir.join("b.safetensors");
        pjc_tensor::write_safetensors(&st, &[("x".into(), t.clone()), ("y".into(), t)]).unwrap();
        let s = open_named("y", &st).unwrap();
        assert_eq!(s.block(&[3, 0], &[1, 3]).data, pjc_tensor::Buf::I32(vec![9, 10, 11]));
        assert!(open_named("z", &st).is_err());
        std::fs::write(dir.join("c.npy"), b"").unwrap();
        assert!(matches!(open_named("c", &dir.join("c.npy")), Err(RuntimeError::Env(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
