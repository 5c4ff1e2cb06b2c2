//! The SPMD partitioner: from a `func` and the shardings propagation chose for
//! its values (`pjc-sharding`'s [`Propagation`], a side table keyed by
//! handle), the `spmd func` one device runs, with the collectives the
//! shardings require and a reason recorded for each.
//!
//! Per instruction (GSPMD's recipe, driven by the op's factor rule):
//! 1. give every factor the axes the result's target sharding asks for;
//!    reduction factors take the axes their operands already agree on;
//!    need-replication and permutation factors get none;
//! 2. reshard each operand to the sharding those factors imply (`reshard.rs`);
//! 3. emit the op on local shapes (`local.rs` adjusts shape attributes and
//!    index offsets);
//! 4. finish split reductions with `all_reduce`, or with `reduce_scatter`
//!    when the target splits the result over the same axes;
//! 5. reshard the result to its target (usually free: a local slice).
//! Calls of `func`s are partitioned inline; a call of a `spmd func` stays a call
//! with its arguments resharded to the callee's signature (`entry.rs` walks the
//! entry function); `while`, `scan` and `switch` name bodies partitioned once
//! each into `spmd func`s of their own (`control.rs`). This file holds what
//! every step shares: the partitioner's state and the record of inserted
//! collectives.

mod combine;
mod control;
mod decompose;
mod entry;
mod halo;
mod hoist;
mod local;
mod reshard;

use pjc_ir::builder::{Builder, Names};
use pjc_ir::infer::CalleeSig;
use pjc_ir::{FuncId, Function, Mesh, Module, Sharding, TensorType, Value, ValueDef};
pub use pjc_ir::CollectiveKind;
use pjc_sharding::{Propagation, Slot};
use std::collections::HashMap;

pub use combine::{combine_all_reduces, combine_all_reduces_in, COMBINE_LIMIT_BYTES};
pub use decompose::{decompose_all_reduces, MAX_CHUNKS, MIN_CHUNK};
pub use entry::partition;
pub use hoist::{hoist_all_reduces, hoist_module, Moved};
pub use reshard::sharding_of;

/// One inserted collective: where, why, and what it costs.
#[derive(Clone, Debug, PartialEq)]
pub struct Inserted {
    /// The per-device function it is in: the entry, or a local body.
    pub func: String,
    pub value: String,
    pub op: CollectiveKind,
    pub axes: Vec<String>,
    pub reason: String,
    /// Bytes each device sends (ring formulas).
    pub bytes_per_device: u64,
}

/// The per-device program and what was inserted.
pub struct Partitioned {
    pub module: Module,
    pub collectives: Vec<Inserted>,
}

/// A program the partitioner cannot handle (inside one instruction's
/// lowering; [`partition`] locates it as an [`Unsupported`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionError(pub String);

/// Why [`partition`] failed, and where: the instruction's span in the
/// source (when it has one) and the function and value it defines.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("in @{func}{}: {msg}", value.as_ref().map(|v| format!(", %{v}")).unwrap_or_default())]
pub struct Unsupported {
    pub msg: String,
    pub span: pjc_ir::Span,
    pub func: String,
    pub value: Option<String>,
}

pub(crate) struct Partitioner<'a> {
    pub m: &'a Module,
    /// The target sharding of every value of every `func` (propagation's).
    pub prop: &'a Propagation,
    /// The `func` whose body is being lowered.
    pub func: FuncId,
    pub mesh: Mesh,
    pub out: Function,
    pub sigs: HashMap<String, CalleeSig>,
    pub inserted: Vec<Inserted>,
    /// `out`'s value names, shared by every builder (one index per function).
    pub names: Names,
    /// The local bodies of control-flow ops (`control.rs`).
    pub bodies: Bodies,
    /// Where the instructions being lowered run ("in the body @b of while
    /// %x"), innermost last: the reasons of collectives inserted there say so.
    pub context: Vec<String>,
    /// Reshards made so far in `out`, to reuse: (local value, from, to) ->
    /// the resharded value (`reshard.rs`; a local body starts its own).
    pub reshards: HashMap<(Value, Axes, Axes), Value>,
}

/// The axes of each dimension of a sharding, major first (empty = replicated).
pub(crate) type Axes = Vec<Vec<String>>;

/// The local bodies of control-flow ops made so far (`control.rs` makes them).
#[derive(Default)]
pub(crate) struct Bodies {
    /// (function, parameter shardings, result shardings) -> local name.
    pub made: HashMap<(FuncId, Vec<Axes>, Vec<Axes>), String>,
    /// The local functions, in the order they were finished.
    pub funcs: Vec<Function>,
}

/// A global value's local representative and its current sharding.
#[derive(Clone)]
pub(crate) struct Local {
    pub v: Value,
    pub axes: Axes,
}

impl Partitioner<'_> {
    /// The target sharding of value `v` of the function being lowered.
    pub(crate) fn target(&self, v: Value) -> Sharding {
        self.prop.sharding(Slot::Value(self.func, v))
    }
    pub(crate) fn b(&mut self) -> Builder<'_> {
        Builder::with_names(&mut self.out, &self.mesh, &self.sigs, &mut self.names)
    }
    pub(crate) fn ty(&self, v: Value) -> &TensorType {
        &self.out.values[v].ty
    }
    pub(crate) fn name(&self, v: Value) -> String {
        self.out.values[v].name.clone()
    }

    /// Notes an inserted collective (result `r`) with its reason, as an
    /// end-of-line comment too, so `--emit spmd` shows it.
    pub(crate) fn record(&mut self, r: Value, axes: Vec<String>, reason: String) {
        let n = self.mesh.group_size(axes.iter().map(|a| a.as_str()));
        let ty = self.ty(r).clone();
        // Saturating: a program may declare more than 2^64 bytes (the planner
        // rejects it later); the estimate must not overflow on the way.
        let size = ty.bytes();
        let ValueDef::Result(inst, _) = self.out.values[r].def else { unreachable!() };
        let op = self.out.insts[inst].op.collective().expect("records collectives only");
        let operand_ty = self.ty(self.out.insts[inst].operands[0]).clone();
        let operand_size = operand_ty.bytes();
        let ring = |k: u128, s: u64| {
            (k * (n as u128 - 1)).checked_mul(s as u128).and_then(|x| u64::try_from(x / n as u128).ok()).unwrap_or(u64::MAX)
        };
        let bytes = match op {
            CollectiveKind::AllReduce => ring(2, size),
            CollectiveKind::AllGather => ring(1, size),
            CollectiveKind::ReduceScatter => ring(1, operand_size),
            CollectiveKind::AllToAll => ring(1, size),
            CollectiveKind::CollectivePermute => size,
        };
        let reason = match self.context.last() {
            Some(c) => format!("{c}: {reason}"),
            None => reason,
        };
        self.out.insts[inst].comments.eol = Some(format!(" {reason}"));
        self.inserted.push(Inserted { func: self.out.name.clone(), value: self.name(r), op, axes, reason, bytes_per_device: bytes });
    }
}
