//! Reverse-mode differentiation (JAX `value_and_grad`, spec section 9).
//!
//! `%l, %g0, %g1 = grad @f(%w, %b, %x) {wrt=[0,1]}` becomes a call of a
//! generated function `@f.grad` with `@f`'s parameters, returning the value
//! and one gradient per `wrt` position. Its body is, in order:
//!
//! 1. the primal: `@f`'s body with every call inlined (callees were already
//!    expanded, so a nested `grad` arrives here as the inlined code of the inner
//!    generated function, which makes second order work), except a call of a
//!    `spmd func` from a `func`, which must stay a call (shard_map);
//! 2. the backward pass: the primal instructions in reverse, each one's
//!    transpose rule (`rules`, `linalg`, `spmd`) turning the cotangent of its
//!    result into contributions for its *active* operands (float values that
//!    depend on a differentiated parameter); contributions to a value used
//!    several times are summed with `add`. The seed is `1.0` of the result's
//!    dtype. Integer and pred values have no cotangent; piecewise-constant ops
//!    contribute nothing.
//!
//! A call of a `spmd func` `@s` from a `func` is differentiated by a generated
//! `spmd func @s.vjp` taking `@s`'s parameters and the cotangents of its float
//! results and returning the cotangents of its float parameters (it recomputes
//! `@s`'s forward pass); such helpers are the extra functions
//! [`generate_all`] returns.
//!
//! Names: primal values keep their names (inlined ones are prefixed with the
//! callee's name, `@layer`'s `%h` becomes `%layer.h`); the cotangent of `%x` is
//! `%x.ct`; temporaries of the rule for `%y` are `%y.TAG`. Sharding
//! constraints of the primal are put on the cotangents of the same values.

mod control;
mod emit;
mod linalg;
mod rules;
mod spmd;

use crate::names::FuncNames;
use crate::TransformError;
use emit::{Gen, R};
use pjc_ir::builder::Builder;
use pjc_ir::infer::CalleeSig;
use pjc_ir::replication::{Axes, Replication};
use pjc_ir::EntityRef;
use pjc_ir::{
    FuncId, FuncKind, Function, Inst, InstData, Mesh, Module, Opcode, ResultDecl, Sharding, Span, TensorType, Value,
    ValueDef,
};
use std::collections::{HashMap, HashSet};

/// Builds the function computing `@f`'s value and its gradients with respect to
/// the operands listed in `inst`'s `wrt`. Fails when the gradient needs helper
/// functions (a `func` calling a `spmd func`, control flow); [`generate_all`]
/// returns those too.
pub fn generate(m: &Module, f: FuncId, inst: &InstData) -> Result<Function, TransformError> {
    crate::error::only_function(generate_all(m, f, inst)?, inst.span, "grad", &m.funcs[f].name)
}

/// Like [`generate`], followed by the helper functions the generated one calls
/// (the VJPs of the `spmd func`s that `@f` calls); all must be added to the module.
pub fn generate_all(m: &Module, f: FuncId, inst: &InstData) -> Result<Vec<Function>, TransformError> {
    let func = &m.funcs[f];
    let span = inst.span;
    let err = |msg: String| TransformError { span, msg };
    // The verifier has checked all of this; a module that skipped it gets an
    // error rather than a panic.
    if func.results.len() != 1 || !func.results[0].ty.is_scalar() || !func.results[0].ty.dtype.is_float() {
        return Err(err(format!("grad needs @{} to return one float scalar", func.name)));
    }
    let wrt = inst.attr("wrt").and_then(|a| a.as_ints()).ok_or_else(|| err("grad needs 'wrt'".into()))?;
    let mut list = vec![];
    for w in wrt {
        if w < 0 || w as usize >= func.params.len() || list.contains(&(w as usize)) {
            return Err(err(format!("'wrt' entry {w} is out of range or repeated")));
        }
        if !func.values[func.params[w as usize]].ty.dtype.is_float() {
            return Err(err(format!(
                "cannot differentiate with respect to operand {w}: only float values have gradients"
            )));
        }
        list.push(w as usize);
    }
    let mut cx = Cx {
        m,
        mesh: m.mesh_or_single(),
        sigs: pjc_ir::builder::signatures(m),
        helpers: vec![],
        helper_of: HashMap::new(),
        names: FuncNames::default(),
        span,
    };
    let name = cx.fresh_func(&format!("{}.grad", func.name));
    let main = cx.build(f, &Mode::Grad(list), name)?;
    let mut out = vec![main];
    out.append(&mut cx.helpers);
    Ok(out)
}

