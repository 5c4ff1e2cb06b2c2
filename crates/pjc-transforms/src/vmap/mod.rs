//! Batching (JAX `vmap`, spec section 9).
//!
//! `%ys = vmap @f(%xs, %w) {in_dims=[0, none], out_dims=[0]}` becomes a call of a
//! generated function `@f.vmap` that takes the operands with their batched types
//! and returns the results with the batch dimension at `out_dims`.
//!
//! Design: batch-dimension tracking, as JAX's batching interpreter does. The body
//! of `@f` is walked once; every value of `@f` maps to a value of the generated
//! function together with its *batch dimension*: `None` ("unbatched": the same
//! for every example, the value keeps `@f`'s type) or `Some(k)` (`@f`'s type with
//! the batch size inserted at dimension `k`). An instruction whose operands are
//! all unbatched is copied unchanged. Otherwise its batching rule (`rules.rs`,
//! one per op of spec sections 7–8) emits ordinary PIR and says where the batch
//! dimension of the result is. Rules leave the batch dimension where it falls
//! and move it (`transpose`) only where an op needs it somewhere specific; an
//! unbatched operand meeting a batched one is broadcast along the batch
//! dimension. At the end every result is moved to its `out_dims` entry, and a
//! result that does not depend on a mapped input is broadcast along it.
//!
//! `call`: a callee is inlined and batched in place (a nested `vmap` or a
//! `grad` inside `@f` has already been expanded into a `call`, because
//! [`crate::expand`] visits callees first, so it batches through the same
//! path). The one exception is a `func` calling a `spmd func` with batched
//! arguments (`shard_map` inside the mapped function): the callee's collectives
//! cannot be inlined into a `func`, and one generated function cannot create
//! another, so the call is unrolled: one call per example, results stacked
//! with `concat` (up to [`UNROLL_LIMIT`] examples).
//!
//! Per-example indices (`dynamic_slice`/`dynamic_update_slice` with batched
//! start indices, `gather`/`scatter_add` with batched indices *and* a batched
//! table) use a gather-based formulation: the batch dimension is folded into the
//! indexed dimension (`reshape` to `B*n`) and each example's indices are offset
//! by `b*n`, so one `gather` (or `scatter_add`) serves all examples. See
//! `emit.rs`.
//!
//! Sharding constraints: the batch dimension is unconstrained-replicated (`_`),
//! both in the generated signature (where `@f`'s signature has an `on`) and on
//! constrained values in the body, as JAX does without `spmd_axis_name`.

mod control;
mod emit;
mod rules;

use crate::names::FuncNames;
use crate::TransformError;
use pjc_ir::builder::{signatures, Builder, Names};
use pjc_ir::infer::CalleeSig;
use pjc_ir::{
    AttrValue, DimSharding, EntityRef, FuncId, FuncKind, Function, InstData, Mesh, Module, Opcode, ResultDecl, Sharding,
    Span, TensorType, Value, ValueDef,
};
use std::collections::HashMap;

/// Most examples a batched `shard_map` call inside a mapped `func` is unrolled
/// over (one call per example); beyond it the vmap is reported unsupported.
pub const UNROLL_LIMIT: u64 = 256;

type R<T> = Result<T, TransformError>;

/// A value of the generated function and where its batch dimension is.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) struct Bv {
    pub v: Value,
    pub bd: Option<usize>,
}

/// Builds the function that maps `@f` over a new dimension as `inst`'s
/// `in_dims`/`out_dims` say. Fails when it needs batched bodies of control
/// flow (new functions); [`generate_all`] returns those too.
pub fn generate(m: &Module, f: FuncId, inst: &InstData) -> Result<Function, TransformError> {
    crate::error::only_function(generate_all(m, f, inst)?, inst.span, "vmap", &m.funcs[f].name)
}

