//! Reverse mode through control flow (spec section 9, version 2): `scan` and
//! `switch`, the way JAX's partial evaluation and transposition treat them.
//!
//! A body's joint function (`Mode::Vjp`: its primal part, then its backward
//! pass) is split in two new functions of the module:
//! - `@b.fwd` computes the body's results and, as extra results, the
//!   *residuals*: the primal values the backward part reads;
//! - `@b.bwd` takes the residuals and the cotangents of the body's results
//!   and returns the cotangents of the body's differentiated parameters.
//!
//! `Cx::prepare_control` rewrites the primal op in place to run the `fwd`
//! bodies (its extra results are the residuals; `scan` stacks them along
//! dimension 0, one per iteration), and `Gen::control_vjp` runs the op again over the
//! `bwd` bodies in the backward pass: `scan` with `reverse` flipped over the
//! same length, the cotangents of the carries as its carries and the
//! residuals, the cotangents of the stacked outputs and the scanned operands
//! the backward body reads as its scanned operands; `switch` with the same
//! index. The index of a `switch` gets no cotangent.
//!
//! What is stored: a primal value the backward part reads is a residual
//! unless it depends only on constants and, for `scan`, on loop-invariant
//! carries (a carry the step returns unchanged: weights, spec section 11),
//! which the backward body recomputes from those carries, passed to it
//! unchanged as extra carries. So weights are never stacked once per
//! iteration, and the cotangent of a weight carried this way is the sum over
//! the iterations, accumulated in the backward scan's carry. The scanned
//! operands the backward body reads are passed to it again rather than stored.
//!
//! `switch`'s branches have different residuals: every `fwd` branch returns
//! all branches' residual slots (zeros in the others'), every `bwd` branch
//! takes them all (as JAX joins the branches' residuals).
//!
//! Inside a `spmd func`, a body's joint function is analysed with the
//! variance its parameters and results have at the op (`Mode::Vjp`'s axes,
//! from `pjc_ir::replication`: a carry varies as the loop's fixed point), so
//! its backward pass sums each cotangent over the axes its parameter is
//! invariant along, as a straight-line body's would; the backward op's
//! results are then already of their operands' variance.
//!
//! `while` has no fixed trip count, so it has no reverse mode (as in JAX:
//! use `scan`); its gradient is an error naming it.

use super::emit::{number, ControlVjp, Gen, R};
use super::{name_results, propagate_active, signature, unique, BodyAxes, Cx, Joint, Mode};
use crate::TransformError;
use pjc_ir::builder::{Builder, Names};
use pjc_ir::replication::Axes;
use pjc_ir::{
    AttrValue, FuncId, FuncKind, Function, Inst, InstData, Opcode, ResultDecl, Span, TensorType, Value, ValueDef,
};
use std::collections::{HashMap, HashSet};

/// One body's split: the names of the generated functions, where each
/// residual comes from, and how to run the backward.
struct Split {
    fwd: Vec<String>,
    saved: Vec<Saved>,
    vjp: ControlVjp,
}

/// Where the backward op finds one residual.
enum Saved {
    /// An extra result of the `fwd` bodies, of this type (per iteration).
    New(TensorType),
    /// The op's own result at this position: the residual is what the body
    /// returns there (`scan`: a stacked output), so it is not stored twice.
    Output(usize),
}

/// What a `fwd` body returns after the body's own results.
enum Extra {
    /// A residual (a value of the joint function).
    Saved(Value),
    /// Zeros filling another branch's residual slot.
    Zeros(TensorType),
}

/// A parameter of a `bwd` body.
enum Slot {
    /// The cotangent of the body's result listed `i`-th in `cts`.
    Ct(usize),
    /// The body's parameter at this position, as it is.
    Param(usize),
    /// A residual.
    Saved(Value),
    /// Another branch's residual slot (unused).
    Unused(TensorType),
}

/// A result of a `bwd` body.
enum Out {
    /// The cotangent of the `i`-th differentiated parameter.
    Grad(usize),
    /// Parameter `p` of the `bwd` body, returned unchanged (an invariant carry).
    Param(usize),
}

/// Which primal values of a joint function its backward part needs, and how
/// each is provided.
struct Residuals {
    /// Stored by the forward body, in order of first use.
    saved: Vec<Value>,
    /// Parameter positions read directly, ascending.
    direct: Vec<usize>,
    /// Primal instructions the backward body recomputes, in program order.
    recompute: Vec<Inst>,
}

