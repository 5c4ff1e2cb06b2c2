//! One global instruction as per-device code: choose factor splits, reshard
//! operands, emit the op on local shapes, finish split reductions, reshard the
//! result to its target.

use crate::reshard::{dim_axes, sharding_of};
use crate::{Local, PartitionError, Partitioner};
use pjc_ir::attrs::resolved_attr;
use pjc_ir::{AttrValue, CollectiveKind, DType, FuncKind, Function, InstData, Literal, Number, Opcode, Sharding, TensorType, Value, ValueDef};
use pjc_sharding::rules::{factor_rule, split_axes, FactorKind, FactorRule};
use std::collections::HashMap;

/// A dim's axes composed from its factors' axes (stopping at an unsplit or
/// partially split factor).
fn compose(mesh: &pjc_ir::Mesh, factors: &[usize], fax: &[Option<Vec<String>>], sizes: &[u64]) -> Vec<String> {
    let mut out = vec![];
    for &f in factors {
        let Some(a) = &fax[f] else { break };
        if a.is_empty() {
            break;
        }
        out.extend(a.iter().cloned());
        if mesh.group_size(a.iter().map(|x| x.as_str())) != sizes[f] {
            break;
        }
    }
    out
}

fn i32_scalar() -> TensorType {
    TensorType::scalar(DType::I32)
}