/// Like [`generate`], followed by the batched bodies of the control flow it
/// maps (`@step.vmap`, ...); all must be added to the module. `inst` must be an
/// instruction of a function of `m` (the batch size is read from its
/// operands' types there).
pub fn generate_all(m: &Module, f: FuncId, inst: &InstData) -> Result<Vec<Function>, TransformError> {
    let span = inst.span;
    let fail = |msg: String| TransformError { span, msg };
    let target = &m.funcs[f];
    let in_dims: Vec<Option<usize>> = match inst.attr("in_dims").and_then(|a| a.as_list()) {
        Some(l) => l.iter().map(|v| v.as_int().map(|i| i as usize)).collect(),
        None => return Err(fail("internal error: vmap without 'in_dims' (the module must be verified)".into())),
    };
    let out_dims: Vec<usize> = match inst.attr("out_dims").and_then(|a| a.as_ints()) {
        Some(l) => l.into_iter().map(|i| i as usize).collect(),
        None => return Err(fail("internal error: vmap without 'out_dims' (the module must be verified)".into())),
    };
    if in_dims.len() != target.params.len() || out_dims.len() != target.results.len() {
        return Err(fail(format!("internal error: vmap of @{} has in_dims/out_dims of the wrong length", target.name)));
    }
    let caller = find_caller(m, inst)
        .ok_or_else(|| fail("internal error: vmap::generate needs an instruction of the module".into()))?;
    let size = inst
        .operands
        .iter()
        .zip(&in_dims)
        .find_map(|(&v, d)| d.and_then(|d| caller.values.get(v).and_then(|x| x.ty.shape.get(d).copied())))
        .ok_or_else(|| fail(format!("internal error: vmap of @{} maps no operand", target.name)))?;
    let mut sh = Shared {
        m,
        mesh: m.mesh_or_single(),
        sigs: signatures(m),
        helpers: vec![],
        names: FuncNames::default(),
        size,
        span,
        top: target.name.clone(),
    };
    let name = sh.fresh_func(&format!("{}.vmap", target.name));
    let (g, _) = sh.batch_function(target, name, &in_dims, Outs::At(&out_dims))?;
    let mut out = vec![g];
    out.append(&mut sh.helpers);
    Ok(out)
}

/// Where the results of a batched function put their batch dimension.
pub(crate) enum Outs<'x> {
    /// Result k at dimension `k`-th entry (broadcast there when it comes out
    /// unbatched): a `vmap`'s `out_dims`.
    At(&'x [usize]),
    /// At dimension 0 when it comes out batched or is forced, else unbatched:
    /// the body of a control-flow op.
    Body(&'x [bool]),
}

/// Module-level state of one `vmap` expansion: the signatures of the module's
/// functions and of the batched bodies made so far (which the instructions
/// naming them are typed with), and those bodies.
pub(crate) struct Shared<'m> {
    pub m: &'m Module,
    pub mesh: Mesh,
    pub sigs: HashMap<String, CalleeSig>,
    pub helpers: Vec<Function>,
    names: FuncNames,
    /// The batch size.
    pub size: u64,
    /// The `vmap` instruction, for errors.
    pub span: Span,
    /// The mapped function's name, for errors.
    pub top: String,
}

impl Shared<'_> {
    /// A function name not used in the module nor by a body made so far:
    /// `base`, else `base.1`, ...
    pub fn fresh_func(&mut self, base: &str) -> String {
        self.names.fresh(self.m, base)
    }

    /// Adds a generated body.
    pub fn add(&mut self, f: Function) {
        let sig = CalleeSig {
            name: f.name.clone(),
            kind: f.kind,
            params: f.params.iter().map(|&p| (f.values[p].ty.clone(), f.values[p].sharding.clone())).collect(),
            results: f.results.iter().map(|r| (r.ty.clone(), r.sharding.clone())).collect(),
        };
        self.sigs.insert(f.name.clone(), sig);
        self.helpers.push(f);
    }

    /// How many bodies there are, to [`Shared::rollback`] to.
    pub fn mark(&self) -> usize {
        self.helpers.len()
    }

    /// Forgets the bodies made since `mark` (a trial batching that a fixed
    /// point then redoes).
    pub fn rollback(&mut self, mark: usize) {
        for h in self.helpers.drain(mark..) {
            self.sigs.remove(&h.name);
            self.names.release(&h.name);
        }
    }

    /// A new function `@name` with `f`'s parameters, parameter k batched at
    /// `in_dims[k]` (its `on`, if any, with the batch dimension unsplit).
    pub fn new_function(&self, f: &Function, name: &str, in_dims: &[Option<usize>]) -> (Function, Vec<Bv>) {
        let mut g = Function::new(name, f.kind);
        for (i, &p) in f.params.iter().enumerate() {
            let pv = &f.values[p];
            let (ty, sharding) = match in_dims[i] {
                Some(d) => (batched_type(&pv.ty, d, self.size), pv.sharding.as_ref().map(|s| with_replicated(s, d))),
                None => (pv.ty.clone(), pv.sharding.clone()),
            };
            let v = g.add_value(&pv.name, ty, ValueDef::Param(i), Span::NONE);
            g.values[v].sharding = sharding;
            g.params.push(v);
        }
        let args = g.params.iter().zip(in_dims).map(|(&v, &bd)| Bv { v, bd }).collect();
        (g, args)
    }

    /// `f` batched as `in_dims` and `outs` say, named `name`; returns it and
    /// where each of its results is batched.
    pub fn batch_function(
        &mut self,
        f: &Function,
        name: String,
        in_dims: &[Option<usize>],
        outs: Outs,
    ) -> R<(Function, Vec<Option<usize>>)> {
        let (mut g, args) = self.new_function(f, &name, in_dims);
        let (rets, bds) = {
            let mut cx = Batcher::new(&mut g, self);
            let got = cx.run(f, args)?;
            let mut rets = vec![];
            let mut bds = vec![];
            for (i, o) in got.into_iter().enumerate() {
                let at = match outs {
                    Outs::At(d) => Some(d[i]),
                    Outs::Body(force) => (o.bd.is_some() || force[i]).then_some(0),
                };
                let rn = format!("{}.b", f.result_name(i));
                rets.push(match at {
                    Some(d) => cx.materialize(o, d, &rn)?,
                    None => o.v,
                });
                bds.push(at);
            }
            (rets, bds)
        };
        g.ret_spans = vec![Span::NONE; rets.len()];
        g.results = f
            .results
            .iter()
            .enumerate()
            .map(|(i, r)| ResultDecl {
                name: r.name.clone(),
                ty: g.values[rets[i]].ty.clone(),
                sharding: match bds[i] {
                    Some(d) => r.sharding.as_ref().map(|s| with_replicated(s, d)),
                    None => r.sharding.clone(),
                },
                span: Span::NONE,
            })
            .collect();
        g.ret = rets;
        rename_results(&mut g);
        Ok((g, bds))
    }
}