/// What the generated function computes.
enum Mode {
    /// Value and gradients with respect to these parameter positions.
    Grad(Vec<usize>),
    /// A vector-Jacobian product: the parameters plus one cotangent per
    /// result listed in `cts` in, one cotangent per parameter listed in `wrt`
    /// out. The VJP of a `spmd func` (all float parameters and results) and
    /// the joint forward-and-backward body of a control-flow op (`control.rs`).
    /// `axes`: in a `spmd func` body, the mesh axes each parameter and each
    /// result varies along at the call site (what a body's signature does
    /// not say); `None`: as the signature says.
    Vjp { wrt: Vec<usize>, cts: Vec<usize>, axes: Option<BodyAxes> },
}

/// The variance of a body's parameters and results where it is used.
#[derive(Clone, Debug)]
struct BodyAxes {
    params: Vec<Axes>,
    results: Vec<Axes>,
}

/// A generated function together with where its primal part ends: the first
/// `primal_len` instructions of its body compute the differentiated
/// function's values (`primal_ret` are what it returns), the rest is the
/// backward pass. `ct_params` are the cotangent parameters of a VJP.
struct Joint {
    f: Function,
    primal_len: usize,
    primal_ret: Vec<Value>,
    n_params: usize,
    ct_params: Vec<Value>,
}

/// Module-level state of one `grad` expansion.
struct Cx<'m> {
    m: &'m Module,
    mesh: Mesh,
    /// Signatures of the module's functions and of the helpers made so far.
    sigs: HashMap<String, CalleeSig>,
    helpers: Vec<Function>,
    helper_of: HashMap<String, String>,
    names: FuncNames,
    span: Span,
}