pub(crate) fn lower(
    p: &mut Partitioner,
    f: &Function,
    inst: &InstData,
    env: &mut HashMap<Value, Local>,
) -> Result<(), PartitionError> {
    let op = inst.op;
    if op.is_transform() {
        return Err(PartitionError(format!("'{op}' must be expanded before partitioning")));
    }
    if op.def().context == pjc_dialects::Context::SpmdOnly {
        return Err(PartitionError(format!("'{op}' in a func")));
    }
    let targets: Vec<Vec<Vec<String>>> = inst
        .results
        .iter()
        .map(|&r| dim_axes(&p.target(r)))
        .collect();
    if op == Opcode::Call {
        return lower_spmd_call(p, f, inst, env, &targets);
    }
    let n = inst.operands.len();
    let rule: FactorRule = factor_rule(f, inst);
    let nf = rule.kinds.len();
    let mesh = p.mesh.clone();
    // Which factors are split over which axes. Two greedy orders give the
    // candidates, and the one whose communication costs fewer bytes wins
    // (the first on a tie): split reductions keep the splits the operands
    // already have, or the results' target splits go first. They differ
    // only where an axis splits both a contracted factor of one operand and
    // a kept factor the result wants split over it — an FSDP weight split
    // over the batch's axis meeting a product over the batch: contracting
    // it split costs moving the other operand and reduce-scattering the
    // partial product, gathering it costs the weight.
    let (mut fax, mut halos) = choose(p, f, inst, &rule, env, &targets, Order::ReductionsFirst);
    let split: Vec<String> = (0..nf).filter(|&fi| rule.kinds[fi] == FactorKind::Reduction).filter_map(|fi| fax[fi].clone()).flatten().collect();
    // Why the operands move, when the cheaper plan is not the default one.
    let mut priced = String::new();
    if !split.is_empty() && halos.is_empty() && inst.results.len() == 1 {
        let (fb, hb) = choose(p, f, inst, &rule, env, &targets, Order::TargetsFirst);
        if fb != fax && hb.is_empty() {
            let (a, b) = (cost(p, f, inst, &rule, env, &targets[0], &fax), cost(p, f, inst, &rule, env, &targets[0], &fb));
            if b < a {
                (fax, halos) = (fb, hb);
                priced = format!(", {b} B in all, against {a} B with the {} split over {}", rule.completion.map_or("reduction", |c| c.what), split.join(", "));
            }
        }
    }
    // 2-3. Reshard operands to what the factors imply.
    let mut ops: Vec<Value> = vec![];
    for (t, &a) in inst.operands.iter().enumerate() {
        let want: Vec<Vec<String>> = rule.dims[t].iter().map(|fs| compose(&mesh, fs, &fax, &rule.sizes)).collect();
        let l = env[&a].clone();
        let why = format!("operand {t} of {op} %{}", f.values[inst.results[0]].name);
        let why = match unsplittable(&rule, t, &l.axes, &want) {
            (whole, _) if !whole.is_empty() => format!("{why} ({op} needs dim {} whole on each device)", whole.join(", ")),
            (_, partial) if !partial.is_empty() => format!("{why} ({op} cannot combine partial results over dim {})", partial.join(", ")),
            _ if !priced.is_empty() => format!("{why} (to keep the result's split{priced})"),
            _ => why,
        };
        ops.push(p.reshard(l.v, f.ty(a), &l.axes, &want, &why));
    }
    let mut overrides: Vec<(String, AttrValue)> = vec![];
    if !halos.is_empty() {
        let operand_types: Vec<&TensorType> = inst.operands.iter().map(|&v| f.ty(v)).collect();
        let mut padding = resolved_attr(inst, "padding", &operand_types).and_then(|v| v.as_pairs()).unwrap_or_default();
        let pad = crate::halo::pad_value(inst, f.ty(inst.operands[0]).dtype);
        for h in &halos {
            ops[0] = p.exchange(ops[0], h, pad, &format!("{op} %{}", f.values[inst.results[0]].name));
            padding[h.attr_index] = (0, 0);
        }
        let list = padding.iter().map(|&(lo, hi)| AttrValue::int_list(&[lo, hi])).collect();
        overrides.push(("padding".to_string(), AttrValue::List(list)));
    }
    // 4. The op on local shapes.
    let computed_all: Vec<Vec<Vec<String>>> = (0..inst.results.len())
        .map(|r| rule.dims[n + r].iter().map(|fs| compose(&mesh, fs, &fax, &rule.sizes)).collect())
        .collect();
    let globals: Vec<TensorType> = inst.results.iter().map(|&r| f.ty(r).clone()).collect();
    let local_tys: Vec<TensorType> = globals.iter().zip(&computed_all).map(|(g, c)| p.local(g, c)).collect();
    let name = f.values[inst.results[0]].name.clone();
    let names: Vec<String> = inst.results.iter().map(|&r| f.values[r].name.clone()).collect();
    let vs = emit(p, inst, &ops, &local_tys, &computed_all, &globals, &names, &overrides)?;
    if inst.results.len() > 1 {
        // Several results (sort, top_k): no op of that kind has reduction
        // factors, so each result only moves to its target.
        if (0..nf).any(|fi| rule.kinds[fi] == FactorKind::Reduction && fax[fi].is_some()) {
            return Err(PartitionError(format!("internal error: {op} %{name} has split reductions and several results")));
        }
        for (r, &res) in inst.results.iter().enumerate() {
            let rname = &f.values[res].name;
            let v = p.reshard(vs[r], &globals[r], &computed_all[r], &targets[r], &format!("sharding of %{rname}"));
            env.insert(res, Local { v, axes: targets[r].clone() });
        }
        return Ok(());
    }
    let (computed, global, mut v) = (&computed_all[0], &globals[0], vs[0]);
    // 5. Finish split reductions.
    let red_axes: Vec<String> = (0..nf)
        .filter(|&fi| rule.kinds[fi] == FactorKind::Reduction)
        .filter_map(|fi| fax[fi].clone())
        .flatten()
        .collect();
    let mut have = computed.clone();
    if let (false, Some(completion)) = (red_axes.is_empty(), rule.completion) {
        let kind = completion.kind.name();
        let target = &targets[0];
        let scatter_dim = scatter_dim(&mesh, &have, target, &red_axes, p.ty(v));
        let why = format!("{op} %{name} has its {} split over {}: partial results", completion.what, red_axes.join(", "));
        let axes_attr = AttrValue::List(red_axes.iter().map(|a| AttrValue::Ident(a.clone())).collect());
        if let Some(d) = scatter_dim {
            let r = p.b().build(
                Opcode::ReduceScatter,
                &[v],
                vec![("axes", axes_attr), ("dim", AttrValue::Int(d as i64)), ("kind", AttrValue::Ident(kind.into()))],
                &format!("{name}.rs"),
            );
            p.record(r, red_axes.clone(), format!("{why}, and the result is split over them on dim {d}"));
            have[d].extend(red_axes.iter().cloned());
            v = r;
        } else {
            let r = p.b().build(
                Opcode::AllReduce,
                &[v],
                vec![("axes", axes_attr), ("kind", AttrValue::Ident(kind.into()))],
                &format!("{name}.ar"),
            );
            p.record(r, red_axes.clone(), why);
            v = r;
        }
    }
    // 6. The target adds only splits the op could not compute locally (free slices).
    let v = p.reshard(v, global, &have, &targets[0], &format!("sharding of %{name}"));
    env.insert(inst.results[0], Local { v, axes: targets[0].clone() });
    Ok(())
}

