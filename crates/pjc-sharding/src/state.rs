//! What propagation decides (spec section 6): the slots it assigns shardings
//! to, each dimension's state with the reason it has it, and the outcome,
//! [`Propagation`]. Shared by the fixed point (`propagate.rs`), its control-flow
//! groups (`control.rs`) and the explanations (`explain.rs`); it depends on
//! none of them.

use pjc_ir::{DimSharding, FuncId, Sharding, Value};
use std::collections::HashMap;

/// A tensor the propagation assigns a sharding to.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Slot {
    /// A value of a function (parameter or instruction result).
    Value(FuncId, Value),
    /// Declared result `k` of a function.
    Result(FuncId, usize),
}

/// Why a dimension has its sharding.
#[derive(Clone, Debug, PartialEq)]
pub struct Reason {
    /// Where the sharding started: "annotation on %x", "default: entry result 'h' is replicated", ...
    pub origin: String,
    /// The ops it travelled through, in order.
    pub path: Path,
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.origin)?;
        if self.path.len > 0 {
            write!(f, " via {}", self.path)?;
        }
        Ok(())
    }
}

/// The ops a sharding travelled through, summarised: the first and the last
/// [`Path::KEEP`] labels and the count of those between. A sharding can travel
/// through the whole program, so keeping every label would make each step of
/// propagation (and each `explain` row) as long as the program.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Path {
    first: Vec<String>,
    last: std::collections::VecDeque<String>,
    /// Labels travelled through, all of them.
    pub len: usize,
}

impl Path {
    pub const KEEP: usize = 4;

    pub fn push(&mut self, label: String) {
        if self.first.len() < Self::KEEP {
            self.first.push(label);
        } else {
            self.last.push_back(label);
            if self.last.len() > Self::KEEP {
                self.last.pop_front();
            }
        }
        self.len += 1;
    }

    /// The first and the last label travelled through (`None` for an empty
    /// path): what `pjc explain`'s summarised "why" column shows of a long one.
    pub fn ends(&self) -> Option<(&str, &str)> {
        let first = self.first.first()?;
        Some((first, self.last.back().or(self.first.last()).unwrap_or(first)))
    }
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts: Vec<String> = self.first.clone();
        let skipped = self.len - self.first.len() - self.last.len();
        if skipped > 0 {
            parts.push(format!("… {skipped} more …"));
        }
        parts.extend(self.last.iter().cloned());
        f.write_str(&parts.join(" → "))
    }
}

/// The state of one dimension.
#[derive(Clone, Debug, PartialEq)]
pub enum Dim {
    Open,
    /// Axes (major first; empty = replicated), whether annotated, and why.
    Set { axes: Vec<String>, closed: bool, reason: Reason },
}

/// The outcome: a sharding (and reasons) for every slot of every `func`.
pub struct Propagation {
    pub dims: HashMap<Slot, Vec<Dim>>,
}

impl Propagation {
    /// The final sharding of a slot (open dims replicated).
    pub fn sharding(&self, s: Slot) -> Sharding {
        let dims = self.dims.get(&s).map(|v| v.as_slice()).unwrap_or(&[]);
        Sharding {
            dims: dims
                .iter()
                .map(|d| match d {
                    Dim::Set { axes, .. } if !axes.is_empty() => DimSharding::Axes(axes.clone()),
                    _ => DimSharding::Replicated,
                })
                .collect(),
        }
    }
    pub fn reasons(&self, s: Slot) -> Vec<Option<Reason>> {
        self.dims
            .get(&s)
            .map(|v| {
                v.iter()
                    .map(|d| match d {
                        Dim::Set { reason, axes, .. } if !axes.is_empty() => Some(reason.clone()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}
