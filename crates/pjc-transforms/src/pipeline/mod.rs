//! Pipeline parallelism (`pjc compile --pipeline AXIS --microbatches M`): a
//! `scan` over stacked layer parameters whose dimension 0 is split over mesh
//! axis AXIS (`on [stage, ...]`, as flax `nn.scan` over layers exports it)
//! becomes an explicit per-stage program, a `spmd func` the scan's function
//! calls (shard_map style), so that position k along AXIS holds layers
//! k·L/S … (k+1)·L/S−1 and never gathers the others.
//!
//! Runs on the verified program before `grad` is expanded, like
//! `--accumulate` (`accumulate/`), and writes only spec-level PIR: every
//! later stage (grad, propagation, partitioning, planning, the runtime)
//! takes it unchanged. For
//!
//! ```text
//! %h2 = scan @layer(%h, %ws, %bs) {length=L, carries=1}     // %ws: on [stage, _, _]
//! ```
//! it generates
//! - `@layer.stage`: the body retyped for one micro-batch (`accumulate`'s
//!   batch analysis, `batch.rs`), a `spmd func`;
//! - `@layer.tick`: one tick of the schedule on one stage: the micro-batch
//!   `m = t - k` (stage k, tick t; idle outside `0 <= m < M`) — stage 0 takes
//!   slice t of the cut-up batch, the others what the previous stage sent
//!   last tick —, a `scan` of `@layer.stage` over the stage's L/S layers, and
//!   `collective_permute {shift=1}` over AXIS sending the activation on
//!   (stage 0 receives the last stage's, and ignores it). Idle ticks compute
//!   on zeros: a mask (`select`) and not a branch, since a `switch` index must
//!   be the same on every device (spec section 5);
//! - `@layer.pipeline`: the batch cut into M micro-batches and padded with
//!   S−1 ticks of zeros, a `scan` of `@layer.tick` over the M+S−1 ticks that
//!   takes one slice per tick and stacks each tick's result (so a tick touches
//!   one micro-batch's rows, never the whole batch), the last stage's ticks
//!   S−1 … S+M−2 sliced out and summed over AXIS (`all_reduce` of values that
//!   are zero on the other stages) so every stage has them.
//!
//! The scan becomes `call @layer.pipeline`. When the program takes `grad`
//! through it, the expansion of `grad` (reverse mode through `scan` and the
//! collectives, section 9) gives GPipe's backward: the ticks in reverse,
//! each stage's layers' VJPs, activation gradients sent back by
//! `collective_permute {shift=-1}`, the stacked weights' gradients
//! accumulated per stage, and a data axis's gradient all-reduce once, after
//! the last micro-batch (the transpose of the implicit broadcast of the
//! weights, outside the tick loop).
//!
//! Costs beyond the schedule's: idle ticks compute (masked), as in
//! GSPMD-style pipelines; `grad` of a `spmd func` call recomputes the
//! callee's forward pass in its VJP (`grad/mod.rs`), so a training step runs
//! the forward ticks twice, and computes the cotangent of the batch too.

mod schedule;
pub use schedule::{backward_at, bubble, explain, forward_at, ticks, Pipelined, Schedule};

use crate::accumulate::batch::{self, BatchDim};
use crate::names::FuncNames;
use crate::TransformError;
use pjc_ir::builder::{signatures, Builder};
use pjc_ir::{AttrValue, DType, DimSharding, FuncId, FuncKind, Function, Inst, Module, Number, Opcode, ResultDecl, Sharding, Span, TensorType, Value, ValueDef};
use std::collections::{HashMap, HashSet};

/// What `--pipeline` asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    /// The mesh axis the stages lie along.
    pub axis: String,
    /// Micro-batches per step (M ≥ 1).
    pub microbatches: u64,
    pub schedule: Schedule,
}

/// Why the program cannot be pipelined.
#[derive(Clone, Debug, PartialEq)]
pub enum PipelineError {
    /// A located diagnostic (exit 1).
    Program(TransformError),
    /// The command line is wrong (an axis the mesh lacks): one line (exit 2).
    Flag(String),
}

type R<T> = Result<T, PipelineError>;

fn prog(span: Span, msg: String) -> PipelineError {
    PipelineError::Program(TransformError { span, msg })
}