/// The function of `m` that contains `inst` (by address: [`crate::expand`]
/// passes a reference into the module; structurally as a fallback).
fn find_caller<'m>(m: &'m Module, inst: &InstData) -> Option<&'m Function> {
    m.funcs
        .values()
        .find(|f| f.insts.values().any(|i| std::ptr::eq(i, inst)))
        .or_else(|| m.funcs.values().find(|f| f.insts.values().any(|i| i == inst)))
}

/// `t` with a dimension of `size` inserted at `d`.
pub(crate) fn batched_type(t: &TensorType, d: usize, size: u64) -> TensorType {
    let mut t = t.clone();
    t.shape.insert(d, size);
    t
}

/// `s` with an unsplit entry for a new dimension at `d`.
fn with_replicated(s: &Sharding, d: usize) -> Sharding {
    let mut s = s.clone();
    s.dims.insert(d.min(s.dims.len()), DimSharding::Replicated);
    s
}

/// A result named like a parameter is that parameter's next value (state carry,
/// spec section 5) and must match its type and sharding. Batching can break the
/// match (a parameter mapped with `none`, its result with an out dim), so such a
/// result gets a new name; so does an unnamed result whose default `outK` would
/// collide with a parameter.
fn rename_results(g: &mut Function) {
    let params: HashMap<String, Value> = g.params.iter().map(|&p| (g.values[p].name.clone(), p)).collect();
    let mut taken: Vec<String> = (0..g.results.len()).map(|i| g.result_name(i)).collect();
    for i in 0..g.results.len() {
        let name = g.result_name(i);
        let Some(&p) = params.get(&name) else { continue };
        let pv = &g.values[p];
        let r = &g.results[i];
        let same_sharding = pv.sharding.clone().unwrap_or_else(|| Sharding::replicated(pv.ty.rank()))
            == r.sharding.clone().unwrap_or_else(|| Sharding::replicated(r.ty.rank()));
        if pv.ty == r.ty && same_sharding {
            continue;
        }
        let mut k = 0;
        let fresh = loop {
            let c = if k == 0 { format!("{name}_batched") } else { format!("{name}_batched{k}") };
            if !params.contains_key(&c) && !taken.contains(&c) {
                break c;
            }
            k += 1;
        };
        taken[i] = fresh.clone();
        g.results[i].name = Some(fresh);
    }
}

/// The batching interpreter: walks bodies of the mapped function (and of the
/// callees it inlines), emitting into one generated function.
pub(crate) struct Batcher<'a, 'm> {
    pub func: &'a mut Function,
    names: Names,
    pub sh: &'a mut Shared<'m>,
    /// The batch size.
    pub size: u64,
}

impl<'a, 'm> Batcher<'a, 'm> {
    pub(crate) fn new(func: &'a mut Function, sh: &'a mut Shared<'m>) -> Batcher<'a, 'm> {
        let size = sh.size;
        Batcher { func, names: Names::default(), sh, size }
    }
}

