//! The SPMD partitioner: from a `func` whose every value carries a sharding
//! (`pjc-sharding`'s output), the `spmd func` one device runs, with the
//! collectives the shardings require and a reason recorded for each.
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
//! with its arguments resharded to the callee's signature.

mod combine;
mod halo;
mod local;
mod reshard;

use pjc_ir::builder::{signatures, Builder, Names};
use pjc_ir::infer::CalleeSig;
use pjc_ir::{FuncId, FuncKind, Function, Mesh, Module, Sharding, TensorType, Value, ValueDef};
pub use pjc_ir::CollectiveKind;
use reshard::dim_axes;
use std::collections::HashMap;

pub use combine::{combine_all_reduces, COMBINE_LIMIT_BYTES};
pub use reshard::sharding_of;

/// One inserted collective: where, why, and what it costs.
#[derive(Clone, Debug, PartialEq)]
pub struct Inserted {
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

/// A program the partitioner cannot handle.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionError(pub String);

pub(crate) struct Partitioner<'a> {
    pub m: &'a Module,
    pub mesh: Mesh,
    pub out: Function,
    pub sigs: HashMap<String, CalleeSig>,
    pub inserted: Vec<Inserted>,
    /// `out`'s value names, shared by every builder (one index per function).
    pub names: Names,
}

/// A global value's local representative and its current sharding.
#[derive(Clone)]
pub(crate) struct Local {
    pub v: Value,
    pub axes: Vec<Vec<String>>,
}

impl Partitioner<'_> {
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
        self.out.insts[inst].comments.eol = Some(format!(" {reason}"));
        self.inserted.push(Inserted { value: self.name(r), op, axes, reason, bytes_per_device: bytes });
    }
}

/// Partitions the entry function `entry` of a module whose values all carry
/// their target shardings. Returns a module holding `spmd func @<entry>` (global
/// signature shardings kept, so its global view is unchanged) plus every spmd
/// func it calls.
pub fn partition(m: &Module, entry: FuncId) -> Result<Partitioned, PartitionError> {
    let f = &m.funcs[entry];
    if f.kind == FuncKind::Spmd {
        // Already per-device: nothing to partition.
        return Ok(Partitioned { module: m.clone(), collectives: vec![] });
    }
    let mesh = m.mesh_or_single();
    let mut p = Partitioner {
        m,
        mesh,
        out: Function::new(&f.name, FuncKind::Spmd),
        sigs: signatures(m),
        inserted: vec![],
        names: Names::default(),
    };
    p.out.comments = f.comments.clone();
    // Parameters: local types; the signature keeps the global sharding, so the
    // spmd func's global view is the func's.
    let mut env: HashMap<Value, Local> = HashMap::new();
    for (i, &pv) in f.params.iter().enumerate() {
        let d = &f.values[pv];
        let s = d.sharding.clone().unwrap_or_else(|| Sharding::replicated(d.ty.rank()));
        let axes = dim_axes(&s);
        let lt = p.local(&d.ty, &axes);
        let v = p.out.add_value(&d.name, lt, ValueDef::Param(i), pjc_ir::Span::NONE);
        p.out.values[v].sharding = Some(s);
        p.out.params.push(v);
        env.insert(pv, Local { v, axes });
    }
    p.body(entry, &mut env)?;
    for (k, r) in f.results.iter().enumerate() {
        let src = env[&f.ret[k]].clone();
        let target = dim_axes(&r.sharding.clone().unwrap_or_else(|| Sharding::replicated(r.ty.rank())));
        let v = p.reshard(src.v, &r.ty, &src.axes, &target, &format!("result '{}'", f.result_name(k)));
        p.out.ret.push(v);
        p.out.ret_spans.push(pjc_ir::Span::NONE);
        let lt = p.local(&r.ty, &target);
        p.out.results.push(pjc_ir::ResultDecl {
            name: r.name.clone(),
            ty: lt,
            sharding: Some(sharding_of(&target)),
            span: pjc_ir::Span::NONE,
        });
    }
    let mut module = Module { mesh: m.mesh.clone(), ..Default::default() };
    module.funcs.push(p.out);
    // Keep the spmd funcs the program calls.
    for g in m.funcs.values().filter(|g| g.kind == FuncKind::Spmd) {
        module.funcs.push(g.clone());
    }
    Ok(Partitioned { module, collectives: p.inserted })
}

impl Partitioner<'_> {
    /// Partitions the body of global function `id` with `env` mapping its
    /// parameters to local values; leaves its results in `env` under `f.ret`.
    fn body(&mut self, id: FuncId, env: &mut HashMap<Value, Local>) -> Result<(), PartitionError> {
        let f = &self.m.funcs[id];
        for &i in &f.body {
            let inst = &f.insts[i];
            if inst.op == pjc_ir::Opcode::Call {
                let g = inst.callee.as_deref().and_then(|c| self.m.func_by_name(c)).ok_or_else(|| PartitionError(format!("unknown callee {:?}", inst.callee)))?;
                let gf = &self.m.funcs[g];
                if gf.kind == FuncKind::Global {
                    let mut inner: HashMap<Value, Local> = HashMap::new();
                    for (k, &a) in inst.operands.iter().enumerate() {
                        let target = dim_axes(gf.values[gf.params[k]].sharding.as_ref().unwrap_or(&Sharding::replicated(gf.ty(gf.params[k]).rank())));
                        let l = env[&a].clone();
                        let v = self.reshard(l.v, f.ty(a), &l.axes, &target, &format!("argument {k} of call @{}", gf.name));
                        inner.insert(gf.params[k], Local { v, axes: target });
                    }
                    self.body(g, &mut inner)?;
                    for (k, &r) in inst.results.iter().enumerate() {
                        env.insert(r, inner[&gf.ret[k]].clone());
                    }
                    continue;
                }
            }
            local::lower(self, f, inst, env)?;
        }
        Ok(())
    }
}
