//! Batching control flow (spec section 9, version 2), as JAX's batching rules
//! for `scan`, `cond`/`switch` and `while_loop` do it. The bodies are batched
//! into new functions of the module (`@step.vmap`): a body parameter is
//! batched at dimension 0 or not at all, and so is each body result.
//!
//! - `scan`: a carry is batched when its initial value is or when the step
//!   makes it so (to a fixed point, so its type stays the same around the
//!   loop); a batched scanned operand gets the batch dimension at 1 (dimension
//!   0 stays the loop's), so its slices are batched at 0, and a batched output
//!   slice stacks to an output batched at 1.
//! - `switch` with an unbatched index: a `switch` over the batched branches,
//!   each result batched in every branch when it is in one. With a batched
//!   index every branch runs (inlined) and each example's result is selected
//!   by its own (clamped) index.
//! - `while` with an unbatched predicate: a `while` over the batched condition
//!   and body (carries to a fixed point, as for `scan`). With a batched
//!   predicate every carry is batched, the loop runs while any example's
//!   predicate holds, and the body keeps the values of the examples whose
//!   predicate is false: `c = select(cond(c), body(c), c)` per example.

use super::{Batcher, Bv, Outs, R};
use pjc_ir::{AttrValue, DType, Function, InstData, Opcode, ResultDecl, Span, TensorType, Value};

