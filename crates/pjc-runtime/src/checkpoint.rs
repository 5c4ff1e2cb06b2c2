//! Sharded checkpoints of a loop-mode run (docs/training.md).
//!
//! ```text
//! DIR/step-00000040/manifest.json     what the checkpoint holds (below)
//! DIR/step-00000040/rank0.safetensors one file per rank: the blocks it owns
//! DIR/step-00000040/rank1.safetensors ...
//! ```
//!
//! **Writing** (every rank, collectively): rank 0 creates
//! `DIR/.step-00000040.tmp`; each rank writes the blocks of the carried
//! parameters it owns (a replicated block is written once, by the first device
//! holding it) to its own safetensors file and fsyncs it — no rank ever holds
//! more than its own shards; rank 0 gathers every file's size and CRC-32,
//! writes `manifest.json` (fsynced) and publishes the directory with one
//! `rename` (then fsyncs DIR). A crash at any moment leaves either the old
//! set of checkpoints or the old set plus the new one: never a half-written
//! `step-*` directory. `--keep N` then removes all but the newest N.
//!
//! **Reading** (resume, possibly on another mesh): rank 0 picks the newest
//! `step-*` whose manifest parses, names every carried parameter with the
//! right global type, and whose files all exist with the recorded sizes and
//! checksums (damaged ones are skipped with a message); every rank then reads,
//! for each parameter, only the parts of the saved blocks that overlap the
//! block it needs under the *new* sharding (memory-mapped files).

use crate::groups::{is_block_owner, shard_block};
use crate::pack::insert_block;
use crate::shardio::open_safetensors;
use crate::world::{agree, World};
use crate::RuntimeError;
use pjc_ir::{DType, Mesh, Sharding, TensorType};
use pjc_tensor::Tensor;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const FORMAT: &str = "pjc-checkpoint-1";

