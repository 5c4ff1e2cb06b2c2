//! The run's results, for the executable's main ([`crate::exe`]): each
//! assembled as a global array from every device's shard, and written to
//! `--output` (spec section 10).

use crate::groups::{is_block_owner, shard_block};
use crate::pack::insert_block;
use crate::RuntimeError;
use pjc_ir::Mesh;
use pjc_plan::Port;
use pjc_tensor::Tensor;
use std::path::Path;

fn env<E: std::fmt::Display>(e: E) -> RuntimeError {
    RuntimeError::Env(e.to_string())
}

/// Assembles result `r` from every device's local value (`parts[d]` is
/// device d's bytes); each element comes from the first device holding it.
pub fn assemble(r: &Port, mesh: &Mesh, parts: &[Vec<u8>]) -> Tensor {
    let s = r.sharding.as_ref();
    let g = &r.global;
    let shape: Vec<usize> = g.shape.iter().map(|&d| d as usize).collect();
    let es = g.dtype.size_bytes();
    let mut out = vec![0u8; g.num_elements() as usize * es];
    for (dev, part) in parts.iter().enumerate() {
        if !is_block_owner(mesh, s, dev as u64) {
            continue;
        }
        let block = shard_block(mesh, s, &shape, dev as u64);
        let start: Vec<usize> = block.iter().map(|b| b.0).collect();
        let size: Vec<usize> = block.iter().map(|b| b.1).collect();
        insert_block(&mut out, &shape, es, &start, &size, part);
    }
    Tensor::new(shape, pjc_tensor::buf_from_le_bytes(g.dtype, &out).expect("whole elements"))
}

/// Writes results: one `.safetensors` file, or a directory of `NAME.npy`,
/// each file atomically (an earlier result survives a failed write).
pub fn write_outputs(path: &Path, named: &[(String, Tensor)]) -> Result<(), RuntimeError> {
    pjc_tensor::write_outputs(path, named).map_err(env)
}