impl Cx<'_> {
    /// Rewrites every `scan` and `switch` of `body` with an active operand and
    /// a result the backward pass differentiates (`useful`) into its
    /// forward-with-residuals form, and says how to run each backward.
    pub(super) fn prepare_control(
        &mut self,
        out: &mut Function,
        body: &[Inst],
        active: &HashSet<Value>,
        useful: &HashSet<Value>,
        var: &HashMap<Value, Axes>,
    ) -> R<HashMap<Inst, ControlVjp>> {
        let mut made = HashMap::new();
        let mut names = Names::default();
        for &i in body {
            let d = &out.insts[i];
            if !matches!(d.op, Opcode::Scan | Opcode::Switch)
                || !d.results.iter().any(|r| useful.contains(r))
                || !d.operands.iter().any(|o| active.contains(o))
            {
                continue;
            }
            let d = d.clone();
            let act: Vec<bool> = d.operands_of_bodies().iter().map(|o| active.contains(o)).collect();
            let use_r: Vec<bool> = d.results.iter().map(|r| useful.contains(r)).collect();
            // In a spmd func, the bodies' values vary as the op's operands and
            // results do (a carry as the loop's result: the fixed point).
            let axes = (out.kind == FuncKind::Spmd).then(|| {
                let of = |v: &Value| var.get(v).cloned().unwrap_or_default();
                let nc = match d.op {
                    Opcode::Scan => d.attr("carries").and_then(AttrValue::as_int).unwrap_or(0) as usize,
                    _ => 0,
                };
                let params = d.operands_of_bodies().iter().enumerate();
                let params = params.map(|(k, o)| if k < nc { of(&d.results[k]) } else { of(o) }).collect();
                BodyAxes { params, results: d.results.iter().map(of).collect() }
            });
            let split = match d.op {
                Opcode::Scan => self.split_scan(&d, act, &use_r, axes)?,
                _ => self.split_switch(&d, &act, &use_r, axes)?,
            };
            let Split { fwd, saved, mut vjp } = split;
            let first = out.values[d.results[0]].name.clone();
            let stack = match d.op {
                Opcode::Scan => Some(d.attr("length").and_then(AttrValue::as_int).unwrap_or(1) as u64),
                _ => None,
            };
            out.insts[i].callee_spans = vec![Span::NONE; fwd.len()];
            out.insts[i].callees = fwd;
            for s in saved {
                let t = match s {
                    Saved::Output(k) => {
                        vjp.saved.push(d.results[k]);
                        continue;
                    }
                    Saved::New(t) => t,
                };
                let t = match stack {
                    Some(l) => crate::vmap::batched_type(&t, 0, l),
                    None => t,
                };
                let n = names.fresh(out, &format!("{first}.res"));
                let k = out.insts[i].results.len();
                let v = out.add_value(&n, t, ValueDef::Result(i, k), Span::NONE);
                out.insts[i].results.push(v);
                vjp.saved.push(v);
            }
            made.insert(i, vjp);
        }
        Ok(made)
    }

    /// The module function a control-flow op names at position `k`.
    fn body_fn(&self, d: &InstData, k: usize) -> R<FuncId> {
        let name = d.callees.get(k).map(String::as_str).unwrap_or_default();
        self.m.func_by_name(name).ok_or_else(|| TransformError {
            span: self.span,
            msg: format!("internal error in grad: '{}' names the unknown function @{name}", d.op),
        })
    }

    fn split_scan(&mut self, d: &InstData, mut act: Vec<bool>, useful: &[bool], axes: Option<BodyAxes>) -> R<Split> {
        let m = self.m;
        let gid = self.body_fn(d, 0)?;
        let g = &m.funcs[gid];
        let nc = d.attr("carries").and_then(AttrValue::as_int).unwrap_or(0) as usize;
        let n = g.params.len();
        // A carry is differentiated when its initial value is, or when the
        // step makes it depend on a differentiated value (to a fixed point).
        let res_act = loop {
            let r = active_results(g, &act);
            let grow: Vec<usize> =
                (0..nc).filter(|&k| r[k] && !act[k] && g.values[g.params[k]].ty.dtype.is_float()).collect();
            if grow.is_empty() {
                break r;
            }
            grow.into_iter().for_each(|k| act[k] = true);
        };
        let wrt: Vec<usize> = (0..n).filter(|&k| act[k]).collect();
        let mut cts: Vec<usize> = (0..nc).filter(|&k| act[k]).collect();
        let n_ct_c = cts.len();
        cts.extend((nc..g.results.len()).filter(|&k| useful[k] && res_act[k]));
        let invariant: Vec<bool> = (0..n).map(|k| k < nc && g.ret[k] == g.params[k]).collect();
        let direct: Vec<bool> = (0..n).map(|k| invariant[k] || k >= nc).collect();
        let mode = Mode::Vjp { wrt: wrt.clone(), cts: cts.clone(), axes };
        let joint = self.build_joint(gid, &mode, format!("{}.vjp", g.name))?;
        let res = residuals(&joint, &invariant, &direct);
        let fwd = self.fresh_func(&format!("{}.fwd", g.name));
        let bwd = self.fresh_func(&format!("{}.bwd", g.name));
        // A residual the step returns as an output is that stacked output.
        let saved: Vec<Saved> = res
            .saved
            .iter()
            .map(|&v| match (nc..joint.primal_ret.len()).find(|&k| joint.primal_ret[k] == v) {
                Some(k) => Saved::Output(k),
                None => Saved::New(joint.f.values[v].ty.clone()),
            })
            .collect();
        let extra = res.saved.iter().zip(&saved).filter(|(_, s)| matches!(s, Saved::New(_)));
        self.make_fwd(&joint, g, &fwd, extra.map(|(&v, _)| Extra::Saved(v)).collect())?;
        // The backward step: carries (cotangents of the differentiated
        // carries, then the invariant carries it reads), then scanned (the
        // outputs' cotangents, the residuals, the scanned operands it reads).
        let inv: Vec<usize> = res.direct.iter().copied().filter(|&k| k < nc).collect();
        let xs: Vec<usize> = res.direct.iter().copied().filter(|&k| k >= nc).collect();
        let mut params: Vec<Slot> = (0..n_ct_c).map(Slot::Ct).collect();
        params.extend(inv.iter().map(|&k| Slot::Param(k)));
        params.extend((n_ct_c..cts.len()).map(Slot::Ct));
        params.extend(res.saved.iter().map(|&v| Slot::Saved(v)));
        params.extend(xs.iter().map(|&k| Slot::Param(k)));
        let mut outs: Vec<Out> = (0..n_ct_c).map(Out::Grad).collect();
        outs.extend((n_ct_c..n_ct_c + inv.len()).map(Out::Param));
        outs.extend((n_ct_c..wrt.len()).map(Out::Grad));
        self.make_bwd(&joint, &res.recompute, &bwd, params, outs)?;
        Ok(Split {
            fwd: vec![fwd],
            saved,
            vjp: ControlVjp { bwd: vec![bwd], ct_results: cts, saved: vec![], direct: res.direct, wrt },
        })
    }

    fn split_switch(&mut self, d: &InstData, act: &[bool], useful: &[bool], axes: Option<BodyAxes>) -> R<Split> {
        let m = self.m;
        let ids: Vec<FuncId> = (0..d.callees.len()).map(|k| self.body_fn(d, k)).collect::<R<_>>()?;
        let n = act.len();
        let nr = d.results.len();
        let mut res_act = vec![false; nr];
        for &id in &ids {
            for (k, a) in active_results(&m.funcs[id], act).into_iter().enumerate() {
                res_act[k] |= a;
            }
        }
        let wrt: Vec<usize> = (0..n).filter(|&k| act[k]).collect();
        let cts: Vec<usize> = (0..nr).filter(|&k| useful[k] && res_act[k]).collect();
        let mut joints = vec![];
        for &id in &ids {
            let mode = Mode::Vjp { wrt: wrt.clone(), cts: cts.clone(), axes: axes.clone() };
            let joint = self.build_joint(id, &mode, format!("{}.vjp", m.funcs[id].name))?;
            let res = residuals(&joint, &vec![false; n], &vec![true; n]);
            joints.push((joint, res));
        }
        let mut direct: Vec<usize> = joints.iter().flat_map(|(_, r)| r.direct.iter().copied()).collect();
        direct.sort_unstable();
        direct.dedup();
        // Every branch's residuals, each in a slot of its own; one a branch
        // returns as a result is that result of the switch (the other
        // branches' bwd bodies ignore the slot).
        let slots: Vec<(usize, Value, Saved)> = joints
            .iter()
            .enumerate()
            .flat_map(|(b, (j, r))| {
                r.saved.iter().map(move |&v| {
                    let s = match j.primal_ret.iter().position(|&o| o == v) {
                        Some(k) => Saved::Output(k),
                        None => Saved::New(j.f.values[v].ty.clone()),
                    };
                    (b, v, s)
                })
            })
            .collect();
        let (mut fwds, mut bwds) = (vec![], vec![]);
        for (b, (joint, res)) in joints.iter().enumerate() {
            let g = &m.funcs[ids[b]];
            let fwd = self.fresh_func(&format!("{}.fwd", g.name));
            let bwd = self.fresh_func(&format!("{}.bwd", g.name));
            let extra = slots
                .iter()
                .filter_map(|(o, v, s)| match s {
                    Saved::New(_) if *o == b => Some(Extra::Saved(*v)),
                    Saved::New(t) => Some(Extra::Zeros(t.clone())),
                    Saved::Output(_) => None,
                })
                .collect();
            self.make_fwd(joint, g, &fwd, extra)?;
            let mut params: Vec<Slot> = (0..cts.len()).map(Slot::Ct).collect();
            params.extend(slots.iter().map(|(o, v, _)| {
                if *o == b {
                    Slot::Saved(*v)
                } else {
                    Slot::Unused(joints[*o].0.f.values[*v].ty.clone())
                }
            }));
            params.extend(direct.iter().map(|&k| Slot::Param(k)));
            self.make_bwd(joint, &res.recompute, &bwd, params, (0..wrt.len()).map(Out::Grad).collect())?;
            fwds.push(fwd);
            bwds.push(bwd);
        }
        Ok(Split {
            fwd: fwds,
            saved: slots.into_iter().map(|(_, _, s)| s).collect(),
            vjp: ControlVjp { bwd: bwds, ct_results: cts, saved: vec![], direct, wrt },
        })
    }

    /// Adds `@name`: the primal part of `joint` returning `g`'s results, then `extra`.
    fn make_fwd(&mut self, joint: &Joint, g: &Function, name: &str, extra: Vec<Extra>) -> R<()> {
        let mut f = joint.f.clone();
        f.name = name.to_string();
        f.body.truncate(joint.primal_len);
        f.params.truncate(joint.n_params);
        let mut ret = joint.primal_ret.clone();
        let mut decls: Vec<ResultDecl> =
            g.results.iter().map(|r| ResultDecl { span: Span::NONE, ..r.clone() }).collect();
        {
            let mut b = Builder::new(&mut f, &self.mesh, &self.sigs);
            for e in extra {
                let v = match e {
                    Extra::Saved(v) => v,
                    Extra::Zeros(t) => b.splat(number(0.0, t.dtype), t, "zero"),
                };
                let ty = b.func.values[v].ty.clone();
                ret.push(v);
                decls.push(ResultDecl { name: None, ty, sharding: None, span: Span::NONE });
            }
        }
        f.ret_spans = vec![Span::NONE; ret.len()];
        f.ret = ret;
        f.results = decls;
        self.add_helper(f)
    }

    /// Adds `@name`: the backward part of `joint` (after the `recompute`d
    /// primal instructions) with the parameters `params` and the results `outs`.
    fn make_bwd(&mut self, joint: &Joint, recompute: &[Inst], name: &str, params: Vec<Slot>, outs: Vec<Out>) -> R<()> {
        let mut f = joint.f.clone();
        f.name = name.to_string();
        let mut taken: HashSet<String> = f.values.values().map(|v| v.name.clone()).collect();
        let mut map: HashMap<Value, Value> = HashMap::new();
        let mut new_params = vec![];
        for (pos, s) in params.into_iter().enumerate() {
            let v = match s {
                Slot::Ct(i) => joint.ct_params[i],
                Slot::Param(k) => f.params[k],
                Slot::Saved(v) => {
                    let (n, t) = (f.values[v].name.clone(), f.values[v].ty.clone());
                    let nv = f.add_value(&n, t, ValueDef::Param(pos), Span::NONE);
                    map.insert(v, nv);
                    nv
                }
                Slot::Unused(t) => {
                    let n = unique(&mut taken, "unused");
                    f.add_value(&n, t, ValueDef::Param(pos), Span::NONE)
                }
            };
            new_params.push(v);
        }
        let mut body = recompute.to_vec();
        body.extend_from_slice(&f.body[joint.primal_len..]);
        for &i in &body {
            for o in f.insts[i].operands.iter_mut() {
                if let Some(&nv) = map.get(o) {
                    *o = nv;
                }
            }
        }
        let mut ret = vec![];
        let mut decls = vec![];
        for o in outs {
            match o {
                Out::Grad(i) => {
                    let v = joint.f.ret[i];
                    ret.push(map.get(&v).copied().unwrap_or(v));
                    decls.push(joint.f.results[i].clone());
                }
                Out::Param(p) => {
                    let v = new_params[p];
                    ret.push(v);
                    let (ty, sharding) = (f.values[v].ty.clone(), f.values[v].sharding.clone());
                    decls.push(ResultDecl { name: None, ty, sharding, span: Span::NONE });
                }
            }
        }
        f.body = body;
        f.params = new_params;
        f.ret_spans = vec![Span::NONE; ret.len()];
        f.ret = ret;
        f.results = decls;
        self.add_helper(f)
    }

    /// Checks that `f` is closed (every value it reads is a parameter or
    /// defined before), drops what it no longer holds and adds it to the
    /// module's new functions.
    fn add_helper(&mut self, mut f: Function) -> R<()> {
        let mut defined: HashSet<Value> = f.params.iter().copied().collect();
        for &i in &f.body {
            let d = &f.insts[i];
            if let Some(o) = d.operands.iter().find(|o| !defined.contains(o)) {
                let msg = format!("@{} reads %{} before defining it", f.name, f.values[*o].name);
                return Err(TransformError { span: self.span, msg: format!("internal error in grad: {msg}") });
            }
            defined.extend(d.results.iter().copied());
        }
        if let Some(v) = f.ret.iter().find(|v| !defined.contains(v)) {
            let msg = format!("@{} returns the undefined %{}", f.name, f.values[*v].name);
            return Err(TransformError { span: self.span, msg: format!("internal error in grad: {msg}") });
        }
        crate::simplify::compact(&mut f);
        name_results(&mut f);
        self.sigs.insert(f.name.clone(), signature(&f));
        self.helpers.push(f);
        Ok(())
    }
}

