//! Partitioning the entry function: its parameters get their local types,
//! its body is lowered instruction by instruction (`local.rs`; calls of
//! `func`s are partitioned inline, calls of `spmd func`s stay calls with
//! resharded arguments), and its results are resharded to their declared
//! shardings. The state it threads through, [`Partitioner`], is the crate's.

use crate::reshard::{dim_axes, sharding_of};
use crate::{local, Local, PartitionError, Partitioned, Partitioner, Unsupported};
use pjc_sharding::{Propagation, Slot};
use pjc_ir::builder::{signatures, Names};
use pjc_ir::{FuncId, FuncKind, Function, Module, Value, ValueDef};
use std::collections::HashMap;

/// Partitions the entry function `entry` of `m` with the target shardings of
/// `prop` (propagation's result for `m`). Returns a module holding
/// `spmd func @<entry>` (global signature shardings kept, so its global view
/// is unchanged) plus every spmd func it calls.
pub fn partition(m: &Module, entry: FuncId, prop: &Propagation) -> Result<Partitioned, Unsupported> {
    let f = &m.funcs[entry];
    if f.kind == FuncKind::Spmd {
        // Already per-device: nothing to partition.
        return Ok(Partitioned { module: m.clone(), collectives: vec![] });
    }
    let mesh = m.mesh_or_single();
    let mut p = Partitioner {
        m,
        prop,
        func: entry,
        mesh,
        out: Function::new(&f.name, FuncKind::Spmd),
        sigs: signatures(m),
        inserted: vec![],
        names: Names::default(),
        bodies: Default::default(),
        context: vec![],
        reshards: HashMap::new(),
    };
    p.out.comments = f.comments.clone();
    // Parameters: local types; the signature keeps the global sharding, so the
    // spmd func's global view is the func's.
    let mut env: HashMap<Value, Local> = HashMap::new();
    for (i, &pv) in f.params.iter().enumerate() {
        let d = &f.values[pv];
        let s = prop.sharding(Slot::Value(entry, pv));
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
        let target = dim_axes(&prop.sharding(Slot::Result(entry, k)));
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
    // The local bodies of control flow, then the spmd funcs the program calls.
    for g in p.bodies.funcs {
        module.funcs.push(g);
    }
    // Keep the spmd funcs the program calls.
    for g in m.funcs.values().filter(|g| g.kind == FuncKind::Spmd) {
        module.funcs.push(g.clone());
    }
    Ok(Partitioned { module, collectives: p.inserted })
}

impl Partitioner<'_> {
    /// Partitions the body of global function `id` with `env` mapping its
    /// parameters to local values; leaves its results in `env` under `f.ret`.
    pub(crate) fn body(&mut self, id: FuncId, env: &mut HashMap<Value, Local>) -> Result<(), Unsupported> {
        let f = &self.m.funcs[id];
        let caller = std::mem::replace(&mut self.func, id);
        for &i in &f.body {
            let inst = &f.insts[i];
            let at = |e: PartitionError| Unsupported {
                msg: e.0,
                span: inst.span,
                func: f.name.clone(),
                value: inst.results.first().map(|&r| f.values[r].name.clone()),
            };
            if inst.op.is_control() {
                self.control(f, inst, env)?;
                continue;
            }
            if inst.op == pjc_ir::Opcode::Call {
                let g = inst.callee().and_then(|c| self.m.func_by_name(c)).ok_or_else(|| at(PartitionError(format!("unknown callee {:?}", inst.callees))))?;
                let gf = &self.m.funcs[g];
                if gf.kind == FuncKind::Global {
                    let mut inner: HashMap<Value, Local> = HashMap::new();
                    for (k, &a) in inst.operands.iter().enumerate() {
                        let target = dim_axes(&self.prop.sharding(Slot::Value(g, gf.params[k])));
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
            local::lower(self, f, inst, env).map_err(at)?;
        }
        self.func = caller;
        Ok(())
    }
}
