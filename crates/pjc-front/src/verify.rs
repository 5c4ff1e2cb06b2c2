//! The verifier: everything the spec requires of a module beyond syntax, and
//! type inference for results the source left untyped.
//!
//! Checked invariants (each failure is one diagnostic; checking continues):
//! - function names are unique; every `call`/`grad`/`vmap` and every body of
//!   `while`/`scan`/`switch` names a function of the module; the call graph
//!   (bodies included) has no cycle;
//! - signatures: shardings have one entry per dimension, name existing mesh axes
//!   at most once, never use `?`, and (in a `func`) divide their dimensions;
//!   result names are unique and do not collide with default `outK` names; a
//!   result named like a parameter (state carry) has that parameter's type and
//!   sharding;
//! - bodies: collectives appear only in `spmd func`; attributes are known to the
//!   op, of the declared kind, and present when required (attributes equal to
//!   their default are then dropped, so the IR has one form per program); operand and result
//!   types follow the op's type rule (`pjc_ir::infer`), and written result types
//!   equal the inferred ones; sharding constraints are allowed only in a `func`
//!   and follow the signature rules (but may use `?`);
//! - control flow (section 7.1, in `pjc_ir::infer`): `while` and `scan` have an
//!   operand; every body has the caller's kind and a signature that fits the
//!   statement (a mismatch points at the body's name and names the parameter or
//!   result); `scan`'s `length` >= 1, `carries` <= the operands, scanned
//!   operands of dimension 0 `length`; `switch`'s index an integer scalar;
//! - `return` matches the declared results in number and type;
//! - every result of a `spmd func` that is not split over a mesh axis is provably
//!   the same on every device along that axis (spec section 5's rule, seeing
//!   through control flow); `while`'s predicate and `switch`'s index are the same
//!   on every device; an `on` written on a body's signature equals the variance
//!   the call site gives it (`pjc_ir::replication`). A `spmd func` used only as a
//!   body is checked where it is used, with its parameters varying like what the
//!   statement passes.
//! (SSA — defined once, before use — is enforced by the parser, which resolves
//! names in order.)

use crate::diag::Diag;
use pjc_dialects::{AttrKind, Context};
use pjc_ir::infer::{infer, Blame, CalleeSig, InferCtx};
use pjc_ir::{
    AttrValue, FuncId, FuncKind, Function, InstData, Mesh, Module, Sharding, Span, TensorType, Value,
};
use std::collections::{BTreeSet, HashMap, HashSet};

/// Verifies `m`, filling in inferred result types and putting attributes in
/// canonical form (defaults dropped, table order). Returns every error found.
pub fn verify(m: &mut Module) -> Result<(), Vec<Diag>> {
    let (d, fixes) = run(m);
    for (id, f) in fixes {
        let func = &mut m.funcs[id];
        for (v, t) in f.types {
            func.values[v].ty = t;
        }
        for (i, attrs) in f.attrs {
            func.insts[i].attrs = attrs;
        }
    }
    if d.is_empty() {
        Ok(())
    } else {
        Err(d)
    }
}

/// Checks that `m` is a verified module as it stands, without changing it:
/// every error `verify` would report, and besides, a result left untyped or
/// attributes not in canonical form (what `verify` would have fixed) are
/// errors. What compiler stages run between each other (pjc's pipeline).
pub fn check(m: &Module) -> Result<(), Vec<Diag>> {
    let (mut d, fixes) = run(m);
    for (id, f) in fixes {
        let func = &m.funcs[id];
        for (v, t) in &f.types {
            let val = &func.values[*v];
            d.push(Diag::new(val.span, format!("%{} in @{} has type {}, but its instruction gives {t}", val.name, func.name, val.ty)));
        }
        for i in f.attrs.keys() {
            let inst = &func.insts[*i];
            d.push(Diag::new(inst.span, format!("the attributes of '{}' in @{} are not in canonical form (a default written out, or out of the op table's order)", inst.op, func.name)));
        }
    }
    if d.is_empty() {
        Ok(())
    } else {
        Err(d)
    }
}