impl Cx<'_> {
    fn fresh_func(&mut self, base: &str) -> String {
        self.names.fresh(self.m, base)
    }

    fn build(&mut self, fid: FuncId, mode: &Mode, name: String) -> R<Function> {
        Ok(self.build_joint(fid, mode, name)?.f)
    }

    fn build_joint(&mut self, fid: FuncId, mode: &Mode, name: String) -> R<Joint> {
        let m = self.m;
        let f = &m.funcs[fid];
        let spmd = f.kind == FuncKind::Spmd;
        let mut out = Function::new(&name, f.kind);
        let mut names: HashSet<String> = HashSet::new();
        for (i, &p) in f.params.iter().enumerate() {
            let v = &f.values[p];
            let nv = out.add_value(&v.name, v.ty.clone(), ValueDef::Param(i), Span::NONE);
            out.values[nv].sharding = v.sharding.clone();
            out.params.push(nv);
            names.insert(v.name.clone());
        }
        let mut ct_params: Vec<(usize, Value)> = vec![];
        if let Mode::Vjp { cts, .. } = mode {
            for &i in cts {
                let r = &f.results[i];
                let n = unique(&mut names, &format!("{}.ct", f.result_name(i)));
                let nv = out.add_param(&n, r.ty.clone());
                out.values[nv].sharding = r.sharding.clone();
                ct_params.push((i, nv));
            }
        }
        // 1. The primal.
        let args: Vec<Value> = out.params[..f.params.len()].to_vec();
        let primal_ret = {
            let mut b = Builder::new(&mut out, &self.mesh, &self.sigs);
            inline(&mut b, m, f, &args, "", self.span)?
        };
        let primal_body = out.body.clone();
        // VJP helpers for the spmd funcs called from this func.
        if !spmd {
            for &i in &primal_body {
                let d = &out.insts[i];
                if d.op != Opcode::Call {
                    continue;
                }
                let callee = d.callee().unwrap_or_default().to_string();
                let Some(cid) = m.func_by_name(&callee) else { continue };
                if m.funcs[cid].kind != FuncKind::Spmd || self.helper_of.contains_key(&callee) {
                    continue;
                }
                let hname = self.fresh_func(&format!("{callee}.vjp"));
                self.helper_of.insert(callee.clone(), hname.clone());
                let g = &m.funcs[cid];
                let floats = |ts: Vec<&TensorType>| -> Vec<usize> {
                    ts.iter().enumerate().filter(|(_, t)| t.dtype.is_float()).map(|(k, _)| k).collect()
                };
                let wrt = floats(g.params.iter().map(|&p| &g.values[p].ty).collect());
                let cts = floats(g.results.iter().map(|r| &r.ty).collect());
                let h = self.build(cid, &Mode::Vjp { wrt, cts, axes: None }, hname.clone())?;
                self.sigs.insert(hname, signature(&h));
                self.helpers.push(h);
            }
        }
        // Analyses of the primal.
        let var = match (spmd, mode) {
            (false, _) => HashMap::new(),
            (true, Mode::Vjp { axes: Some(a), .. }) => Replication::new(m).values(&out, &a.params),
            (true, _) => pjc_ir::replication::varying_axes(&out, m),
        };
        let n_params = f.params.len();
        let wrt: Vec<usize> = match mode {
            Mode::Grad(w) => w.clone(),
            Mode::Vjp { wrt, .. } => wrt.clone(),
        };
        let mut active: HashSet<Value> = wrt.iter().map(|&k| out.params[k]).collect();
        propagate_active(&out, &primal_body, &mut active);
        // Control flow whose results the cotangents reach runs its bodies'
        // forward-with-residuals versions instead (control.rs).
        let seeds: Vec<Value> = match mode {
            Mode::Grad(_) => vec![primal_ret[0]],
            Mode::Vjp { cts, .. } => cts.iter().map(|&i| primal_ret[i]).collect(),
        };
        let useful = useful_values(&out, &primal_body, &active, &seeds);
        let control = self.prepare_control(&mut out, &primal_body, &active, &useful, &var)?;
        // 2. The backward pass.
        let (ret, decls) = {
            let mut g = Gen {
                b: Builder::new(&mut out, &self.mesh, &self.sigs),
                m,
                span: self.span,
                fname: f.name.clone(),
                spmd,
                var,
                active,
                ct: HashMap::new(),
                helper_of: self.helper_of.clone(),
                cur: String::new(),
                control,
            };
            match mode {
                Mode::Grad(_) => {
                    let v = primal_ret[0];
                    if g.active.contains(&v) {
                        let t = g.ty(v);
                        let seed = g.konst(1.0, &t, &format!("{}.ct", g.vname(v)))?;
                        g.ct.insert(v, seed);
                    }
                }
                Mode::Vjp { .. } => {
                    for &(i, p) in &ct_params {
                        let v = primal_ret[i];
                        if !g.active.contains(&v) {
                            continue;
                        }
                        // A result split over axes it does not vary along was
                        // implicitly broadcast there: sum its cotangent back.
                        let declared = match mode {
                            Mode::Vjp { axes: Some(a), .. } => a.results[i].clone(),
                            _ => pjc_ir::replication::sharding_axes(f.results[i].sharding.as_ref()),
                        };
                        let extra: Axes =
                            declared.difference(g.var.get(&v).unwrap_or(&Default::default())).cloned().collect();
                        let c = if extra.is_empty() { p } else { g.all_reduce(p, &extra, "sum", &g.ctn(v))? };
                        g.accumulate(v, c)?;
                    }
                }
            }
            g.backward(&primal_body)?;
            let mut ret = vec![];
            let mut decls = vec![];
            if let Mode::Grad(_) = mode {
                let v = primal_ret[0];
                ret.push(v);
                let r = &f.results[0];
                decls.push(ResultDecl {
                    name: r.name.clone(),
                    ty: r.ty.clone(),
                    sharding: r.sharding.clone(),
                    span: Span::NONE,
                });
            }
            for &k in &wrt {
                let p = g.b.func.params[k];
                let c = match g.ct.get(&p) {
                    Some(&c) => c,
                    None => {
                        let t = g.ty(p);
                        g.konst(0.0, &t, &format!("{}.ct", g.vname(p)))?
                    }
                };
                ret.push(c);
                let pv = &g.b.func.values[p];
                decls.push(ResultDecl {
                    name: Some(format!("{}_grad", pv.name)),
                    ty: pv.ty.clone(),
                    sharding: pv.sharding.clone(),
                    span: Span::NONE,
                });
            }
            (ret, decls)
        };
        out.ret_spans = vec![Span::NONE; ret.len()];
        out.ret = ret;
        out.results = decls;
        name_results(&mut out);
        Ok(Joint {
            f: out,
            primal_len: primal_body.len(),
            primal_ret,
            n_params,
            ct_params: ct_params.into_iter().map(|(_, v)| v).collect(),
        })
    }
}