/// The axes of dimension 0 of a signature sharding, if it is split.
fn dim0_axes(s: Option<&Sharding>) -> Option<Vec<String>> {
    match s.and_then(|s| s.dims.first()) {
        Some(DimSharding::Axes(a)) if !a.is_empty() => Some(a.clone()),
        _ => None,
    }
}

/// Rewrites every scan over parameters stacked along `opts.axis` (module doc).
pub fn pipeline(m: &mut Module, entry: FuncId, opts: &Pipeline) -> R<Vec<Pipelined>> {
    let axis = opts.axis.as_str();
    let what = format!("--pipeline {axis}");
    let mesh = m.mesh_or_single();
    let Some(stages) = mesh.size(axis) else {
        let all: Vec<&str> = mesh.axes.iter().map(|a| a.name.as_str()).collect();
        return Err(PipelineError::Flag(format!(
            "{what}: the mesh has no axis '{axis}' ({})",
            if all.is_empty() {
                "the program declares no mesh".to_string()
            } else {
                format!("its axes: {}", all.join(", "))
            }
        )));
    };
    if opts.microbatches == 0 {
        return Err(PipelineError::Flag("--microbatches needs at least 1 micro-batch".into()));
    }
    if opts.schedule == Schedule::OneFOneB {
        return Err(PipelineError::Flag("--schedule 1f1b is not implemented yet: pjc generates GPipe (--schedule gpipe) only".into()));
    }
    let f = &m.funcs[entry];
    if f.kind == FuncKind::Spmd {
        return Err(prog(
            f.name_span,
            format!(
                "unsupported: {what} rewrites a program in the global view (a func); @{} is a spmd func: write its stages there with collective_permute",
                f.name
            ),
        ));
    }
    // The stacked parameters (dimension 0 over the axis) and the batch's axes
    // (dimension 0 of the other split parameters).
    let mut stacked = vec![];
    let mut batch_axes: Option<Vec<String>> = None;
    for i in 0..f.params.len() {
        let v = &f.values[f.params[i]];
        let Some(a) = dim0_axes(v.sharding.as_ref()) else { continue };
        if a.iter().any(|x| x == axis) {
            if a.len() != 1 {
                return Err(prog(
                    v.span,
                    format!(
                        "unsupported: {what}: dimension 0 of %{} is split over [{}]; a stacked parameter's dimension 0 is split over {axis} alone",
                        v.name,
                        a.join(", ")
                    ),
                ));
            }
            if let Some(s) = &v.sharding {
                let others: Vec<&str> = s.dims[1..].iter().flat_map(|d| if let DimSharding::Axes(x) = d { x.as_slice() } else { &[] }).map(String::as_str).collect();
                if !others.is_empty() {
                    return Err(prog(
                        v.span,
                        format!(
                            "unsupported: {what}: stacked parameter %{} is also split over [{}] on another dimension; tensor parallelism inside a pipeline stage is not supported yet",
                            v.name,
                            others.join(", ")
                        ),
                    ));
                }
            }
            stacked.push(i);
        } else {
            match &batch_axes {
                Some(b) if *b != a => {
                    return Err(prog(
                        v.span,
                        format!(
                            "unsupported: {what}: the batch parameters split dimension 0 over [{}] and [{}]; a pipeline takes one data-parallel split of its batch",
                            b.join(", "),
                            a.join(", ")
                        ),
                    ));
                }
                _ => batch_axes = Some(a),
            }
        }
    }
    let batch_axes = batch_axes.unwrap_or_default();
    if stacked.is_empty() {
        return Err(prog(
            f.name_span,
            format!(
                "unsupported: {what}: no parameter of @{} has dimension 0 split over {axis} (stacked layer parameters, on [{axis}, ...])",
                f.name
            ),
        ));
    }
    // Which parameters of which functions receive them, through call and grad.
    let mut marked: HashMap<FuncId, HashSet<usize>> = HashMap::new();
    marked.insert(entry, stacked.into_iter().collect());
    loop {
        let mut more = vec![];
        for (&id, ps) in &marked {
            let g = &m.funcs[id];
            for &i in &g.body {
                let d = &g.insts[i];
                if !matches!(d.op, Opcode::Call | Opcode::Grad) {
                    continue;
                }
                let Some(c) = d.callee().and_then(|c| m.func_by_name(c)) else { continue };
                for (j, &o) in d.operands.iter().enumerate() {
                    if matches!(g.values[o].def, ValueDef::Param(p) if ps.contains(&p)) && !marked.get(&c).is_some_and(|s| s.contains(&j)) {
                        more.push((c, j));
                    }
                }
            }
        }
        if more.is_empty() {
            break;
        }
        for (c, j) in more {
            marked.entry(c).or_default().insert(j);
        }
    }
    // The scans whose scanned operands include one.
    let mut scans: Vec<(FuncId, Inst)> = vec![];
    for (&id, ps) in &marked {
        let g = &m.funcs[id];
        for &i in &g.body {
            let d = &g.insts[i];
            if d.op != Opcode::Scan {
                continue;
            }
            let c = d.attr("carries").and_then(|a| a.as_int()).unwrap_or(0).max(0) as usize;
            if d.operands[c.min(d.operands.len())..].iter().any(|&o| matches!(g.values[o].def, ValueDef::Param(p) if ps.contains(&p))) {
                scans.push((id, i));
            }
        }
    }
    scans.sort();
    if scans.is_empty() {
        let f = &m.funcs[entry];
        return Err(prog(
            f.name_span,
            format!("unsupported: {what}: no scan takes the parameters stacked over {axis} as scanned operands (a scan over layers, as flax nn.scan exports it), so there is nothing to pipeline"),
        ));
    }
    let differentiated = differentiated_funcs(m);
    let mut names = FuncNames::default();
    let mut out = vec![];
    for (id, i) in scans {
        let ctx = Ctx {
            axis,
            stages,
            micro: opts.microbatches,
            batch_axes: &batch_axes,
            what: &what,
        };
        let mut p = rewrite(m, id, i, &ctx, &mut names)?;
        p.differentiated = differentiated.contains(&m.funcs[id].name);
        p.schedule = opts.schedule;
        out.push(p);
    }
    Ok(out)
}