/// What verification would change in one function: inferred result types
/// and canonical attribute lists (only those that differ).
#[derive(Default)]
struct Fixes {
    types: HashMap<Value, TensorType>,
    attrs: HashMap<pjc_ir::Inst, Vec<pjc_ir::Attr>>,
}

/// Every error, and what `verify` would fix, per function.
fn run(m: &Module) -> (Vec<Diag>, Vec<(FuncId, Fixes)>) {
    let mut d = Vec::new();
    let mesh = m.mesh_or_single();
    // Function names.
    let mut seen: HashMap<String, FuncId> = HashMap::new();
    for (id, f) in m.funcs.iter() {
        if seen.insert(f.name.clone(), id).is_some() {
            d.push(Diag::new(f.name_span, format!("function @{} is defined twice", f.name)));
        }
    }
    for (_, f) in m.funcs.iter() {
        signature(f, &mesh, &mut d);
    }
    let sigs = pjc_ir::builder::signatures(m);
    let mut fixes = vec![];
    for (id, f) in m.funcs.iter() {
        let mut fx = Fixes::default();
        body(f, &mesh, &sigs, &mut d, &mut fx);
        if !fx.types.is_empty() || !fx.attrs.is_empty() {
            fixes.push((id, fx));
        }
    }
    call_cycles(m, &mut d);
    if d.is_empty() {
        replication(m, &mesh, &mut d);
    }
    (d, fixes)
}