/// Which results of `g` depend on its parameters marked in `act`.
fn active_results(g: &Function, act: &[bool]) -> Vec<bool> {
    let mut a: HashSet<Value> = g.params.iter().zip(act).filter(|(_, &b)| b).map(|(&p, _)| p).collect();
    propagate_active(g, &g.body, &mut a);
    g.ret.iter().map(|v| a.contains(v)).collect()
}

/// The primal values `joint`'s backward part (and its results) read, and
/// whether each is stored, read as a parameter (`direct`) or recomputed (it
/// depends on no parameter outside `invariant`, which must be `direct`).
fn residuals(joint: &Joint, invariant: &[bool], direct: &[bool]) -> Residuals {
    let f = &joint.f;
    let (primal, back) = f.body.split_at(joint.primal_len);
    let params = &f.params[..joint.n_params];
    let mut variant: HashSet<Value> =
        params.iter().enumerate().filter(|(k, _)| !invariant[*k]).map(|(_, &p)| p).collect();
    let mut primal_values: HashSet<Value> = params.iter().copied().collect();
    for &i in primal {
        let d = &f.insts[i];
        if d.operands.iter().any(|o| variant.contains(o)) {
            variant.extend(d.results.iter().copied());
        }
        primal_values.extend(d.results.iter().copied());
    }
    let mut reads = vec![];
    let mut seen = HashSet::new();
    let read_values = back.iter().flat_map(|&i| f.insts[i].operands.iter()).chain(&f.ret);
    for &v in read_values {
        if primal_values.contains(&v) && seen.insert(v) {
            reads.push(v);
        }
    }
    let mut saved = vec![];
    let mut direct_set = HashSet::new();
    let mut marked: HashSet<Inst> = HashSet::new();
    for v in reads {
        match f.values[v].def {
            ValueDef::Param(k) if direct[k] => {
                direct_set.insert(k);
            }
            _ if variant.contains(&v) => saved.push(v),
            ValueDef::Param(k) => {
                direct_set.insert(k);
            }
            ValueDef::Result(i, _) => {
                // Recomputed, with everything it is computed from.
                let mut stack = vec![i];
                while let Some(i) = stack.pop() {
                    if !marked.insert(i) {
                        continue;
                    }
                    for &o in &f.insts[i].operands {
                        match f.values[o].def {
                            ValueDef::Param(k) => {
                                direct_set.insert(k);
                            }
                            ValueDef::Result(j, _) => stack.push(j),
                        }
                    }
                }
            }
        }
    }
    let mut direct: Vec<usize> = direct_set.into_iter().collect();
    direct.sort_unstable();
    Residuals { saved, direct, recompute: primal.iter().copied().filter(|i| marked.contains(i)).collect() }
}