/// `manifest.json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format: String,
    /// Steps completed: the run resumes at this step.
    pub step: u64,
    /// The mesh of the run that wrote it (`[data=4]`), and its device count.
    pub mesh: String,
    pub devices: u64,
    /// Where the data stream stands: examples per dataset and batch size
    /// (step s reads examples (s·B + i) mod M), when the run had datasets.
    pub data: Option<DataPosition>,
    pub tensors: BTreeMap<String, SavedTensor>,
    pub files: BTreeMap<String, SavedFile>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DataPosition {
    pub examples: u64,
    pub batch: u64,
    /// The next example the data stream reads: (step·B) mod M.
    pub next_example: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SavedTensor {
    pub dtype: String,
    pub shape: Vec<u64>,
    /// The sharding it had (PIR syntax; `replicated` when none).
    pub sharding: String,
    pub blocks: Vec<SavedBlock>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SavedBlock {
    pub file: String,
    pub start: Vec<u64>,
    pub size: Vec<u64>,
}

impl SavedBlock {
    /// Whether the block lies inside an array of `shape` (checked arithmetic:
    /// the numbers come from a file).
    fn inside(&self, shape: &[u64]) -> bool {
        self.start.len() == shape.len()
            && self.size.len() == shape.len()
            && self.start.iter().zip(&self.size).zip(shape).all(|((s, z), d)| s.checked_add(*z).is_some_and(|e| e <= *d))
    }

    /// Why the tensor saved for it (`dtype`, `shape`) is not this block of
    /// parameter `name` of element type `want`; `None` when it is.
    fn mismatch(&self, name: &str, dtype: DType, shape: &[usize], want: DType) -> Option<String> {
        let got: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        (dtype != want || got != self.size).then(|| {
            format!(
                "{}'s block of '{name}' is {}, its manifest says {}",
                self.file,
                TensorType::new(dtype, got),
                TensorType::new(want, self.size.clone())
            )
        })
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SavedFile {
    pub bytes: u64,
    pub crc32: u32,
}

/// One carried parameter as the checkpoint sees it.
pub struct Carried<'a> {
    pub name: &'a str,
    /// Global type.
    pub ty: TensorType,
    pub sharding: Option<&'a Sharding>,
}

fn io(path: &Path, what: &str, e: std::io::Error) -> RuntimeError {
    RuntimeError::Env(format!("cannot {what} '{}': {}", path.display(), crate::error::io_reason(&e)))
}

pub fn step_dir(dir: &Path, step: u64) -> PathBuf {
    dir.join(format!("step-{step:08}"))
}

fn tmp_dir(dir: &Path, step: u64) -> PathBuf {
    dir.join(format!(".step-{step:08}.tmp"))
}

fn fsync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), RuntimeError> {
    pjc_tensor::write_atomically(path, |f| f.write_all(bytes)).map_err(RuntimeError::Env)
}

fn sharding_text(s: Option<&Sharding>) -> String {
    s.map_or_else(|| "replicated".to_string(), |s| s.to_string())
}

/// Writes the checkpoint of `step` (collective). `values[j]` is this rank's
/// local block of `carried[j]`.
#[allow(clippy::too_many_arguments)]
pub fn write(world: &World, dir: &Path, step: u64, mesh: &Mesh, carried: &[Carried], values: &[Tensor], data: Option<DataPosition>, keep: Option<usize>) -> Result<PathBuf, RuntimeError> {
    let r = write_tmp_and_publish(world, dir, step, mesh, carried, values, data, keep);
    // A failed checkpoint leaves nothing behind: every rank is past its own
    // writes once the failure has been agreed on, so rank 0 removes the
    // unpublished directory (the earlier checkpoints are untouched).
    if r.is_err() && world.rank() == 0 {
        let _ = std::fs::remove_dir_all(tmp_dir(dir, step));
    }
    r
}

#[allow(clippy::too_many_arguments)]
fn write_tmp_and_publish(world: &World, dir: &Path, step: u64, mesh: &Mesh, carried: &[Carried], values: &[Tensor], data: Option<DataPosition>, keep: Option<usize>) -> Result<PathBuf, RuntimeError> {
    let rank = world.rank() as u64;
    let tmp = tmp_dir(dir, step);
    let first = if world.rank() == 0 {
        (|| {
            std::fs::create_dir_all(dir).map_err(|e| io(dir, "create the checkpoint directory", e))?;
            if tmp.exists() {
                std::fs::remove_dir_all(&tmp).map_err(|e| io(&tmp, "remove the stale", e))?;
            }
            std::fs::create_dir(&tmp).map_err(|e| io(&tmp, "create", e))
        })()
    } else {
        Ok(())
    };
    agree(world, first)?;
    // This rank's blocks.
    let mut named = vec![];
    for (c, t) in carried.iter().zip(values) {
        if is_block_owner(mesh, c.sharding, rank) {
            named.push((c.name.to_string(), t.clone()));
        }
    }
    let file = format!("rank{rank}.safetensors");
    let path = tmp.join(&file);
    let mine = (|| {
        let bytes = pjc_tensor::safetensors_bytes(&named).map_err(|e| RuntimeError::Env(format!("cannot encode '{}': {e}", path.display())))?;
        write_synced(&path, &bytes)?;
        Ok((bytes.len() as u64, crc32fast::hash(&bytes)))
    })();
    let mine = agree(world, mine)?;
    let mut rec = mine.0.to_le_bytes().to_vec();
    rec.extend(mine.1.to_le_bytes());
    let all = world.gather_to_root(&rec)?;
    let published = if let Some(all) = all {
        (|| {
            let mut m = Manifest {
                format: FORMAT.into(),
                step,
                mesh: if mesh.axes.is_empty() { "[]".into() } else { mesh.to_string().trim_start_matches("mesh ").to_string() },
                devices: mesh.device_count(),
                data,
                tensors: BTreeMap::new(),
                files: BTreeMap::new(),
            };
            for (r, rec) in all.iter().enumerate() {
                let bytes = u64::from_le_bytes(rec[..8].try_into().unwrap());
                let crc32 = u32::from_le_bytes(rec[8..12].try_into().unwrap());
                m.files.insert(format!("rank{r}.safetensors"), SavedFile { bytes, crc32 });
            }
            for c in carried {
                let shape: Vec<usize> = c.ty.shape.iter().map(|&d| d as usize).collect();
                let blocks = (0..mesh.device_count())
                    .filter(|&d| is_block_owner(mesh, c.sharding, d))
                    .map(|d| {
                        let b = shard_block(mesh, c.sharding, &shape, d);
                        SavedBlock { file: format!("rank{d}.safetensors"), start: b.iter().map(|x| x.0 as u64).collect(), size: b.iter().map(|x| x.1 as u64).collect() }
                    })
                    .collect();
                m.tensors.insert(c.name.to_string(), SavedTensor { dtype: c.ty.dtype.to_string(), shape: c.ty.shape.clone(), sharding: sharding_text(c.sharding), blocks });
            }
            let text = serde_json::to_string_pretty(&m).map_err(|e| RuntimeError::Internal(e.to_string()))?;
            write_synced(&tmp.join("manifest.json"), text.as_bytes())?;
            fsync_dir(&tmp);
            let fin = step_dir(dir, step);
            if fin.exists() {
                // A checkpoint of the same step from an earlier run: replaced.
                std::fs::remove_dir_all(&fin).map_err(|e| io(&fin, "replace", e))?;
            }
            std::fs::rename(&tmp, &fin).map_err(|e| io(&fin, "publish", e))?;
            fsync_dir(dir);
            if let Some(k) = keep {
                let steps = list(dir);
                for &old in steps.iter().take(steps.len().saturating_sub(k)) {
                    let _ = std::fs::remove_dir_all(step_dir(dir, old));
                }
            }
            Ok(fin)
        })()
    } else {
        Ok(step_dir(dir, step))
    };
    // Every rank learns whether rank 0 published it.
    agree(world, published)
}

/// The steps of the `step-*` directories in `dir`, oldest first.
pub fn list(dir: &Path) -> Vec<u64> {
    let mut v: Vec<u64> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_prefix("step-")).and_then(|n| n.parse().ok()))
        .collect();
    v.sort();
    v
}