/// Adds to `active` every float result of an instruction of `body` with an
/// active operand (what depends on a differentiated input). Conservative
/// through calls and control flow: every float result of one counts.
fn propagate_active(f: &Function, body: &[Inst], active: &mut HashSet<Value>) {
    for &i in body {
        let d = &f.insts[i];
        if d.operands.iter().any(|o| active.contains(o)) {
            for &r in &d.results {
                if f.values[r].ty.dtype.is_float() {
                    active.insert(r);
                }
            }
        }
    }
}

/// The active values of `body` whose cotangent the backward pass will
/// compute: the `seeds` (values given a cotangent) and, backwards, the active
/// operands of every instruction one of whose results is useful.
fn useful_values(f: &Function, body: &[Inst], active: &HashSet<Value>, seeds: &[Value]) -> HashSet<Value> {
    let mut useful: HashSet<Value> = seeds.iter().copied().filter(|v| active.contains(v)).collect();
    for &i in body.iter().rev() {
        let d = &f.insts[i];
        if d.results.iter().any(|r| useful.contains(r)) {
            useful.extend(d.operands.iter().copied().filter(|o| active.contains(o)));
        }
    }
    useful
}

/// `base`, or `base.1`, `base.2`, ... : a name not in `names` (then added).
fn unique(names: &mut HashSet<String>, base: &str) -> String {
    let mut n = base.to_string();
    let mut k = 1;
    while names.contains(&n) {
        n = format!("{base}.{k}");
        k += 1;
    }
    names.insert(n.clone());
    n
}

/// Makes the result names valid identifiers, unique, different from every
/// parameter name (a result named like a parameter would carry it) and from
/// the default `outK` names of the unnamed results.
fn name_results(f: &mut Function) {
    let params: HashSet<String> = f.params.iter().map(|&p| f.values[p].name.clone()).collect();
    let mut taken: HashSet<String> = params;
    for i in 0..f.results.len() {
        let Some(raw) = f.results[i].name.clone() else { continue };
        let mut s: String = raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
        if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
            s.insert(0, '_');
        }
        let is_default = s.strip_prefix("out").is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
        if is_default && s != format!("out{i}") {
            s.insert(0, '_');
        }
        f.results[i].name = Some(unique_ident(&mut taken, &s));
    }
}

fn unique_ident(taken: &mut HashSet<String>, base: &str) -> String {
    let mut n = base.to_string();
    let mut k = 2;
    while taken.contains(&n) {
        n = format!("{base}_{k}");
        k += 1;
    }
    taken.insert(n.clone());
    n
}

/// The signature of a generated function, as call sites see it.
fn signature(f: &Function) -> CalleeSig {
    CalleeSig {
        name: f.name.clone(),
        kind: f.kind,
        params: f.params.iter().map(|&p| (f.values[p].ty.clone(), f.values[p].sharding.clone())).collect(),
        results: f.results.iter().map(|r| (r.ty.clone(), r.sharding.clone())).collect(),
    }
}