/// The dim a split reduction over `red_axes` can reduce-scatter onto: the
/// one the target splits by exactly these axes next (`have` the local
/// result's split, `local` its type); `None`: all_reduce.
fn scatter_dim(mesh: &pjc_ir::Mesh, have: &[Vec<String>], target: &[Vec<String>], red_axes: &[String], local: &TensorType) -> Option<usize> {
    (0..have.len()).find(|&d| {
        target[d].len() == have[d].len() + red_axes.len()
            && target[d][..have[d].len()] == have[d][..]
            && target[d][have[d].len()..] == red_axes[..]
            && (0..have.len()).all(|e| e == d || target[e] == have[e])
            && local.shape[d] % mesh.group_size(red_axes.iter().map(|x| x.as_str())) == 0
    })
}

/// The bytes each device sends (ring formulas) to lower single-result `inst`
/// with factor splits `fax`: its operands' reshards (none for a reshard made
/// before and reused), the collective finishing its split reductions, and
/// the result's reshard to `target` — the steps `lower` then emits.
#[allow(clippy::too_many_arguments)]
fn cost(
    p: &Partitioner,
    f: &Function,
    inst: &InstData,
    rule: &FactorRule,
    env: &HashMap<Value, Local>,
    target: &[Vec<String>],
    fax: &[Option<Vec<String>>],
) -> u64 {
    let mesh = &p.mesh;
    let n = inst.operands.len();
    let mut bytes = 0u64;
    for (t, &a) in inst.operands.iter().enumerate() {
        let want: Vec<Vec<String>> = rule.dims[t].iter().map(|fs| compose(mesh, fs, fax, &rule.sizes)).collect();
        let l = &env[&a];
        bytes = bytes.saturating_add(p.reshard_bytes(Some(l.v), p.ty(l.v), &l.axes, &want));
    }
    let computed: Vec<Vec<String>> = rule.dims[n].iter().map(|fs| compose(mesh, fs, fax, &rule.sizes)).collect();
    let global = f.ty(inst.results[0]);
    let local = p.local(global, &computed);
    let red_axes: Vec<String> = (0..rule.kinds.len())
        .filter(|&fi| rule.kinds[fi] == FactorKind::Reduction)
        .filter_map(|fi| fax[fi].clone())
        .flatten()
        .collect();
    let mut have = computed.clone();
    let mut ty = local.clone();
    if !red_axes.is_empty() && rule.completion.is_some() {
        let k = mesh.group_size(red_axes.iter().map(|x| x.as_str()));
        match scatter_dim(mesh, &have, target, &red_axes, &local) {
            Some(d) => {
                ty.shape[d] /= k;
                bytes = bytes.saturating_add(CollectiveKind::ReduceScatter.ring_bytes(local.bytes(), ty.bytes(), k));
                have[d].extend(red_axes.iter().cloned());
            }
            None => bytes = bytes.saturating_add(CollectiveKind::AllReduce.ring_bytes(local.bytes(), local.bytes(), k)),
        }
    }
    bytes.saturating_add(p.reshard_bytes(None, &ty, &have, target))
}