impl Gen<'_> {
    /// The backward pass of a `scan`, `switch` or `while`: contributions to
    /// its operands given the cotangents of its results.
    pub(super) fn control_vjp(
        &mut self,
        i: Inst,
        inst: &InstData,
        cts: &[Option<Value>],
        want: &[bool],
    ) -> R<Vec<Option<Value>>> {
        control_vjp(self, i, inst, cts, want)
    }
}

fn control_vjp(g: &mut Gen, i: Inst, inst: &InstData, cts: &[Option<Value>], want: &[bool]) -> R<Vec<Option<Value>>> {
    let mut out: Vec<Option<Value>> = vec![None; inst.operands.len()];
    if !want.iter().any(|&w| w) {
        return Ok(out);
    }
    if inst.op == Opcode::While {
        return Err(TransformError {
            span: g.span,
            msg: format!(
                "unsupported: grad through 'while' is not defined: use scan, whose trip count is fixed \
                 (computing %{} in @{})",
                g.cur, g.fname
            ),
        });
    }
    let c = g.control.get(&i).cloned().ok_or_else(|| g.internal(format!("'{}' was not prepared", inst.op)))?;
    let ct = |g: &mut Gen, k: usize| -> R<Value> {
        match cts[k] {
            Some(c) => Ok(c),
            None => g.zeros(&g.ty(inst.results[k])),
        }
    };
    let mut ops = vec![];
    let rs = if inst.op == Opcode::Scan {
        let nc = g.a_int(inst, "carries")? as usize;
        let reverse = matches!(g.attr(inst, "reverse")?, AttrValue::Bool(true));
        let inv: Vec<usize> = c.direct.iter().copied().filter(|&k| k < nc).collect();
        for &k in c.ct_results.iter().filter(|&&k| k < nc) {
            ops.push(ct(g, k)?);
        }
        let n_ct_c = ops.len();
        ops.extend(inv.iter().map(|&k| inst.operands[k]));
        for &k in c.ct_results.iter().filter(|&&k| k >= nc) {
            ops.push(ct(g, k)?);
        }
        ops.extend_from_slice(&c.saved);
        ops.extend(c.direct.iter().filter(|&&k| k >= nc).map(|&k| inst.operands[k]));
        let attrs = vec![
            ("length", g.attr(inst, "length")?),
            ("carries", AttrValue::Int((n_ct_c + inv.len()) as i64)),
            ("reverse", AttrValue::Bool(!reverse)),
        ];
        let rs = build(g, Opcode::Scan, &ops, attrs, &c.bwd)?;
        for (j, &k) in c.wrt.iter().enumerate() {
            out[k] = Some(if k < nc { rs[j] } else { rs[j + inv.len()] });
        }
        rs
    } else {
        ops.push(inst.operands[0]);
        for &k in &c.ct_results {
            ops.push(ct(g, k)?);
        }
        ops.extend_from_slice(&c.saved);
        ops.extend(c.direct.iter().map(|&k| inst.operands[1 + k]));
        let rs = build(g, Opcode::Switch, &ops, vec![], &c.bwd)?;
        for (j, &k) in c.wrt.iter().enumerate() {
            out[1 + k] = Some(rs[j]);
        }
        rs
    };
    if rs.is_empty() {
        return Err(g.internal(format!("the backward '{}' has no results", inst.op)));
    }
    for (k, o) in out.iter_mut().enumerate() {
        if !want[k] {
            *o = None;
        }
    }
    Ok(out)
}

fn build(g: &mut Gen, op: Opcode, ops: &[Value], attrs: Vec<(&str, AttrValue)>, bodies: &[String]) -> R<Vec<Value>> {
    let name = g.tmp("bwd");
    g.b.try_build(op, ops, attrs, bodies, None, &name)
        .map_err(|e| g.internal(format!("built an invalid backward '{op}': {}", e.msg)))
}