/// Why checkpoint `path` cannot be loaded for `carried`, or its manifest.
pub fn validate(path: &Path, carried: &[Carried]) -> Result<Manifest, String> {
    let mpath = path.join("manifest.json");
    let text = std::fs::read_to_string(&mpath).map_err(|e| format!("cannot read its manifest: {}", crate::error::io_reason(&e)))?;
    let m: Manifest = serde_json::from_str(&text).map_err(|e| format!("its manifest is not valid: {e}"))?;
    if m.format != FORMAT {
        return Err(format!("its format is '{}', not '{FORMAT}'", m.format));
    }
    for c in carried {
        let t = m.tensors.get(c.name).ok_or_else(|| format!("it has no parameter '{}'", c.name))?;
        let want = (c.ty.dtype.to_string(), c.ty.shape.clone());
        if (t.dtype.clone(), t.shape.clone()) != want {
            return Err(format!("parameter '{}' is {}{:?} in it, but the program's is {}", c.name, t.dtype, t.shape, c.ty));
        }
        // The blocks must lie inside the array and add up to it (checked
        // arithmetic: the numbers come from a file).
        let inside = |b: &SavedBlock| m.files.contains_key(&b.file) && b.inside(&c.ty.shape);
        let total = t.blocks.iter().try_fold(0u64, |a, b| b.size.iter().try_fold(1u64, |p, &z| p.checked_mul(z)).and_then(|n| a.checked_add(n)));
        if total != Some(c.ty.num_elements()) || !t.blocks.iter().all(inside) {
            return Err(format!("its blocks of '{}' do not tile the array", c.name));
        }
    }
    let mut layouts = BTreeMap::new();
    for (name, f) in &m.files {
        if name.contains('/') || name.starts_with('.') {
            return Err(format!("its manifest names the file '{name}', which is not in the checkpoint's directory"));
        }
        let p = path.join(name);
        let bytes = std::fs::read(&p).map_err(|e| format!("{name}: {}", crate::error::io_reason(&e)))?;
        if bytes.len() as u64 != f.bytes {
            return Err(format!("{name} has {} bytes, its manifest says {} (torn write?)", bytes.len(), f.bytes));
        }
        if crc32fast::hash(&bytes) != f.crc32 {
            return Err(format!("{name} fails its checksum (corrupted)"));
        }
        // Whole and checksummed, yet possibly not what the manifest says.
        let ls = pjc_tensor::safetensors_layouts(&bytes).map_err(|e| format!("{name} {e}"))?;
        layouts.insert(name.clone(), ls);
    }
    for c in carried {
        for b in &m.tensors[c.name].blocks {
            let (_, l) = layouts[&b.file].iter().find(|(n, _)| n == c.name).ok_or_else(|| format!("{} has no block of '{}'", b.file, c.name))?;
            if let Some(why) = b.mismatch(c.name, l.dtype, &l.shape, c.ty.dtype) {
                return Err(why);
            }
        }
    }
    Ok(m)
}