/// Appends a copy of `g`'s body with its parameters bound to `args`, inlining
/// calls (except a `spmd func` called from a `func`), and returns the values
/// `g` returns. Value names get `prefix`.
fn inline(b: &mut Builder, m: &Module, g: &Function, args: &[Value], prefix: &str, span: Span) -> R<Vec<Value>> {
    let err =
        |msg: String| TransformError { span, msg: format!("internal error in grad while inlining @{}: {msg}", g.name) };
    let global = b.func.kind == FuncKind::Global;
    // `g`'s values to the new ones, by value index: a dense table, not a hash
    // map, because inlining a large function into a per-device program made
    // the map's random accesses miss the cache (issue 17).
    let mut map: Vec<Option<Value>> = vec![None; g.values.len()];
    for (&p, &a) in g.params.iter().zip(args) {
        map[p.index()] = Some(a);
    }
    let get = |map: &[Option<Value>], v: &Value| {
        map[v.index()].ok_or_else(|| err(format!("%{} used before its definition", g.values[*v].name)))
    };
    for &i in &g.body {
        let inst = &g.insts[i];
        let ops: Vec<Value> = inst.operands.iter().map(|v| get(&map, v)).collect::<R<_>>()?;
        let name_of = |v: Value| format!("{prefix}{}", g.values[v].name);
        match inst.op {
            op if op.is_transform() => return Err(err(format!("unexpanded '{op}'"))),
            Opcode::Call => {
                let cname = inst.callee().unwrap_or_default().to_string();
                let cid = m.func_by_name(&cname).ok_or_else(|| err(format!("unknown function @{cname}")))?;
                let c = &m.funcs[cid];
                if !(global && c.kind == FuncKind::Spmd) {
                    let outs = inline(b, m, c, &ops, &format!("{}.", c.name), span)?;
                    for (k, &r) in inst.results.iter().enumerate() {
                        let mut o = *outs.get(k).ok_or_else(|| err("call result count".into()))?;
                        if let (true, Some(s)) = (global, &g.values[r].sharding) {
                            // Keep the caller's constraint on the call's result.
                            let t = g.values[r].ty.clone();
                            let v = b
                                .try_build(Opcode::Reshape, &[o], vec![], &[], Some(vec![t]), &name_of(r))
                                .map_err(|e| err(e.msg))?;
                            b.func.values[v[0]].sharding = Some(s.clone());
                            o = v[0];
                        }
                        map[r.index()] = Some(o);
                    }
                    continue;
                }
            }
            _ => {}
        }
        let written: Vec<TensorType> = inst.results.iter().map(|&r| g.values[r].ty.clone()).collect();
        let attrs = inst.attrs.iter().map(|a| (a.name.as_str(), a.value.clone())).collect();
        let first = inst.results.first().map(|&r| name_of(r)).unwrap_or_default();
        let rs = b
            .try_build(inst.op, &ops, attrs, &inst.callees, Some(written), &first)
            .map_err(|e| err(format!("'{}': {}", inst.op, e.msg)))?;
        if let Some(lit) = &inst.literal {
            if let Some(&r0) = rs.first() {
                if let ValueDef::Result(id, _) = b.func.values[r0].def {
                    b.func.insts[id].literal = Some(lit.clone());
                }
            }
        }
        for (k, (&r, &nr)) in inst.results.iter().zip(&rs).enumerate() {
            if k > 0 {
                let n = b.fresh(&name_of(r));
                b.func.values[nr].name = n;
            }
            if global {
                b.func.values[nr].sharding = g.values[r].sharding.clone();
            }
            map[r.index()] = Some(nr);
        }
    }
    g.ret.iter().map(|v| get(&map, v)).collect()
}

