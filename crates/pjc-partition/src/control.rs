//! Control flow in the partitioner (spec sections 6 and 7.1): `while`,
//! `scan` and `switch` of a `func` become the same ops on local shapes,
//! naming *local bodies* — each body function partitioned once into a
//! `spmd func` (GSPMD's recipe for `kWhile` and `kConditional`).
//!
//! - `while`, `scan`: each carried value has one sharding for the whole loop
//!   (propagation's groups: the body's parameter, which its condition
//!   parameter, its result and the op's result share). The initial value is
//!   resharded to it once, before the loop; scanned operands are resharded
//!   once to dim 0 unsplit and the slice's sharding on the other dims, and
//!   stacked outputs come out so and are resharded once, after the loop, to
//!   what their users want. Nothing is resharded per iteration except what the
//!   body itself asks for inside.
//! - `switch`: the operands go to every branch as they are; a branch whose
//!   parameters are sharded otherwise reshards them inside, and every branch
//!   brings its results to the op's result sharding (the written one, or
//!   branch 0's), so all branches have one local signature.
//!
//! A local body is keyed by its function and its local signature's
//! shardings: a function used by several loops with the one carried sharding
//! (propagation ties them) is partitioned once and keeps its name; another
//! signature of the same function (a branch fed differently sharded operands
//! by two switches) is a second local function, `@f.1`.

use crate::reshard::dim_axes;
use crate::{Axes, Local, PartitionError, Partitioner, Unsupported};
use pjc_ir::infer::CalleeSig;
use pjc_ir::{FuncId, FuncKind, Function, InstData, Opcode, ResultDecl, Span, Value, ValueDef};
use pjc_sharding::Slot;
use std::collections::HashMap;