/// Rank 0 picks the newest loadable checkpoint in `dir` (printing why it
/// skips damaged ones); every rank gets its step (None: there is none).
pub fn choose(world: &World, dir: &Path, carried: &[Carried]) -> Result<Option<u64>, RuntimeError> {
    const NONE: u64 = u64::MAX;
    let mut pick = NONE;
    let mut problem = None;
    if world.rank() == 0 {
        let steps = list(dir);
        for &s in steps.iter().rev() {
            match validate(&step_dir(dir, s), carried) {
                Ok(_) => {
                    pick = s;
                    break;
                }
                Err(why) => eprintln!("pjc: not loading checkpoint '{}': {why}", step_dir(dir, s).display()),
            }
        }
        if pick == NONE && !steps.is_empty() {
            problem = Some(RuntimeError::Env(format!("--resume: no complete checkpoint in '{}' (all {} are damaged; see above)", dir.display(), steps.len())));
        }
    }
    agree(world, problem.map_or(Ok(()), Err))?;
    let s = world.broadcast_u64(pick);
    Ok((s != NONE).then_some(s))
}

/// This device's block of every carried parameter from checkpoint `step`,
/// read from the overlapping parts of the saved blocks only.
pub fn load(dir: &Path, step: u64, mesh: &Mesh, device: u64, carried: &[Carried]) -> Result<(Manifest, Vec<Tensor>), RuntimeError> {
    let path = step_dir(dir, step);
    let text = std::fs::read_to_string(path.join("manifest.json")).map_err(|e| io(&path.join("manifest.json"), "read", e))?;
    let m: Manifest = serde_json::from_str(&text).map_err(|e| RuntimeError::Env(format!("checkpoint '{}': {e}", path.display())))?;
    let mut files: BTreeMap<String, Vec<(String, crate::shardio::Source)>> = BTreeMap::new();
    let mut out = vec![];
    for c in carried {
        let t = m.tensors.get(c.name).ok_or_else(|| RuntimeError::Env(format!("checkpoint '{}' has no parameter '{}'", path.display(), c.name)))?;
        let shape: Vec<usize> = c.ty.shape.iter().map(|&d| d as usize).collect();
        let want = shard_block(mesh, c.sharding, &shape, device);
        let es = c.ty.dtype.size_bytes();
        let local_shape: Vec<usize> = want.iter().map(|b| b.1).collect();
        let mut local = vec![0u8; local_shape.iter().product::<usize>() * es];
        let bad = |why: String| RuntimeError::Env(format!("checkpoint '{}': {why}", path.display()));
        if t.dtype != c.ty.dtype.to_string() || t.shape != c.ty.shape {
            return Err(bad(format!("parameter '{}' is {}{:?} in it, but the program's is {}", c.name, t.dtype, t.shape, c.ty)));
        }
        for b in &t.blocks {
            // Everything taken from the files is checked before it is used as
            // an index (validate checked it on rank 0; the files may have
            // changed since).
            if !b.inside(&c.ty.shape) {
                return Err(bad(format!("its blocks of '{}' do not tile the array", c.name)));
            }
            // Overlap of the saved block and the wanted one, per dimension.
            let lo: Vec<usize> = (0..shape.len()).map(|d| (b.start[d] as usize).max(want[d].0)).collect();
            let hi: Vec<usize> = (0..shape.len()).map(|d| ((b.start[d] + b.size[d]) as usize).min(want[d].0 + want[d].1)).collect();
            if lo.iter().zip(&hi).any(|(l, h)| l >= h) && !shape.is_empty() {
                continue;
            }
            if !files.contains_key(&b.file) {
                files.insert(b.file.clone(), open_safetensors(&path.join(&b.file))?);
            }
            let src = files[&b.file].iter().find(|(n, _)| n == c.name).map(|(_, s)| s).ok_or_else(|| {
                RuntimeError::Env(format!("checkpoint '{}': {} has no block of '{}'", path.display(), b.file, c.name))
            })?;
            if let Some(why) = b.mismatch(c.name, src.dtype, &src.shape, c.ty.dtype) {
                return Err(bad(why));
            }
            let in_saved: Vec<usize> = (0..shape.len()).map(|d| lo[d] - b.start[d] as usize).collect();
            let size: Vec<usize> = (0..shape.len()).map(|d| hi[d] - lo[d]).collect();
            let part = src.block(&in_saved, &size);
            let at: Vec<usize> = (0..shape.len()).map(|d| lo[d] - want[d].0).collect();
            insert_block(&mut local, &local_shape, es, &at, &size, &pjc_tensor::buf_to_le_bytes(&part.data));
        }
        out.push(Tensor::new(local_shape, pjc_tensor::buf_from_le_bytes(c.ty.dtype, &local).map_err(RuntimeError::Internal)?));
    }
    Ok((m, out))
}