/// The order in which [`choose`] gives factors their splits.
#[derive(Clone, Copy, PartialEq)]
enum Order {
    /// Reduction factors keep an operand's split first (when the op can
    /// finish it with a collective): partial results then an all_reduce, or a
    /// reduce_scatter when the result is wanted split over the same axes, beat
    /// moving the operands — unless the axis is one the result wants on a
    /// kept factor.
    ReductionsFirst,
    /// Pass-through factors take the results' target splits first; a
    /// reduction factor keeps an operand's split only over axes left.
    TargetsFirst,
}

/// The split of every factor of `inst` (`None` = whole) and the windows that
/// exchange halos, for one [`Order`].
fn choose(
    p: &Partitioner,
    f: &Function,
    inst: &InstData,
    rule: &FactorRule,
    env: &HashMap<Value, Local>,
    targets: &[Vec<Vec<String>>],
    order: Order,
) -> (Vec<Option<Vec<String>>>, Vec<crate::halo::Halo>) {
    let n = inst.operands.len();
    let nf = rule.kinds.len();
    let mesh = p.mesh.clone();
    let mut fax: Vec<Option<Vec<String>>> = vec![None; nf];
    // 1. Reduction factors keep the split an operand already has, over axes
    // not taken yet (see `Order`).
    let reductions = |fax: &mut Vec<Option<Vec<String>>>| {
        let reducible = rule.completion.is_some();
        for fi in 0..nf {
            if rule.kinds[fi] != FactorKind::Reduction || !reducible {
                continue;
            }
            'found: for t in 0..n {
                for (d, fs) in rule.dims[t].iter().enumerate() {
                    if let Some(k) = fs.iter().position(|&x| x == fi) {
                        let split = split_axes(&mesh, &env[&inst.operands[t]].axes[d], fs, &rule.sizes);
                        let a = &split[k];
                        let taken: Vec<String> = fax.iter().flatten().flatten().cloned().collect();
                        if !a.is_empty() && !a.iter().any(|x| taken.contains(x)) {
                            fax[fi] = Some(a.clone());
                            break 'found;
                        }
                    }
                }
            }
        }
    };
    // 2. Pass-through factors take the results' target splits (axes a
    // reduction already holds come later, from the reduction's collective).
    // Of several results (sort, top_k) that want one factor split, or one
    // axis on two factors, the first wins; the others are resharded after.
    let passes = |fax: &mut Vec<Option<Vec<String>>>| {
        for (r, target) in targets.iter().enumerate() {
            for (d, fs) in rule.dims[n + r].iter().enumerate() {
                let split = split_axes(&mesh, &target[d], fs, &rule.sizes);
                for (k, &fi) in fs.iter().enumerate() {
                    let taken: Vec<String> = fax.iter().flatten().flatten().cloned().collect();
                    if rule.kinds[fi] == FactorKind::Pass && fax[fi].is_none() && !split[k].is_empty() && !split[k].iter().any(|a| taken.contains(a)) {
                        fax[fi] = Some(split[k].clone());
                    }
                }
            }
        }
    };
    match order {
        Order::ReductionsFirst => {
            reductions(&mut fax);
            passes(&mut fax);
        }
        Order::TargetsFirst => {
            passes(&mut fax);
            reductions(&mut fax);
        }
    }
    // Windows split spatially exchange halos instead of gathering the dimension.
    // A split the factors already use (a reduction's) cannot also split a window.
    let taken: Vec<String> = fax.iter().flatten().flatten().cloned().collect();
    let halos: Vec<crate::halo::Halo> = crate::halo::plan(p, f, inst, rule, &targets[0])
        .into_iter()
        .filter(|h| !h.axes.iter().any(|a| taken.contains(a)))
        .collect();
    for h in &halos {
        fax[h.factor] = Some(h.axes.clone());
    }
    // A dim's sharding is its factors' axes, major first, so a factor can stay
    // split only where every factor major to it in the same dim of *every*
    // tensor is split completely (the target may split a factor that is minor
    // in an operand, e.g. reshape [4,2] -> [2,4] on [_, a]); drop the others.
    loop {
        let mut changed = false;
        for fs in rule.dims.iter().flatten() {
            let mut blocked = false;
            for &fi in fs {
                if blocked {
                    if fax[fi].as_ref().is_some_and(|a| !a.is_empty()) {
                        fax[fi] = None;
                        changed = true;
                    }
                    continue;
                }
                match &fax[fi] {
                    Some(a) if !a.is_empty() && mesh.group_size(a.iter().map(|x| x.as_str())) == rule.sizes[fi] => {}
                    _ => blocked = true,
                }
            }
        }
        if !changed {
            break;
        }
    }
    let halos: Vec<crate::halo::Halo> = halos.into_iter().filter(|h| fax[h.factor].is_some()).collect();
    (fax, halos)
}

