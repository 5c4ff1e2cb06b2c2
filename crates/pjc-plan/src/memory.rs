//! The buffer plan's result: where every buffer of a plan lives in one arena
//! (computed by `pjc_fusion::plan_memory`).

use serde::{Deserialize, Serialize};

/// Arena placement of every buffer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// Byte offset of each buffer in the arena.
    pub offsets: Vec<u64>,
    /// Arena size: the peak device memory of one step of the program.
    pub peak: u64,
    /// (parameter buffer, result buffer) pairs that share memory (in-place update).
    pub donated: Vec<(usize, usize)>,
}