/// Names of the functions a `grad` differentiates, directly or through calls.
fn differentiated_funcs(m: &Module) -> HashSet<String> {
    let mut set: HashSet<String> = HashSet::new();
    let mut todo: Vec<String> = m
        .funcs
        .values()
        .flat_map(|f| f.body.iter().map(|&i| &f.insts[i]))
        .filter(|d| d.op == Opcode::Grad)
        .filter_map(|d| d.callee().map(str::to_string))
        .collect();
    while let Some(n) = todo.pop() {
        if !set.insert(n.clone()) {
            continue;
        }
        if let Some(id) = m.func_by_name(&n) {
            let f = &m.funcs[id];
            todo.extend(f.body.iter().filter(|&&i| f.insts[i].op == Opcode::Call).filter_map(|&i| f.insts[i].callee().map(str::to_string)));
        }
    }
    set
}

/// What one rewrite needs to know.
struct Ctx<'a> {
    axis: &'a str,
    stages: u64,
    micro: u64,
    batch_axes: &'a [String],
    what: &'a str,
}

fn i32_scalar() -> TensorType {
    TensorType::scalar(DType::I32)
}

fn zero_of(dt: DType) -> Number {
    if dt.is_float() {
        Number::Float(0.0)
    } else if dt == DType::Pred {
        Number::Bool(false)
    } else {
        Number::Int(0)
    }
}

fn with_dims(ty: &TensorType, lead: &[u64], rest_from: usize) -> TensorType {
    let mut s = lead.to_vec();
    s.extend(&ty.shape[rest_from..]);
    TensorType::new(ty.dtype, s)
}

fn axes_attr(axis: &str) -> AttrValue {
    AttrValue::List(vec![AttrValue::Ident(axis.to_string())])
}