impl Partitioner<'_> {
    fn axes_of(&self, s: Slot) -> Axes {
        dim_axes(&self.prop.sharding(s))
    }

    /// Lowers control-flow instruction `inst` of global function `f`.
    pub(crate) fn control(&mut self, f: &Function, inst: &InstData, env: &mut HashMap<Value, Local>) -> Result<(), Unsupported> {
        let at = |e: PartitionError| Unsupported { msg: e.0, span: inst.span, func: f.name.clone(), value: inst.results.first().map(|&r| f.values[r].name.clone()) };
        let bodies: Vec<FuncId> = inst
            .callees
            .iter()
            .map(|c| self.m.funcs.iter().find(|(_, g)| g.name == *c && g.kind == FuncKind::Global).map(|(id, _)| id))
            .collect::<Option<_>>()
            .ok_or_else(|| at(PartitionError(format!("'{}' names a function that is not a func: {:?}", inst.op, inst.callees))))?;
        let name = f.values[inst.results[0]].name.clone();
        let what = format!("{} %{name}", inst.op);
        let param = |g: FuncId, k: usize| Slot::Value(g, self.m.funcs[g].params[k]);
        let mut args = vec![];
        // Result shardings of the local op.
        let mut out_axes: Vec<Axes> = vec![];
        let mut callees = vec![];
        match inst.op {
            Opcode::While => {
                let (c, b) = (bodies[0], bodies[1]);
                let carried: Vec<Axes> = (0..inst.operands.len()).map(|k| self.axes_of(param(b, k))).collect();
                for (k, &a) in inst.operands.iter().enumerate() {
                    let l = env[&a].clone();
                    args.push(self.reshard(l.v, f.ty(a), &l.axes, &carried[k], &format!("initial value {k} of {what}")));
                }
                callees.push(self.local_body(c, &carried, &[vec![]], &format!("the condition @{} of {what}, per iteration", self.m.funcs[c].name))?);
                callees.push(self.local_body(b, &carried, &carried, &format!("the body @{} of {what}, per iteration", self.m.funcs[b].name))?);
                out_axes = carried;
            }
            Opcode::Scan => {
                let s = bodies[0];
                let sf = &self.m.funcs[s];
                let c = inst.attr("carries").and_then(|a| a.as_int()).unwrap_or(0).max(0) as usize;
                let params: Vec<Axes> = (0..inst.operands.len()).map(|k| self.axes_of(param(s, k))).collect();
                let results: Vec<Axes> = (0..sf.results.len()).map(|k| self.axes_of(Slot::Result(s, k))).collect();
                for (k, &a) in inst.operands.iter().enumerate() {
                    let l = env[&a].clone();
                    let (want, why) = if k < c {
                        (params[k].clone(), format!("initial value {k} of {what}"))
                    } else {
                        (stacked(&params[k]), format!("scanned operand %{} of {what} (dimension 0 of a scanned operand is never split)", f.values[a].name))
                    };
                    args.push(self.reshard(l.v, f.ty(a), &l.axes, &want, &why));
                }
                callees.push(self.local_body(s, &params, &results, &format!("the step @{} of {what}, per iteration", sf.name))?);
                out_axes = results.iter().enumerate().map(|(k, r)| if k < c { r.clone() } else { stacked(r) }).collect();
            }
            _ => {
                let l = env[&inst.operands[0]].clone();
                args.push(l.v);
                let passed: Vec<Axes> = inst.operands[1..].iter().map(|a| env[a].axes.clone()).collect();
                args.extend(inst.operands[1..].iter().map(|a| env[a].v));
                let results: Vec<Axes> = inst.results.iter().map(|&r| dim_axes(&self.target(r))).collect();
                for &b in &bodies {
                    callees.push(self.local_body(b, &passed, &results, &format!("branch @{} of {what}, when taken", self.m.funcs[b].name))?);
                }
                out_axes = results;
            }
        }
        let attrs: Vec<(&str, pjc_ir::AttrValue)> = inst.attrs.iter().map(|a| (a.name.as_str(), a.value.clone())).collect();
        let rs = self.b().try_build(inst.op, &args, attrs, &callees, None, &name).map_err(|e| at(PartitionError(format!("local {}: {}", inst.op, e.msg))))?;
        for (k, (&r, &v)) in inst.results.iter().zip(&rs).enumerate() {
            if k > 0 {
                let n = self.names.fresh(&self.out, &f.values[r].name);
                self.out.values[v].name = n;
            }
            // Stacked outputs go to what their users want once, after the loop.
            let target = dim_axes(&self.target(r));
            let v = self.reshard(v, f.ty(r), &out_axes[k], &target, &format!("stacked output %{} of {what}", f.values[r].name));
            env.insert(r, Local { v, axes: target });
        }
        Ok(())
    }

    /// The local function of global body `g` with local signature shardings
    /// `params` -> `results` (partitioned the first time it is asked for).
    /// Parameters the body's own propagation shards otherwise are resharded at
    /// its start (switch branches), and its results are brought to `results`
    /// at its end. `role` says what the body is, for collectives' reasons.
    fn local_body(&mut self, g: FuncId, params: &[Axes], results: &[Axes], role: &str) -> Result<String, Unsupported> {
        let key = (g, params.to_vec(), results.to_vec());
        if let Some(n) = self.bodies.made.get(&key) {
            return Ok(n.clone());
        }
        let gf = &self.m.funcs[g];
        let taken = |n: &str| self.bodies.made.values().any(|x| x == n) || self.m.funcs.values().any(|h| h.kind == FuncKind::Spmd && h.name == n) || self.out.name == n;
        let mut name = gf.name.clone();
        let mut k = 0;
        while taken(&name) {
            k += 1;
            name = format!("{}.{k}", gf.name);
        }
        let saved_out = std::mem::replace(&mut self.out, Function::new(&name, FuncKind::Spmd));
        let saved_names = std::mem::take(&mut self.names);
        // Reshards are reused within one function only.
        let saved_reshards = std::mem::take(&mut self.reshards);
        self.context.push(format!("in {role}"));
        self.out.comments = gf.comments.clone();
        let mut env: HashMap<Value, Local> = HashMap::new();
        for (i, &pv) in gf.params.iter().enumerate() {
            let d = &gf.values[pv];
            let lt = self.local(&d.ty, &params[i]);
            let v = self.out.add_value(&d.name, lt, ValueDef::Param(i), Span::NONE);
            // No `on` on a local body's signature: inside a spmd func a body's
            // parameters and results vary as the statement's values do (spec
            // section 11), which the verifier infers. The global sharding
            // would over-state it where the local value is the same on every
            // device (a replicated constant split into equal shards).
            self.out.params.push(v);
            let own = self.axes_of(Slot::Value(g, pv));
            let v = self.reshard(v, &d.ty, &params[i], &own, &format!("parameter %{} of @{}", d.name, gf.name));
            env.insert(pv, Local { v, axes: own });
        }
        self.body(g, &mut env)?;
        for (k, r) in gf.results.iter().enumerate() {
            let src = env[&gf.ret[k]].clone();
            let v = self.reshard(src.v, &r.ty, &src.axes, &results[k], &format!("result '{}' of @{}", gf.result_name(k), gf.name));
            self.out.ret.push(v);
            self.out.ret_spans.push(Span::NONE);
            let lt = self.local(&r.ty, &results[k]);
            self.out.results.push(ResultDecl { name: r.name.clone(), ty: lt, sharding: None, span: Span::NONE });
        }
        self.context.pop();
        self.names = saved_names;
        self.reshards = saved_reshards;
        let local = std::mem::replace(&mut self.out, saved_out);
        let sig = CalleeSig {
            name: name.clone(),
            kind: FuncKind::Spmd,
            params: local.params.iter().map(|&p| (local.values[p].ty.clone(), local.values[p].sharding.clone())).collect(),
            results: local.results.iter().map(|r| (r.ty.clone(), r.sharding.clone())).collect(),
        };
        self.sigs.insert(name.clone(), sig);
        self.bodies.funcs.push(local);
        self.bodies.made.insert(key, name.clone());
        Ok(name)
    }
}

/// The sharding of a stacked array whose slices have `slice`: dim 0 unsplit.
fn stacked(slice: &Axes) -> Axes {
    let mut a = vec![vec![]];
    a.extend(slice.iter().cloned());
    a
}
