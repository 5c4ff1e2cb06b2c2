//! The buffer plan's result: where every buffer of a plan lives in one arena
//! (computed by `pjc_fusion::plan_memory`).

use crate::plan::Plan;
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
    /// When the most memory is live at once, and what holds it: what
    /// `pjc explain` reports and a run refused for memory shows.
    pub fullest: PeakLive,
}

/// When the most memory is live at once, and what holds it
/// (`pjc_fusion::peak_live`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PeakLive {
    /// Bytes live at once (aligned sizes; a donated result and its parameter
    /// count once, scan windows not at all): at most the arena's peak, which
    /// also holds the gaps first-fit placement leaves.
    pub bytes: u64,
    /// The step running then, in pre-order over the steps and their blocks
    /// (None: before the first step or after the last).
    pub step: Option<String>,
    /// The step's number in that order (from 1) and the number of steps.
    pub at: (usize, usize),
    /// The buffers live then with their bytes, largest first.
    pub buffers: Vec<(usize, u64)>,
}

impl PeakLive {
    /// One line: "most memory live at once: N bytes, at step S of M (what):
    /// the six largest buffers, and how many more with their bytes".
    pub fn line(&self, plan: &Plan) -> String {
        let (at, steps) = self.at;
        let when = match &self.step {
            Some(s) => format!("at step {at} of {steps} ({s})"),
            None if at == 0 => "before the first step".to_string(),
            None => "after the last step".to_string(),
        };
        let what = |i: usize| match plan.buffers.get(i) {
            Some(b) => format!("%{} {} ({})", b.name, b.ty, plan.role(i)),
            None => format!("b{i}"),
        };
        const SHOWN: usize = 6;
        let mut parts: Vec<String> = self.buffers.iter().take(SHOWN).map(|&(i, bytes)| format!("{} {bytes} B", what(i))).collect();
        if self.buffers.len() > SHOWN {
            let rest: u64 = self.buffers[SHOWN..].iter().map(|b| b.1).sum();
            parts.push(format!("and {} more ({rest} B)", self.buffers.len() - SHOWN));
        }
        format!("most memory live at once: {} bytes, {when}: {}", self.bytes, if parts.is_empty() { "nothing".to_string() } else { parts.join(", ") })
    }
}