impl Batcher<'_, '_> {
    /// A value name not yet used in the generated function.
    pub(crate) fn fresh(&mut self, base: &str) -> String {
        self.names.fresh(self.func, base)
    }

    /// A builder appending to the generated function.
    pub(crate) fn builder(&mut self) -> Builder<'_> {
        Builder::with_names(self.func, &self.sh.mesh, &self.sh.sigs, &mut self.names)
    }

    /// Batches the body of `f` applied to `args`; returns its results.
    pub(crate) fn run(&mut self, f: &Function, args: Vec<Bv>) -> R<Vec<Bv>> {
        let mut env: HashMap<Value, Bv> = f.params.iter().copied().zip(args).collect();
        for &i in &f.body {
            let inst = &f.insts[i];
            let ops: Vec<Bv> = inst.operands.iter().map(|v| env[v]).collect();
            if inst.op.is_transform() {
                return Err(self.unsupported(inst.op, &format!("in @{}: it should have been expanded first", f.name)));
            }
            let first_new = self.func.values.len();
            let outs = if ops.iter().all(|o| o.bd.is_none()) {
                self.copy(f, inst, &ops)?
            } else {
                self.rule(f, inst, &ops)?
            };
            if outs.len() != inst.results.len() {
                return Err(self.internal(format!("'{}' batched to {} results, expected {}", inst.op, outs.len(), inst.results.len())));
            }
            for (&r, mut o) in inst.results.iter().zip(outs) {
                if let Some(s) = &f.values[r].sharding {
                    o = self.constrain(o, s, first_new, &f.values[r].name)?;
                }
                env.insert(r, o);
            }
        }
        Ok(f.ret.iter().map(|v| env[v]).collect())
    }

    /// An instruction whose operands are all unbatched: the same instruction.
    fn copy(&mut self, f: &Function, inst: &InstData, ops: &[Bv]) -> R<Vec<Bv>> {
        let operands: Vec<Value> = ops.iter().map(|o| o.v).collect();
        let written: Vec<TensorType> = inst.results.iter().map(|&r| f.values[r].ty.clone()).collect();
        let name = inst.results.first().map_or("v", |&r| f.values[r].name.as_str());
        let res = self.emit_multi(inst.op, &operands, attrs_of(inst), &inst.callees, Some(written), name)?;
        if let Some(lit) = &inst.literal {
            if let Some(&v) = res.first() {
                if let ValueDef::Result(id, _) = self.func.values[v].def {
                    self.func.insts[id].literal = Some(lit.clone());
                }
            }
        }
        for (k, &v) in res.iter().enumerate().skip(1) {
            let n = self.fresh(&f.values[inst.results[k]].name);
            self.func.values[v].name = n;
        }
        Ok(res.into_iter().map(|v| Bv { v, bd: None }).collect())
    }

    /// Puts `@f`'s sharding constraint `s` on the batched value `o` (the batch
    /// dimension unsplit). Constraints exist only in a `func`; a value made
    /// before `first_new` (a parameter, or one returned unchanged) or already
    /// constrained gets an identity `reshape` to carry the constraint.
    pub(crate) fn constrain(&mut self, o: Bv, s: &Sharding, first_new: usize, name: &str) -> R<Bv> {
        if self.func.kind != FuncKind::Global {
            return Ok(o);
        }
        let s = match o.bd {
            Some(k) => with_replicated(s, k),
            None => s.clone(),
        };
        let mut v = o.v;
        if v.index() < first_new || self.func.values[v].sharding.is_some() {
            let t = self.ty(v);
            v = self.emit(Opcode::Reshape, &[v], vec![], Some(t), name)?;
        }
        self.func.values[v].sharding = Some(s);
        Ok(Bv { v, bd: o.bd })
    }

    pub(crate) fn internal(&self, msg: String) -> TransformError {
        TransformError { span: self.sh.span, msg: format!("internal error in vmap of @{}: {msg}", self.sh.top) }
    }

    pub(crate) fn unsupported(&self, op: Opcode, why: &str) -> TransformError {
        TransformError { span: self.sh.span, msg: format!("unsupported: vmap of '{op}' {why}") }
    }
}

/// An instruction's attributes as the builder takes them.
pub(crate) fn attrs_of(inst: &InstData) -> Vec<(&str, AttrValue)> {
    inst.attrs.iter().map(|a| (a.name.as_str(), a.value.clone())).collect()
}