/// Rewrites scan `inst` of function `fid` into a call of its per-stage program.
fn rewrite(m: &mut Module, fid: FuncId, inst: Inst, cx: &Ctx, names: &mut FuncNames) -> R<Pipelined> {
    let what = cx.what;
    let (s, mm) = (cx.stages, cx.micro);
    let f = &m.funcs[fid];
    let d = f.insts[inst].clone();
    let scan_name = f.values[d.results[0]].name.clone();
    let fname = f.name.clone();
    let op_ty: Vec<TensorType> = d.operands.iter().map(|&o| f.values[o].ty.clone()).collect();
    let slice_names: Vec<String> = (0..d.operands.len()).map(|k| f.values[d.operands[k]].name.clone()).collect();
    let c = d.attr("carries").and_then(|a| a.as_int()).unwrap_or(0) as usize;
    let layers = d.attr("length").and_then(|a| a.as_int()).unwrap_or(0) as u64;
    if d.attr("reverse").and_then(|a| if let AttrValue::Bool(b) = a { Some(*b) } else { None }).unwrap_or(false) {
        return Err(prog(d.span, format!("unsupported: {what}: scan %{scan_name} runs in reverse; a pipeline runs its layers in order")));
    }
    if layers % s != 0 {
        return Err(prog(
            d.span,
            format!("{what}: scan %{scan_name} has {layers} layers, which do not split into {s} stages of equal depth"),
        ));
    }
    let callee = d.callee().unwrap_or_default().to_string();
    let bid = m.func_by_name(&callee).ok_or_else(|| prog(d.span, format!("unknown function @{callee}")))?;
    let has_calls = m.funcs[bid].body.iter().any(|&i| !m.funcs[bid].insts[i].callees.is_empty());
    let body = if has_calls {
        crate::inline_calls(m, bid).map_err(PipelineError::Program)?
    } else {
        m.funcs[bid].clone()
    };
    if body.results.len() != c {
        return Err(prog(
            d.span,
            format!("unsupported: {what}: scan %{scan_name} stacks per-layer outputs; a pipelined scan returns its carries only"),
        ));
    }
    if let Some(&i) = body.body.iter().find(|&&i| !body.insts[i].callees.is_empty()) {
        return Err(prog(
            body.insts[i].span,
            format!(
                "unsupported: {what}: the layer @{callee} has control flow ({}); a pipeline stage's layer is straight-line code",
                body.insts[i].op
            ),
        ));
    }
    for v in body.values.values() {
        if let Some(sh) = &v.sharding {
            if sh.axes().any(|a| !cx.batch_axes.iter().any(|b| b == a)) {
                return Err(prog(v.span, format!("unsupported: {what}: %{} of the layer @{callee} is constrained to be split over [{}]; inside a pipeline stage only the batch's split applies (tensor parallelism in stages is not supported yet)", v.name, sh.axes().collect::<Vec<_>>().join(", "))));
            }
        }
    }
    // Activations: carries the layer changes; the others ride along unchanged.
    let act: Vec<usize> = (0..c).filter(|&k| body.ret[k] != body.params[k]).collect();
    let inv: Vec<usize> = (0..c).filter(|&k| body.ret[k] == body.params[k]).collect();
    let scanned: Vec<usize> = (c..d.operands.len()).collect();
    if act.is_empty() {
        return Err(prog(d.span, format!("unsupported: {what}: scan %{scan_name} carries nothing from layer to layer")));
    }
    let rows = op_ty[act[0]].shape.first().copied().unwrap_or(0);
    for &k in &act {
        let t = &op_ty[k];
        if t.shape.first().copied() != Some(rows) {
            return Err(prog(
                d.span,
                format!(
                    "unsupported: {what}: the activations scan %{scan_name} carries have dimension 0 of sizes {rows} and {}; the batch is dimension 0 of each",
                    t.shape.first().map_or("(scalar)".to_string(), |x| x.to_string())
                ),
            ));
        }
    }
    let mesh = m.mesh_or_single();
    let g = mesh.group_size(cx.batch_axes.iter().map(|a| a.as_str()));
    if rows % (g * mm) != 0 {
        let per_device = if g > 1 {
            format!(" on each of the {g} devices of [{}]", cx.batch_axes.join(", "))
        } else {
            String::new()
        };
        return Err(prog(
            d.span,
            format!("{what}: the batch of scan %{scan_name} has {rows} rows, which do not split into {mm} equal micro-batches{per_device}"),
        ));
    }
    let mb = rows / (g * mm);
    let local_rows = rows / g;
    let batched = batch::batched_anywhere(&body, &act, rows, what).map_err(PipelineError::Program)?;
    for &k in &act {
        if batched.get(&body.ret[k]) != Some(&BatchDim { dim: 0, inner: 1 }) {
            return Err(prog(
                body.ret_spans.get(k).copied().unwrap_or(body.span),
                format!("unsupported: {what}: result {k} of the layer @{callee} does not hold the batch in dimension 0 as its carry does"),
            ));
        }
    }
    // @B.stage: the layer on one micro-batch of one device.
    let stage_name = names.fresh(m, &format!("{callee}.stage"));
    let mut stage = batch::retyped(&body, &batched, rows, g * mm, &stage_name);
    stage.kind = FuncKind::Spmd;
    for v in stage.values.keys().collect::<Vec<_>>() {
        stage.values[v].sharding = None;
    }
    for k in 0..stage.results.len() {
        stage.results[k].sharding = None;
        stage.results[k].ty = stage.values[stage.ret[k]].ty.clone();
    }
    let per = layers / s;
    let local_stacked = |t: &TensorType| with_dims(t, &[per], 1);
    let act_ty: Vec<TensorType> = act.iter().map(|&k| op_ty[k].clone()).collect();
    let mb_ty: Vec<TensorType> = act_ty.iter().map(|t| with_dims(t, &[mb], 1)).collect();
    let mbs_ty: Vec<TensorType> = act_ty.iter().map(|t| with_dims(t, &[mm, mb], 1)).collect();
    let inv_ty: Vec<TensorType> = inv.iter().map(|&k| op_ty[k].clone()).collect();
    let ws_ty: Vec<TensorType> = scanned.iter().map(|&k| local_stacked(&op_ty[k].clone())).collect();
    let tick_name = names.fresh(m, &format!("{callee}.tick"));
    let driver_name = names.fresh(m, &format!("{callee}.pipeline"));
    let carry_names: Vec<String> = (0..c).map(|k| body.values[body.params[k]].name.clone()).collect();
    let slice_names: Vec<String> = scanned.iter().map(|&k| slice_names[k].clone()).collect();
    m.funcs.push(stage);
    // @B.tick.
    let tick = {
        let sigs = signatures(m);
        let mut t = Function::new(&tick_name, FuncKind::Spmd);
        let param = |t: &mut Function, n: &str, ty: TensorType| {
            let v = t.add_value(n, ty, ValueDef::Param(t.params.len()), Span::NONE);
            t.params.push(v);
            v
        };
        let recv: Vec<Value> = act.iter().zip(&mb_ty).map(|(&k, ty)| param(&mut t, &format!("{}.recv", carry_names[k]), ty.clone())).collect();
        let invs: Vec<Value> = inv.iter().zip(&inv_ty).map(|(&k, ty)| param(&mut t, &carry_names[k], ty.clone())).collect();
        let ws: Vec<Value> = slice_names.iter().zip(&ws_ty).map(|(n, ty)| param(&mut t, n, ty.clone())).collect();
        // Slice t of the batch cut up and padded to the ticks: what stage 0 reads.
        let feed: Vec<Value> = act.iter().zip(&mb_ty).map(|(&k, ty)| param(&mut t, &format!("{}.feed", carry_names[k]), ty.clone())).collect();
        let tick = param(&mut t, "tick", i32_scalar());
        let mut b = Builder::new(&mut t, &mesh, &sigs);
        let int = |b: &mut Builder, n: u64, name: &str| b.splat(Number::Int(n as i128), i32_scalar(), name);
        let k = b.build_typed(Opcode::AxisIndex, &[], vec![("axis", AttrValue::Ident(cx.axis.to_string()))], i32_scalar(), "stage");
        let mi = b.build(Opcode::Sub, &[tick, k], vec![], "micro");
        let zero = int(&mut b, 0, "zero");
        let count = int(&mut b, mm, "micro.count");
        let cmp = |b: &mut Builder, x: Value, y: Value, dir: &str, name: &str| b.build(Opcode::Compare, &[x, y], vec![("dir", AttrValue::Ident(dir.to_string()))], name);
        let first = cmp(&mut b, k, zero, "eq", "first");
        let ge = cmp(&mut b, mi, zero, "ge", "started");
        let lt = cmp(&mut b, mi, count, "lt", "not_done");
        let active = b.build(Opcode::And, &[ge, lt], vec![], "active");
        // Each activation's input this tick: stage 0 reads micro-batch t, the
        // others take what the previous stage sent; idle ticks run on zeros.
        let mut inputs = vec![];
        for (j, &a) in act.iter().enumerate() {
            let n = &carry_names[a];
            let x = b.build(Opcode::Select, &[first, feed[j], recv[j]], vec![], &format!("{n}.in"));
            let z = b.splat(zero_of(mb_ty[j].dtype), mb_ty[j].clone(), &format!("{n}.idle"));
            inputs.push(b.build(Opcode::Select, &[active, x, z], vec![], &format!("{n}.x")));
        }
        // This stage's layers.
        let mut operands = vec![];
        for k in 0..c {
            operands.push(match act.iter().position(|&a| a == k) {
                Some(j) => inputs[j],
                None => invs[inv.iter().position(|&i| i == k).expect("a carry is an activation or not")],
            });
        }
        operands.extend(&ws);
        let attrs = vec![("length", AttrValue::Int(per as i64)), ("carries", AttrValue::Int(c as i64))];
        let layered = b
            .try_build(Opcode::Scan, &operands, attrs, std::slice::from_ref(&stage_name), None, &format!("{}.layers", carry_names[act[0]]))
            .map_err(|e| prog(d.span, format!("internal error: {what}: the stage's layer scan does not type: {}", e.msg)))?;
        // The activations go on to the next stage; each tick's result is also
        // stacked (the last stage's ticks S-1 .. S+M-2 are the micro-batches' results).
        let mut sends = vec![];
        let mut stacked = vec![];
        for &a in &act {
            let n = &carry_names[a];
            let y = layered[a];
            sends.push(b.build(Opcode::CollectivePermute, &[y], vec![("axes", axes_attr(cx.axis)), ("shift", AttrValue::Int(1))], &format!("{n}.send")));
            stacked.push(y);
        }
        let mut ret = sends;
        ret.extend(&invs);
        ret.extend(&ws);
        ret.extend(stacked);
        for v in ret {
            let ty = t.values[v].ty.clone();
            t.results.push(ResultDecl {
                name: None,
                ty,
                sharding: None,
                span: Span::NONE,
            });
            t.ret.push(v);
            t.ret_spans.push(Span::NONE);
        }
        t
    };
    m.funcs.push(tick);
    // @B.pipeline: the per-stage program.
    let act_sharding = |t: &TensorType| {
        if cx.batch_axes.is_empty() {
            return None;
        }
        let mut dims = vec![if cx.batch_axes.is_empty() {
            DimSharding::Replicated
        } else {
            DimSharding::Axes(cx.batch_axes.to_vec())
        }];
        dims.extend(std::iter::repeat_n(DimSharding::Replicated, t.shape.len() - 1));
        Some(Sharding { dims })
    };
    let stacked_sharding = |t: &TensorType| {
        let mut dims = vec![DimSharding::Axes(vec![cx.axis.to_string()])];
        dims.extend(std::iter::repeat_n(DimSharding::Replicated, t.shape.len() - 1));
        Sharding { dims }
    };
    let driver = {
        let sigs = signatures(m);
        let mut p = Function::new(&driver_name, FuncKind::Spmd);
        p.comments.before = vec![format!(
            " The scan %{scan_name} of @{fname} over {layers} layers as a {}-stage pipeline over {} ({mm} micro-batches, {} schedule, --pipeline).",
            s,
            cx.axis,
            schedule::Schedule::GPipe.name()
        )];
        let param = |p: &mut Function, n: &str, ty: TensorType, sh: Option<Sharding>| {
            let v = p.add_value(n, ty, ValueDef::Param(p.params.len()), Span::NONE);
            p.values[v].sharding = sh;
            p.params.push(v);
            v
        };
        let acts: Vec<Value> = act
            .iter()
            .zip(&act_ty)
            .map(|(&k, t)| param(&mut p, &carry_names[k], with_dims(t, &[local_rows], 1), act_sharding(t)))
            .collect();
        let invs: Vec<Value> = inv.iter().zip(&inv_ty).map(|(&k, t)| param(&mut p, &carry_names[k], t.clone(), None)).collect();
        let ws: Vec<Value> = scanned
            .iter()
            .enumerate()
            .map(|(j, &k)| param(&mut p, &slice_names[j], ws_ty[j].clone(), Some(stacked_sharding(&op_ty[k].clone()))))
            .collect();
        let mut b = Builder::new(&mut p, &mesh, &sigs);
        // The weights made to vary along the batch's axes (JAX's `pvary`):
        // adding an exact zero that varies along them. Then their gradients'
        // sums over the data-parallel axes are this add's transpose, once per
        // step after the last micro-batch, instead of one per layer and tick
        // inside the bodies (where the weights would meet the data-varying
        // activations).
        let (invs, ws) = if g == 1 {
            (invs, ws)
        } else {
            let mut zero: Option<Value> = None;
            let mut vary = |b: &mut Builder, v: Value| {
                let t = b.func.values[v].ty.clone();
                if !t.dtype.is_float() {
                    return v;
                }
                let z = *zero.get_or_insert_with(|| {
                    let mut pos: Option<Value> = None;
                    for a in cx.batch_axes {
                        let i = b.build_typed(Opcode::AxisIndex, &[], vec![("axis", AttrValue::Ident(a.clone()))], i32_scalar(), &format!("{a}.index"));
                        pos = Some(match pos {
                            None => i,
                            Some(p) => b.build(Opcode::Add, &[p, i], vec![], "batch.index"),
                        });
                    }
                    let f = b.build_typed(Opcode::Convert, &[pos.expect("batch axes")], vec![], TensorType::scalar(DType::F32), "batch.position");
                    let k = b.splat(Number::Float(0.0), TensorType::scalar(DType::F32), "batch.none");
                    b.build(Opcode::Mul, &[f, k], vec![], "batch.zero")
                });
                let zt = b.build_typed(Opcode::Convert, &[z], vec![], TensorType::scalar(t.dtype), "batch.zero");
                let zb = b.build_typed(Opcode::Broadcast, &[zt], vec![], t, "batch.zero");
                let name = b.func.values[v].name.clone();
                b.build(Opcode::Add, &[v, zb], vec![], &format!("{name}.vary"))
            };
            let invs = invs.iter().map(|&v| vary(&mut b, v)).collect::<Vec<_>>();
            let ws = ws.iter().map(|&v| vary(&mut b, v)).collect::<Vec<_>>();
            (invs, ws)
        };
        let ticks_n = schedule::ticks(s, mm);
        let mut operands = vec![];
        for (j, &a) in act.iter().enumerate() {
            operands.push(b.splat(zero_of(mb_ty[j].dtype), mb_ty[j].clone(), &format!("{}.recv0", carry_names[a])));
        }
        operands.extend(&invs);
        operands.extend(&ws);
        let n_carries = operands.len();
        // The batch cut into M micro-batches (rows m·mb .. (m+1)·mb−1), then
        // S−1 ticks of zeros: slice t of it is what stage 0 reads at tick t.
        for (j, &a) in act.iter().enumerate() {
            let n = &carry_names[a];
            let mbs = b.build_typed(Opcode::Reshape, &[acts[j]], vec![], mbs_ty[j].clone(), &format!("{n}.mbs"));
            let fed = if s > 1 {
                let pad = b.splat(zero_of(mbs_ty[j].dtype), with_dims(&mb_ty[j], &[s - 1, mb], 1), &format!("{n}.drain"));
                b.build(Opcode::Concat, &[mbs, pad], vec![("dim", AttrValue::Int(0))], &format!("{n}.feed"))
            } else {
                mbs
            };
            // Only stage 0 reads the batch: masked to zeros elsewhere, the feed
            // varies along the axis, so the batch's cotangent (which grad's VJP
            // of this function computes) is summed over the axis once, here,
            // instead of once per tick inside the backward's tick loop.
            let fed = if s > 1 {
                let at = b.build_typed(Opcode::AxisIndex, &[], vec![("axis", AttrValue::Ident(cx.axis.to_string()))], i32_scalar(), "stage");
                let zero = b.splat(Number::Int(0), i32_scalar(), "zero");
                let first = b.build(Opcode::Compare, &[at, zero], vec![("dir", AttrValue::Ident("eq".into()))], "first");
                let none = b.splat(zero_of(mbs_ty[j].dtype), b.func.values[fed].ty.clone(), &format!("{n}.unread"));
                b.build(Opcode::Select, &[first, fed, none], vec![], &format!("{n}.feed.first"))
            } else {
                fed
            };
            operands.push(fed);
        }
        let tick_ids = b.build_typed(Opcode::Iota, &[], vec![("dim", AttrValue::Int(0))], TensorType::new(DType::I32, vec![ticks_n]), "ticks");
        operands.push(tick_ids);
        let attrs = vec![("length", AttrValue::Int(ticks_n as i64)), ("carries", AttrValue::Int(n_carries as i64))];
        let res = b
            .try_build(Opcode::Scan, &operands, attrs, std::slice::from_ref(&tick_name), None, &format!("{}.ticks", carry_names[act[0]]))
            .map_err(|e| prog(d.span, format!("internal error: {what}: the tick scan does not type: {}", e.msg)))?;
        let k = b.build_typed(Opcode::AxisIndex, &[], vec![("axis", AttrValue::Ident(cx.axis.to_string()))], i32_scalar(), "stage");
        let lastk = b.splat(Number::Int((s - 1) as i128), i32_scalar(), "stage.last");
        let last = b.build(Opcode::Compare, &[k, lastk], vec![("dir", AttrValue::Ident("eq".into()))], "last");
        let mut ret = vec![];
        for (j, &a) in act.iter().enumerate() {
            let n = &carry_names[a];
            // The last stage finishes micro-batch m at tick S−1+m.
            let ys = res[n_carries + j];
            let rank = mbs_ty[j].shape.len();
            let mut start = vec![(s - 1) as i64];
            start.extend(std::iter::repeat_n(0i64, rank - 1));
            let limit: Vec<i64> = std::iter::once((s - 1 + mm) as i64).chain(mbs_ty[j].shape[1..].iter().map(|&x| x as i64)).collect();
            let outs = b.build(
                Opcode::Slice,
                &[ys],
                vec![
                    ("start", AttrValue::int_list(&start)),
                    ("limit", AttrValue::int_list(&limit)),
                    ("stride", AttrValue::int_list(&vec![1; rank])),
                ],
                &format!("{n}.done"),
            );
            let z = b.splat(zero_of(mbs_ty[j].dtype), mbs_ty[j].clone(), &format!("{n}.elsewhere"));
            let mine = b.build(Opcode::Select, &[last, outs, z], vec![], &format!("{n}.last"));
            let all = b.build(
                Opcode::AllReduce,
                &[mine],
                vec![("axes", axes_attr(cx.axis)), ("kind", AttrValue::Ident("sum".into()))],
                &format!("{n}.all"),
            );
            ret.push(b.build_typed(Opcode::Reshape, &[all], vec![], with_dims(&act_ty[j], &[local_rows], 1), &format!("{n}.out")));
        }
        for (j, v) in ret.into_iter().enumerate() {
            let ty = p.values[v].ty.clone();
            p.results.push(ResultDecl {
                name: None,
                ty,
                sharding: act_sharding(&act_ty[j]),
                span: Span::NONE,
            });
            p.ret.push(v);
            p.ret_spans.push(Span::NONE);
        }
        p
    };
    m.funcs.push(driver);
    // The scan becomes the call.
    let sigs = signatures(m);
    let f = &mut m.funcs[fid];
    let before = f.body.len();
    let mut operands: Vec<Value> = act.iter().map(|&k| d.operands[k]).collect();
    operands.extend(inv.iter().map(|&k| d.operands[k]));
    operands.extend(scanned.iter().map(|&k| d.operands[k]));
    let called = {
        let mut b = Builder::new(f, &mesh, &sigs);
        b.try_build(Opcode::Call, &operands, vec![], std::slice::from_ref(&driver_name), None, &scan_name)
            .map_err(|e| prog(d.span, format!("internal error: {what}: the call of the pipeline does not type: {}", e.msg)))?
    };
    let ValueDef::Result(call, _) = f.values[called[0]].def else { unreachable!("built") };
    // The call defines the scan's activation results (same values, so their
    // uses stay); the unchanged carries' results are their initial values.
    for (j, &a) in act.iter().enumerate() {
        let r = d.results[a];
        f.insts[call].results[j] = r;
        f.values[r].def = ValueDef::Result(call, j);
    }
    let subst: HashMap<Value, Value> = inv.iter().map(|&k| (d.results[k], d.operands[k])).collect();
    for &i in &f.body {
        for o in &mut f.insts[i].operands {
            if let Some(&n) = subst.get(o) {
                *o = n;
            }
        }
    }
    for o in &mut f.ret {
        if let Some(&n) = subst.get(o) {
            *o = n;
        }
    }
    f.insts[inst].results.clear();
    f.insts[inst].operands.clear();
    f.insts[call].span = d.span;
    f.insts[call].comments = d.comments.clone();
    let new = f.body.split_off(before);
    let at = f.body.iter().position(|&i| i == inst).expect("the scan is in its function");
    f.body.splice(at..=at, new);
    Ok(Pipelined {
        func: f.name.clone(),
        value: scan_name,
        body: callee,
        driver: driver_name,
        tick: tick_name,
        stage: stage_name,
        axis: cx.axis.to_string(),
        schedule: Schedule::GPipe,
        stages: s,
        layers,
        microbatches: mm,
        rows,
        batch_axes: cx.batch_axes.to_vec(),
        micro_rows: mb,
        differentiated: false,
    })
}