/// The dims of operand `t` that lose a split the op cannot keep, for the
/// gather's reason: those that need replication (the op needs the whole dim
/// on each device: concat's dim, sort's), and reduction dims without a
/// completion (scatter's index dims: no collective combines partial results).
fn unsplittable(rule: &FactorRule, t: usize, from: &[Vec<String>], want: &[Vec<String>]) -> (Vec<String>, Vec<String>) {
    let lost = |kind: FactorKind| -> Vec<String> {
        (0..from.len())
            .filter(|&d| !want[d].starts_with(&from[d]) && rule.dims[t][d].iter().any(|&fi| rule.kinds[fi] == kind))
            .map(|d| d.to_string())
            .collect()
    };
    let partial = if rule.completion.is_none() { lost(FactorKind::Reduction) } else { vec![] };
    (lost(FactorKind::NeedReplication), partial)
}

/// Emits the op on local operands: one value per result, of the local types
/// `local_tys` (sharded by `axes_all`, of global types `globals`), named
/// after the global results (`names`).
#[allow(clippy::too_many_arguments)]
fn emit(
    p: &mut Partitioner,
    inst: &InstData,
    ops: &[Value],
    local_tys: &[TensorType],
    axes_all: &[Vec<Vec<String>>],
    globals: &[TensorType],
    names: &[String],
    overrides: &[(String, AttrValue)],
) -> Result<Vec<Value>, PartitionError> {
    let (local_ty, axes, global, name) = (&local_tys[0], &axes_all[0], &globals[0], names[0].as_str());
    let op = inst.op;
    let types: Vec<TensorType> = ops.iter().map(|&v| p.ty(v).clone()).collect();
    let refs: Vec<&TensorType> = types.iter().collect();
    let mut attrs: Vec<(String, AttrValue)> = op
        .def()
        .attrs
        .iter()
        .filter_map(|ad| resolved_attr(inst, ad.name, &refs).map(|v| (ad.name.to_string(), v)))
        .collect();
    let set = |attrs: &mut Vec<(String, AttrValue)>, k: &str, v: AttrValue| {
        if let Some(e) = attrs.iter_mut().find(|e| e.0 == k) {
            e.1 = v;
        }
    };
    for (k, v) in overrides {
        set(&mut attrs, k, v.clone());
    }
    match op {
        Opcode::Constant => {
            let lit = inst.literal.clone().unwrap();
            if lit.shape.is_empty() {
                let c = p.b().splat(lit.elems[0], local_ty.clone(), name);
                return Ok(vec![c]);
            }
            // A dense literal: materialise it whole, then take this device's block.
            let c = p.b().build_typed(Opcode::Constant, &[], vec![], global.clone(), name);
            set_literal(p, c, lit);
            let none = vec![vec![]; axes.len()];
            return Ok(vec![p.reshard(c, global, &none, axes, &format!("constant %{name}"))]);
        }
        Opcode::Iota => {
            let dim = inst.attr("dim").and_then(|a| a.as_int()).unwrap_or(0) as usize;
            let v = p.b().build_typed(Opcode::Iota, &[], vec![("dim", AttrValue::Int(dim as i64))], local_ty.clone(), name);
            if axes[dim].is_empty() {
                return Ok(vec![v]);
            }
            // Offset by this device's first index along the split dim.
            let pos = p.position(&axes[dim], &format!("{name}.pos"));
            let size = p.b().splat(Number::Int(local_ty.shape[dim] as i128), i32_scalar(), "block");
            let off = p.b().build(Opcode::Mul, &[pos, size], vec![], &format!("{name}.off"));
            let off = p.b().build_typed(Opcode::Convert, &[off], vec![], TensorType::scalar(local_ty.dtype), &format!("{name}.off"));
            let offb = p.b().build_typed(Opcode::Broadcast, &[off], vec![("dims", AttrValue::List(vec![]))], local_ty.clone(), &format!("{name}.off"));
            return Ok(vec![p.b().build(Opcode::Add, &[v, offb], vec![], name)]);
        }
        Opcode::Slice => {
            // Split dims are whole-range slices (the rule makes sliced dims replicated).
            let mut limit = attrs.iter().find(|e| e.0 == "limit").and_then(|e| e.1.as_ints()).unwrap_or_default();
            for d in 0..limit.len() {
                if !axes[d].is_empty() {
                    limit[d] = types[0].shape[d] as i64;
                }
            }
            set(&mut attrs, "limit", AttrValue::int_list(&limit));
        }
        Opcode::DynamicSlice => {
            set(&mut attrs, "sizes", AttrValue::int_list(&local_ty.shape.iter().map(|&d| d as i64).collect::<Vec<_>>()));
        }
        _ => {}
    }
    let written = op.def().rule.uses_written_type();
    let attrs_ref: Vec<(&str, AttrValue)> = attrs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let res = p
        .b()
        .try_build(op, ops, attrs_ref, &[], written.then(|| local_tys.to_vec()), name)
        .map_err(|e| PartitionError(format!("local {op} for %{name}: {}", e.msg)))?;
    for (r, &v) in res.iter().enumerate() {
        if p.ty(v) != &local_tys[r] {
            return Err(PartitionError(format!(
                "local {op} for %{} has type {} but its sharding {} needs {}",
                names[r],
                p.ty(v),
                sharding_of(&axes_all[r]),
                local_tys[r]
            )));
        }
        if r > 0 {
            // The builder names every result after the first; keep each one's own name.
            let fresh = p.b().fresh(&names[r]);
            p.out.values[v].name = fresh;
        }
    }
    Ok(res)
}