impl Gen<'_> {
    /// Runs the transpose rules over the primal instructions in reverse.
    fn backward(&mut self, body: &[Inst]) -> R<()> {
        for &i in body.iter().rev() {
            let inst = self.b.func.insts[i].clone();
            let mut cts: Vec<Option<Value>> = inst.results.iter().map(|r| self.ct.get(r).copied()).collect();
            if cts.iter().all(Option::is_none) {
                continue;
            }
            self.cur = self.vname(inst.results[0]);
            if !self.spmd {
                for (k, &r) in inst.results.iter().enumerate() {
                    if let (Some(c), Some(s)) = (cts[k], self.b.func.values[r].sharding.clone()) {
                        let c = self.constrain(c, s, r)?;
                        self.ct.insert(r, c);
                        cts[k] = Some(c);
                    }
                }
            }
            let want: Vec<bool> = inst.operands.iter().map(|o| self.active.contains(o)).collect();
            if !want.iter().any(|&w| w) {
                continue;
            }
            let before = self.b.func.values.len();
            let contribs = match (inst.op, cts[0]) {
                (Opcode::Call, _) => self.call_vjp(&inst, &cts, &want)?,
                (Opcode::Scan | Opcode::Switch | Opcode::While, _) => self.control_vjp(i, &inst, &cts, &want)?,
                (Opcode::Sort, _) => rules::sort(self, &inst, &cts, &want)?,
                (_, Some(c)) => rules::vjp(self, &inst, c, &want)?,
                (_, None) => continue,
            };
            for (k, c) in contribs.into_iter().enumerate() {
                let Some(c) = c else { continue };
                if !want[k] {
                    continue;
                }
                let x = inst.operands[k];
                // A backward body already brought its cotangents to the
                // variance of the parameters they are for.
                let c = if inst.op.is_control() { c } else { spmd::to_operand_type(self, &inst, k, c)? };
                // A contribution made by this rule is named after its operand.
                let base = self.ctn(x);
                if c.index() >= before && !self.vname(c).starts_with(&base) {
                    let n = self.b.fresh(&base);
                    self.b.func.values[c].name = n;
                }
                self.accumulate(x, c)?;
            }
        }
        Ok(())
    }

    /// Adds a contribution to the cotangent of `x`.
    fn accumulate(&mut self, x: Value, c: Value) -> R<()> {
        let new = match self.ct.get(&x) {
            None => c,
            Some(&old) => self.bin(Opcode::Add, old, c, &self.ctn(x))?,
        };
        self.ct.insert(x, new);
        Ok(())
    }

    /// The cotangent `c` of `r` under `r`'s sharding constraint `s`.
    fn constrain(&mut self, c: Value, s: Sharding, r: Value) -> R<Value> {
        let v = &self.b.func.values[c];
        if v.sharding.as_ref() == Some(&s) {
            return Ok(c);
        }
        if v.sharding.is_none() && matches!(v.def, ValueDef::Result(..)) {
            self.b.func.values[c].sharding = Some(s);
            return Ok(c);
        }
        // Already constrained otherwise (or a parameter): constrain a copy.
        let t = self.ty(c);
        let copy = self.emit(Opcode::Reshape, &[c], vec![], Some(t), &self.ctn(r))?;
        self.b.func.values[copy].sharding = Some(s);
        Ok(copy)
    }

    /// The transpose of a call of a `spmd func` from a `func`: a call of its
    /// generated VJP.
    fn call_vjp(&mut self, inst: &InstData, cts: &[Option<Value>], want: &[bool]) -> R<Vec<Option<Value>>> {
        let callee = inst.callee().unwrap_or_default().to_string();
        let helper =
            self.helper_of.get(&callee).cloned().ok_or_else(|| self.internal(format!("no VJP of @{callee}")))?;
        let s =
            self.m.func_by_name(&callee).map(|id| &self.m.funcs[id]).ok_or_else(|| self.internal("unknown callee"))?;
        let mut args = inst.operands.clone();
        for (k, &r) in inst.results.iter().enumerate() {
            let t = self.ty(r);
            if !t.dtype.is_float() {
                continue;
            }
            args.push(match cts[k] {
                Some(c) => c,
                None => self.zeros(&t)?,
            });
        }
        let outs = self
            .b
            .try_build(Opcode::Call, &args, vec![], std::slice::from_ref(&helper), None, &self.tmp("vjp"))
            .map_err(|e| self.internal(format!("call of @{helper}: {}", e.msg)))?;
        let mut res = vec![None; inst.operands.len()];
        let mut j = 0;
        for (k, &p) in s.params.iter().enumerate() {
            if !s.values[p].ty.dtype.is_float() {
                continue;
            }
            let o = outs[j];
            j += 1;
            if want[k] {
                let n = self.b.fresh(&self.ctn(inst.operands[k]));
                self.b.func.values[o].name = n;
                res[k] = Some(o);
            }
        }
        Ok(res)
    }
}

/// A copy of function `id` of `m` with every call inlined (recursively;
/// inside a `func`, calls of `spmd func`s stay calls, as shard_map boundaries).
/// What runs a per-device program whose `spmd func` calls others: the kernel
/// planner sees one straight-line body.
pub fn inline_calls(m: &Module, id: FuncId) -> Result<Function, TransformError> {
    let f = &m.funcs[id];
    let mut out = Function::new(&f.name, f.kind);
    for (i, &p) in f.params.iter().enumerate() {
        let v = &f.values[p];
        let nv = out.add_value(&v.name, v.ty.clone(), ValueDef::Param(i), Span::NONE);
        out.values[nv].sharding = v.sharding.clone();
        out.params.push(nv);
    }
    out.results = f.results.clone();
    let args = out.params.clone();
    let mesh = m.mesh_or_single();
    let sigs = pjc_ir::builder::signatures(m);
    let ret = {
        let mut b = Builder::new(&mut out, &mesh, &sigs);
        inline(&mut b, m, f, &args, "", f.span)?
    };
    out.ret = ret;
    Ok(out)
}
