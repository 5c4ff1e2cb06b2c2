//! Sharding propagation: from a few annotations, a sharding for every value of
//! every `func`, each with the reason it got it (`pjc compile --emit sharded`,
//! `pjc explain`).
//!
//! `rules.rs` instantiates the op table's factor-rule families; `propagate.rs`
//! runs the fixed point and documents the conflict policy; `control.rs` ties
//! the carried values of `while`/`scan`/`switch` to one sharding each;
//! `explain.rs` renders the result for people.

pub mod control;
pub mod explain;
pub mod factor;
pub mod propagate;
pub mod rules;
pub mod state;

pub use control::{check_control, ControlError};
pub use explain::{explain, explain_value, explain_with, Grid, Why};
pub use propagate::propagate;
pub use state::{Path, Propagation, Reason, Slot};

use pjc_ir::{FuncId, FuncKind, Module};

/// A copy of `m` in which every value and result of every `func` carries its
/// propagated sharding (`_` where replicated): the `--emit sharded` program.
/// `spmd func`s are unchanged (their bodies are per-device and take no constraints).
pub fn annotate(m: &Module, p: &Propagation) -> Module {
    let mut out = m.clone();
    let ids: Vec<FuncId> = out.funcs.keys().collect();
    for id in ids {
        let f = &mut out.funcs[id];
        if f.kind == FuncKind::Spmd {
            continue;
        }
        let values: Vec<pjc_ir::Value> = f.values.keys().collect();
        for v in values {
            f.values[v].sharding = Some(p.sharding(Slot::Value(id, v)));
        }
        for k in 0..f.results.len() {
            f.results[k].sharding = Some(p.sharding(Slot::Result(id, k)));
        }
    }
    out
}