fn set_literal(p: &mut Partitioner, v: Value, lit: Literal) {
    let ValueDef::Result(inst, _) = p.out.values[v].def else { unreachable!() };
    p.out.insts[inst].literal = Some(lit);
}

/// `call` of a spmd func from the global view: arguments resharded to the
/// callee's signature; results have the callee's result shardings.
fn lower_spmd_call(
    p: &mut Partitioner,
    f: &Function,
    inst: &InstData,
    env: &mut HashMap<Value, Local>,
    _targets: &[Vec<Vec<String>>],
) -> Result<(), PartitionError> {
    let name = inst.callee().unwrap_or_default().to_string();
    let g = p.m.func_by_name(&name).ok_or_else(|| PartitionError(format!("unknown callee @{name}")))?;
    let gf = &p.m.funcs[g];
    if gf.kind != FuncKind::Spmd {
        return Err(PartitionError(format!("call of @{name} was not inlined")));
    }
    let mut args = vec![];
    for (k, &a) in inst.operands.iter().enumerate() {
        let pv = &gf.values[gf.params[k]];
        let want = dim_axes(pv.sharding.as_ref().unwrap_or(&Sharding::replicated(pv.ty.rank())));
        let l = env[&a].clone();
        args.push(p.reshard(l.v, f.ty(a), &l.axes, &want, &format!("argument {k} of spmd func @{name}")));
    }
    let rs = p
        .b()
        .try_build(Opcode::Call, &args, vec![], &[name.clone()], None, &f.values[inst.results[0]].name)
        .map_err(|e| PartitionError(format!("call @{name}: {}", e.msg)))?;
    for (k, &r) in inst.results.iter().enumerate() {
        let decl = &gf.results[k];
        let axes = dim_axes(decl.sharding.as_ref().unwrap_or(&Sharding::replicated(decl.ty.rank())));
        env.insert(r, Local { v: rs[k], axes });
    }
    Ok(())
}