/// Checks that the entry function exists.
pub fn check_entry(m: &Module, entry: &str) -> Result<FuncId, Diag> {
    m.func_by_name(entry).ok_or_else(|| {
        let names: Vec<String> = m.funcs.values().map(|f| format!("@{}", f.name)).collect();
        // Diagnostics have a position (spec section 10): the module's first function.
        let at = m.funcs.values().next().map_or(Span::new(0, 0), |f| f.span);
        Diag::new(at, format!("no entry function @{entry} (the module defines {})", names.join(", ")))
    })
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Checks a sharding against a type and the mesh.
fn check_sharding(
    s: &Sharding,
    ty: &TensorType,
    mesh: &Mesh,
    allow_open: bool,
    check_div: bool,
    what: &str,
    span: Span,
    d: &mut Vec<Diag>,
) {
    if s.dims.len() != ty.rank() {
        d.push(Diag::new(span, format!("sharding of {what} has {} entr{} but its type {ty} has rank {}", s.dims.len(), if s.dims.len() == 1 { "y" } else { "ies" }, ty.rank())));
        return;
    }
    let mut used: HashSet<&str> = HashSet::new();
    for (dim, e) in s.dims.iter().enumerate() {
        match e {
            pjc_ir::DimSharding::Open if !allow_open => {
                d.push(Diag::new(span, format!("'?' (open) is only allowed on values inside a body, not on {what}")));
            }
            pjc_ir::DimSharding::Axes(axes) => {
                for a in axes {
                    if mesh.axis(a).is_none() {
                        let known = if mesh.axes.is_empty() {
                            "the module declares no mesh".to_string()
                        } else {
                            format!("the mesh has {}", mesh.axes.iter().map(|x| x.name.as_str()).collect::<Vec<_>>().join(", "))
                        };
                        d.push(Diag::new(span, format!("unknown mesh axis '{a}' in the sharding of {what} ({known})")));
                        return;
                    }
                    if !used.insert(a) {
                        d.push(Diag::new(span, format!("mesh axis '{a}' appears more than once in the sharding of {what}")));
                        return;
                    }
                }
                let n = mesh.group_size(axes.iter().map(|a| a.as_str()));
                if check_div && ty.shape[dim] % n != 0 {
                    let sizes: Vec<String> = axes.iter().map(|a| format!("{a}={}", mesh.size(a).unwrap_or(1))).collect();
                    let which = if axes.len() == 1 { "mesh axis" } else { "mesh axes" };
                    d.push(Diag::new(span, format!("dimension {dim} of {what} has size {} which is not divisible by {n} ({which} {})", ty.shape[dim], sizes.join(" x "))));
                }
            }
            _ => {}
        }
    }
}

fn signature(f: &Function, mesh: &Mesh, d: &mut Vec<Diag>) {
    let div = f.kind == FuncKind::Global;
    for &p in &f.params {
        let v = &f.values[p];
        if let Some(s) = &v.sharding {
            check_sharding(s, &v.ty, mesh, false, div, &format!("parameter %{}", v.name), v.span, d);
        }
    }
    let mut names: HashMap<String, usize> = HashMap::new();
    for (i, r) in f.results.iter().enumerate() {
        let name = f.result_name(i);
        if let Some(s) = &r.sharding {
            check_sharding(s, &r.ty, mesh, false, div, &format!("result '{name}'"), r.span, d);
        }
        if let Some(j) = names.insert(name.clone(), i) {
            let msg = if r.name.is_none() {
                format!("unnamed result {i} gets the default name '{name}', which result {j} already has")
            } else if f.results[j].name.is_none() {
                format!("result name '{name}' is already the default name of unnamed result {j}")
            } else {
                format!("result name '{name}' is used twice")
            };
            d.push(Diag::new(r.span, msg));
        }
        if let Some(&p) = f.params.iter().find(|&&p| f.values[p].name == name) {
            let pv = &f.values[p];
            if pv.ty != r.ty {
                d.push(Diag::new(r.span, format!("result '{name}' carries parameter %{name}, so its type must be {} (got {})", pv.ty, r.ty)));
            } else if norm(&pv.sharding, pv.ty.rank()) != norm(&r.sharding, r.ty.rank()) {
                d.push(Diag::new(r.span, format!("result '{name}' carries parameter %{name}, so its sharding must equal the parameter's")));
            }
        }
    }
}

/// A sharding with "absent" spelled as fully replicated, for comparisons.
fn norm(s: &Option<Sharding>, rank: usize) -> Sharding {
    s.clone().unwrap_or_else(|| Sharding::replicated(rank))
}

fn check_attrs(inst: &InstData, mesh: &Mesh, d: &mut Vec<Diag>) -> bool {
    let def = inst.op.def();
    let mut ok = true;
    for a in &inst.attrs {
        let Some(ad) = def.attrs.iter().find(|x| x.name == a.name) else {
            let known: Vec<&str> = def.attrs.iter().map(|x| x.name).collect();
            let hint = if known.is_empty() { "it takes none".to_string() } else { format!("it takes {}", known.join(", ")) };
            d.push(Diag::new(a.span, format!("'{}' has no attribute '{}' ({hint})", inst.op, a.name)));
            ok = false;
            continue;
        };
        let good = match ad.kind {
            AttrKind::Int | AttrKind::Dim => matches!(a.value, AttrValue::Int(_)),
            AttrKind::IntList | AttrKind::DimList => a.value.as_ints().is_some(),
            AttrKind::PadList => a.value.as_pairs().is_some(),
            AttrKind::Enum(allowed) => a.value.as_ident().is_some_and(|s| allowed.contains(&s)),
            AttrKind::Axis => a.value.as_ident().is_some(),
            AttrKind::AxisList => a.value.as_idents().is_some(),
            AttrKind::Str => a.value.as_str().is_some(),
            AttrKind::Bool => matches!(a.value, AttrValue::Bool(_)),
            AttrKind::DimOrNoneList => a.value.as_list().is_some_and(|l| {
                l.iter().all(|v| matches!(v, AttrValue::Int(_)) || v.as_ident() == Some("none"))
            }),
        };
        if !good {
            let want = match ad.kind {
                AttrKind::Int => "an integer".to_string(),
                AttrKind::Dim => "a dimension index".to_string(),
                AttrKind::IntList | AttrKind::DimList => "a list of integers like [0,1]".to_string(),
                AttrKind::PadList => "a list of [lo, hi] pairs like [[1,1],[0,0]]".to_string(),
                AttrKind::Enum(allowed) => format!("one of {}", allowed.join(", ")),
                AttrKind::Axis => "a mesh axis name".to_string(),
                AttrKind::AxisList => "a list of mesh axis names like [data]".to_string(),
                AttrKind::Str => "a string".to_string(),
                AttrKind::Bool => "true or false".to_string(),
                AttrKind::DimOrNoneList => "a list of integers or none".to_string(),
            };
            d.push(Diag::new(a.span, format!("attribute '{}' of '{}' must be {want}", a.name, inst.op)));
            ok = false;
        }
        if matches!(ad.kind, AttrKind::Axis) {
            if let Some(ax) = a.value.as_ident() {
                if mesh.axis(ax).is_none() {
                    d.push(Diag::new(a.span, format!("unknown mesh axis '{ax}'")));
                    ok = false;
                }
            }
        }
    }
    for ad in def.attrs {
        if ad.default == pjc_dialects::AttrDefault::Required && inst.attr(ad.name).is_none() {
            d.push(Diag::new(inst.op_span, format!("'{}' needs attribute '{}'", inst.op, ad.name)));
            ok = false;
        }
    }
    ok
}

fn body(f: &Function, mesh: &Mesh, sigs: &HashMap<String, CalleeSig>, d: &mut Vec<Diag>, fx: &mut Fixes) {
    // Values whose type is unknown because their definition had an error: uses of
    // them are skipped rather than reported again.
    let mut poisoned: HashSet<Value> = HashSet::new();
    // A value's type as verified: inferred here, or as the IR has it.
    fn ty<'a>(f: &'a Function, fx: &'a Fixes, v: Value) -> &'a TensorType {
        fx.types.get(&v).unwrap_or(&f.values[v].ty)
    }
    for &inst_id in &f.body {
        let inst = &f.insts[inst_id];
        let mut ok = true;
        if inst.op.def().context == Context::SpmdOnly && f.kind == FuncKind::Global {
            d.push(Diag::new(inst.op_span, format!("'{}' is only allowed in a spmd func (a func is written in the global view; pjc inserts communication itself)", inst.op)));
            ok = false;
        }
        ok &= check_attrs(inst, mesh, d);
        let mut callees = vec![];
        for (k, name) in inst.callees.iter().enumerate() {
            match sigs.get(name) {
                Some(s) => callees.push(s),
                None => {
                    let span = inst.callee_spans.get(k).copied().unwrap_or(inst.op_span);
                    d.push(Diag::new(span, format!("unknown function @{name}")));
                    ok = false;
                }
            }
        }
        if inst.operands.iter().any(|v| poisoned.contains(v)) {
            ok = false;
        }
        let written: Vec<TensorType> = if inst.types_written {
            inst.results.iter().map(|&r| ty(f, fx, r).clone()).collect()
        } else {
            vec![]
        };
        let mut inferred = None;
        if ok {
            let operand_types: Vec<&TensorType> = inst.operands.iter().map(|&v| ty(f, fx, v)).collect();
            let ctx = InferCtx { mesh, caller: f.kind, callees };
            match infer(inst, &operand_types, inst.types_written.then_some(written.as_slice()), &ctx) {
                Ok(t) => inferred = Some(t),
                Err(e) => {
                    let span = match e.blame {
                        Blame::Op => inst.op_span,
                        Blame::Operand(i) => inst.operand_spans.get(i).copied().unwrap_or(inst.op_span),
                        Blame::Attr(name) => inst.attr_span(name),
                        Blame::ResultType => if inst.types_written { inst.types_span } else { inst.op_span },
                        Blame::Callee(k) => inst.callee_spans.get(k).copied().unwrap_or(inst.op_span),
                    };
                    d.push(Diag::new(span, e.msg));
                }
            }
        }
        if inferred.is_some() {
            // Canonical form: an attribute equal to its default is absent.
            let refs: Vec<&TensorType> = inst.operands.iter().map(|&v| ty(f, fx, v)).collect();
            let wr = pjc_ir::attrs::window_rank(inst.op, &refs);
            let mut attrs = inst.attrs.clone();
            attrs.retain(|a| {
                let def = inst.op.def().attrs.iter().find(|d| d.name == a.name);
                def.and_then(|d| pjc_ir::attrs::default_value(d, wr)).as_ref() != Some(&a.value)
            });
            // ...and the attributes are in the op table's order (the order the
            // printer uses), whatever order the source wrote them in.
            let rank = |name: &str| inst.op.def().attrs.iter().position(|d| d.name == name);
            attrs.sort_by_key(|a| rank(&a.name));
            if attrs != inst.attrs {
                fx.attrs.insert(inst_id, attrs);
            }
        }
        match inferred {
            Some(types) => {
                if types.len() != inst.results.len() {
                    d.push(Diag::new(inst.span, format!("'{}' gives {} result{} but {} name{} {} written", inst.op, types.len(), plural(types.len()), inst.results.len(), plural(inst.results.len()), if inst.results.len() == 1 { "is" } else { "are" })));
                    poisoned.extend(inst.results.iter().copied());
                    continue;
                }
                for (k, t) in types.into_iter().enumerate() {
                    let r = inst.results[k];
                    if inst.types_written {
                        if f.values[r].ty != t {
                            d.push(Diag::new(inst.types_span, format!("result type {} of %{} does not match the inferred type {t}", f.values[r].ty, f.values[r].name)));
                            // Its uses would only repeat this error.
                            poisoned.insert(r);
                        }
                    } else if f.values[r].ty != t {
                        fx.types.insert(r, t);
                    }
                }
            }
            None if !inst.types_written => poisoned.extend(inst.results.iter().copied()),
            None => {}
        }
        // Sharding constraints on results.
        for &r in &inst.results {
            let v = &f.values[r];
            if let Some(s) = &v.sharding {
                if f.kind == FuncKind::Spmd {
                    d.push(Diag::new(inst.types_span, "sharding constraints ('on' inside a body) are not allowed in a spmd func"));
                } else if !poisoned.contains(&r) {
                    check_sharding(s, ty(f, fx, r), mesh, true, true, &format!("%{}", v.name), inst.types_span, d);
                }
            }
        }
    }
    // return
    if f.ret.len() != f.results.len() {
        d.push(Diag::new(f.ret_span, format!("return gives {} value{}, but @{} declares {} result{}", f.ret.len(), plural(f.ret.len()), f.name, f.results.len(), plural(f.results.len()))));
        return;
    }
    for (i, &v) in f.ret.iter().enumerate() {
        if poisoned.contains(&v) {
            continue;
        }
        let (got, want) = (ty(f, fx, v), &f.results[i].ty);
        if got != want {
            d.push(Diag::new(f.ret_spans[i], format!("return value %{} has type {got}, but result '{}' is declared {want}", f.values[v].name, f.result_name(i))));
        }
    }
}

fn call_cycles(m: &Module, d: &mut Vec<Diag>) {
    let callees = |f: &Function| -> Vec<(String, Span)> {
        f.body
            .iter()
            .flat_map(|&i| {
                let inst = &f.insts[i];
                inst.callees.iter().enumerate().map(|(k, c)| (c.clone(), inst.callee_spans.get(k).copied().unwrap_or(inst.span)))
            })
            .collect()
    };
    let by_name: HashMap<&str, &Function> = m.funcs.values().map(|f| (f.name.as_str(), f)).collect();
    // 0 = unvisited, 1 = on stack, 2 = done
    let mut state: HashMap<&str, u8> = HashMap::new();
    // Depth-first search with an explicit stack (a long call chain must not
    // overflow the native one): each entry is a function, its callees and how
    // many of them have been looked at.
    for root in m.funcs.values() {
        if state.get(root.name.as_str()).copied().unwrap_or(0) != 0 {
            continue;
        }
        state.insert(&root.name, 1);
        let mut stack: Vec<(&Function, Vec<(String, Span)>, usize)> = vec![(root, callees(root), 0)];
        while let Some((f, cs, next)) = stack.last_mut() {
            let f: &Function = f;
            let Some((c, span)) = cs.get(*next).cloned() else {
                state.insert(&f.name, 2);
                stack.pop();
                continue;
            };
            *next += 1;
            let Some(&g) = by_name.get(c.as_str()) else { continue };
            match state.get(g.name.as_str()).copied().unwrap_or(0) {
                1 if g.name == f.name => d.push(Diag::new(span, format!("recursive call: @{} calls itself (PIR has no recursion)", f.name))),
                1 => d.push(Diag::new(span, format!("recursive call: @{} calls @{} which is already being called (PIR has no recursion)", f.name, g.name))),
                0 => {
                    state.insert(&g.name, 1);
                    stack.push((g, callees(g), 0));
                }
                _ => {}
            }
        }
    }
}

/// Spec section 5's replication rule: every `spmd func` that is not only a
/// body of control flow must give results not split over an axis that are the
/// same on every device along it; its control flow, and that of every body it
/// reaches (with the variance the call sites give their parameters), must take
/// the same path on every device and agree with the `on`s written on bodies.
fn replication(m: &Module, mesh: &Mesh, d: &mut Vec<Diag>) {
    let bodies = pjc_ir::replication::bodies_only(m);
    let mut r = pjc_ir::replication::Replication::new(m);
    for (id, f) in m.funcs.iter() {
        if f.kind != FuncKind::Spmd || bodies.contains(&id) {
            continue;
        }
        let var = r.values(f, &pjc_ir::replication::signature_axes(f));
        d.extend(r.take_problems().into_iter().map(|p| Diag::new(p.span, p.msg)));
        for (i, &v) in f.ret.iter().enumerate() {
            let split: BTreeSet<String> =
                f.results[i].sharding.iter().flat_map(|s| s.axes().map(str::to_string)).collect();
            for axis in &mesh.axes {
                if !split.contains(&axis.name) && var.get(&v).is_some_and(|s| s.contains(&axis.name)) {
                    d.push(Diag::new(
                        f.ret_spans.get(i).copied().unwrap_or(f.name_span),
                        format!(
                            "result '{}' of spmd func @{} is not split over mesh axis '{}', but pjc cannot prove it is the same on every device along '{}' (reduce it with all_reduce/all_gather over '{}', or split the result over '{}')",
                            f.result_name(i), f.name, axis.name, axis.name, axis.name, axis.name
                        ),
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_changes_nothing_and_accepts_only_the_verified_form() {
        // An untyped result and a default written out: valid, not yet verified.
        let src = "func @main(%x: f32[2,3]) -> (y: f32[2,3]) {\n  %y = add %x, %x\n  %z = reduce %y {dims=[1], kind=sum}\n  return %y\n}\n";
        let parsed = crate::parse(src).unwrap();
        let before = parsed.clone();
        let errs = check(&parsed).unwrap_err();
        assert_eq!(parsed, before, "check must not change the module");
        assert!(errs.iter().any(|e| e.msg.contains("has type")), "{errs:?}");
        let mut m = parsed;
        verify(&mut m).unwrap();
        check(&m).unwrap();
        // A written-out default is reported by check, dropped by verify.
        let src = "func @main(%x: f32[4]) -> (y: f32[2]) {\n  %y = slice %x {start=[0], limit=[2], stride=[1]}\n  return %y\n}\n";
        let parsed = crate::parse(src).unwrap();
        let errs = check(&parsed).unwrap_err();
        assert!(errs.iter().any(|e| e.msg.contains("canonical form")), "{errs:?}");
        let mut m = parsed;
        verify(&mut m).unwrap();
        check(&m).unwrap();
        // Real errors are the same either way.
        let bad = crate::parse("func @main(%x: f32[4]) -> (y: f32[3]) {\n  return %x\n}\n").unwrap();
        let a = check(&bad).unwrap_err();
        let b = verify(&mut bad.clone()).unwrap_err();
        assert_eq!(a, b);
    }
}