impl<'m> Batcher<'_, 'm> {
    /// The module function a control-flow op names at position `k`.
    fn body_of(&self, inst: &InstData, k: usize) -> R<&'m Function> {
        let m = self.sh.m;
        inst.callees
            .get(k)
            .and_then(|c| m.func_by_name(c))
            .map(|id| &m.funcs[id])
            .ok_or_else(|| self.internal(format!("'{}' names an unknown function", inst.op)))
    }

    /// Adds `g` batched as a body: parameter k batched at 0 where `batched[k]`;
    /// result k at 0 where it comes out batched or `force[k]`, else
    /// unbatched. Returns its name and which results are batched.
    fn body(&mut self, g: &Function, batched: &[bool], force: &[bool]) -> R<(String, Vec<bool>)> {
        let name = self.sh.fresh_func(&format!("{}.vmap", g.name));
        let in_dims: Vec<Option<usize>> = batched.iter().map(|&b| b.then_some(0)).collect();
        let (f, bds) = self.sh.batch_function(g, name.clone(), &in_dims, Outs::Body(force))?;
        self.sh.add(f);
        Ok((name, bds.iter().map(Option::is_some).collect()))
    }

    /// Operands for bodies batched at 0: batched ones moved there, the ones
    /// `batched` marks but that are not (yet) broadcast along it.
    fn at_zero(&mut self, ops: &[Bv], batched: &[bool], name: &str) -> R<Vec<Value>> {
        let mut vals = vec![];
        for (x, &b) in ops.iter().zip(batched) {
            vals.push(if b { self.materialize(*x, 0, name)? } else { x.v });
        }
        Ok(vals)
    }

    pub(super) fn scan(&mut self, f: &Function, inst: &InstData, ops: &[Bv]) -> R<Vec<Bv>> {
        let name = f.values[inst.results[0]].name.clone();
        let g = self.body_of(inst, 0)?;
        let nc = inst.attr("carries").and_then(AttrValue::as_int).unwrap_or(0) as usize;
        let mut batched: Vec<bool> = ops.iter().map(|x| x.bd.is_some()).collect();
        let mark = self.sh.mark();
        let (step, out) = loop {
            let force: Vec<bool> = (0..g.results.len()).map(|k| k < nc && batched[k]).collect();
            let (step, out) = self.body(g, &batched, &force)?;
            let grow: Vec<usize> = (0..nc).filter(|&k| out[k] && !batched[k]).collect();
            if grow.is_empty() {
                break (step, out);
            }
            self.sh.rollback(mark);
            grow.into_iter().for_each(|k| batched[k] = true);
        };
        let mut vals = self.at_zero(&ops[..nc], &batched[..nc], &name)?;
        for x in &ops[nc..] {
            vals.push(match x.bd {
                Some(_) => self.materialize(*x, 1, &name)?,
                None => x.v,
            });
        }
        let attrs = super::attrs_of(inst);
        let rs = self.emit_multi(Opcode::Scan, &vals, attrs, &[step], None, &name)?;
        Ok(rs
            .into_iter()
            .enumerate()
            .map(|(k, v)| {
                let bd = match k < nc {
                    true => batched[k].then_some(0),
                    false => out[k].then_some(1),
                };
                Bv { v, bd }
            })
            .collect())
    }

    pub(super) fn switch(&mut self, f: &Function, inst: &InstData, ops: &[Bv]) -> R<Vec<Bv>> {
        let name = f.values[inst.results[0]].name.clone();
        let branches: Vec<&Function> = (0..inst.callees.len()).map(|k| self.body_of(inst, k)).collect::<R<_>>()?;
        let (idx, args) = (ops[0], &ops[1..]);
        if idx.bd.is_some() {
            return self.switch_per_example(&branches, idx, args, &name);
        }
        let batched: Vec<bool> = args.iter().map(|x| x.bd.is_some()).collect();
        let nr = inst.results.len();
        let mut force = vec![false; nr];
        let mark = self.sh.mark();
        let (names, union) = loop {
            let mut made = vec![];
            for g in &branches {
                made.push(self.body(g, &batched, &force)?);
            }
            let union: Vec<bool> = (0..nr).map(|k| made.iter().any(|(_, o)| o[k])).collect();
            if made.iter().all(|(_, o)| *o == union) {
                break (made.into_iter().map(|(n, _)| n).collect::<Vec<_>>(), union);
            }
            self.sh.rollback(mark);
            force = union;
        };
        let mut vals = vec![idx.v];
        vals.extend(self.at_zero(args, &batched, &name)?);
        let rs = self.emit_multi(Opcode::Switch, &vals, vec![], &names, None, &name)?;
        Ok(rs.into_iter().zip(union).map(|(v, b)| Bv { v, bd: b.then_some(0) }).collect())
    }

    /// A batched index: every branch runs; each example takes the results of
    /// the branch its index (clamped into range) names.
    fn switch_per_example(&mut self, branches: &[&Function], idx: Bv, args: &[Bv], name: &str) -> R<Vec<Bv>> {
        let n = branches.len();
        let idx = self.materialize(idx, 0, name)?;
        let pos = self.clamp_index(idx, n as u64 - 1, name)?;
        let mut outs = vec![];
        for g in branches {
            outs.push(self.inline(g, args)?);
        }
        let mut res = vec![];
        for r in 0..outs[0].len() {
            let mut acc = self.materialize(outs[n - 1][r], 0, name)?;
            for (b, out) in outs[..n - 1].iter().enumerate().rev() {
                let v = self.materialize(out[r], 0, name)?;
                let k = self.splat(DType::I64, vec![self.size], b as i128, name)?;
                let here = self.compare("eq", pos, k, name)?;
                let here = self.per_example(here, acc, name)?;
                acc = self.select(here, v, acc, name)?;
            }
            res.push(Bv { v: acc, bd: Some(0) });
        }
        Ok(res)
    }

    /// A `[B]` predicate broadcast to the shape of `like` (batched at 0).
    fn per_example(&mut self, p: Value, like: Value, name: &str) -> R<Value> {
        let shape = self.ty(like).shape;
        if shape.len() == 1 {
            return Ok(p);
        }
        self.broadcast(p, &[0], shape, name)
    }

    pub(super) fn while_loop(&mut self, f: &Function, inst: &InstData, ops: &[Bv]) -> R<Vec<Bv>> {
        let name = f.values[inst.results[0]].name.clone();
        let (cond, body) = (self.body_of(inst, 0)?, self.body_of(inst, 1)?);
        let mut batched: Vec<bool> = ops.iter().map(|x| x.bd.is_some()).collect();
        let mark = self.sh.mark();
        loop {
            let (c, pred) = self.body(cond, &batched, &[false])?;
            if pred[0] {
                self.sh.rollback(mark);
                return self.while_per_example(cond, body, ops, &name);
            }
            let (b, out) = self.body(body, &batched, &batched)?;
            let grow: Vec<usize> = (0..ops.len()).filter(|&k| out[k] && !batched[k]).collect();
            if grow.is_empty() {
                let vals = self.at_zero(ops, &batched, &name)?;
                let rs = self.emit_multi(Opcode::While, &vals, vec![], &[c, b], None, &name)?;
                return Ok(rs.into_iter().zip(batched).map(|(v, b)| Bv { v, bd: b.then_some(0) }).collect());
            }
            self.sh.rollback(mark);
            grow.into_iter().for_each(|k| batched[k] = true);
        }
    }

    /// A batched predicate: every carry batched; `@cond.vmap` is whether any
    /// example's predicate holds, `@body.vmap` applies the body to the
    /// examples whose predicate holds and keeps the others.
    fn while_per_example(&mut self, cond: &Function, body: &Function, ops: &[Bv], name: &str) -> R<Vec<Bv>> {
        let in_dims = vec![Some(0); ops.len()];
        let cname = self.sh.fresh_func(&format!("{}.vmap", cond.name));
        let (mut cf, args) = self.sh.new_function(cond, &cname, &in_dims);
        let any = {
            let mut cx = Batcher::new(&mut cf, self.sh);
            let p = cx.inline(cond, &args)?[0];
            let p = cx.materialize(p, 0, &cond.result_name(0))?;
            let attrs = vec![("dims", AttrValue::int_list(&[0])), ("kind", AttrValue::Ident("or".into()))];
            cx.emit(Opcode::Reduce, &[p], attrs, None, "any")?
        };
        let decl = ResultDecl { name: None, ty: TensorType::scalar(DType::Pred), sharding: None, span: Span::NONE };
        finish(&mut cf, vec![any], vec![decl]);
        self.sh.add(cf);
        let bname = self.sh.fresh_func(&format!("{}.vmap", body.name));
        let (mut bf, args) = self.sh.new_function(body, &bname, &in_dims);
        let kept = {
            let mut cx = Batcher::new(&mut bf, self.sh);
            let p = cx.inline(cond, &args)?[0];
            let p = cx.materialize(p, 0, "running")?;
            let next = cx.inline(body, &args)?;
            let mut kept = vec![];
            for (k, (n, a)) in next.into_iter().zip(&args).enumerate() {
                let rn = body.result_name(k);
                let n = cx.materialize(n, 0, &rn)?;
                let here = cx.per_example(p, n, &rn)?;
                kept.push(cx.select(here, n, a.v, &rn)?);
            }
            kept
        };
        let decls = body
            .results
            .iter()
            .zip(&kept)
            .map(|(r, &v)| ResultDecl {
                name: r.name.clone(),
                ty: bf.values[v].ty.clone(),
                sharding: r.sharding.as_ref().map(|s| super::with_replicated(s, 0)),
                span: Span::NONE,
            })
            .collect();
        finish(&mut bf, kept, decls);
        self.sh.add(bf);
        let vals = self.at_zero(ops, &vec![true; ops.len()], name)?;
        let rs = self.emit_multi(Opcode::While, &vals, vec![], &[cname, bname], None, name)?;
        Ok(rs.into_iter().map(|v| Bv { v, bd: Some(0) }).collect())
    }
}

/// Sets a generated body's results.
fn finish(f: &mut Function, ret: Vec<Value>, decls: Vec<ResultDecl>) {
    f.ret_spans = vec![Span::NONE; ret.len()];
    f.ret = ret;
    f.results = decls;
    super::rename_results(f);
}
