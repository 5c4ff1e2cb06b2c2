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
//! `--schedule 1f1b` ([`one_f_one_b`]) instead replaces the training step's
//! `grad` itself by one per-stage program that interleaves each
//! micro-batch's forward and backward (the loss's gradient taken per
//! micro-batch on the last stage), so a stage holds at most 2S−1
//! micro-batches' inputs rather than every tick's residuals.
//!
//! Costs beyond the schedule's: idle ticks compute (masked), as in
//! GSPMD-style pipelines; `grad` of a `spmd func` call recomputes the
//! callee's forward pass in its VJP (`grad/mod.rs`), so a training step runs
//! the forward ticks twice, and computes the cotangent of the batch too.

mod schedule;
pub use schedule::{backward_1f1b, backward_at, bubble, explain, forward_1f1b, forward_at, in_flight_1f1b, ticks, ticks_1f1b, Pipelined, Schedule};

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

/// Partitions one pipeline stage's layer for tensor parallelism inside the
/// stage: given a module holding only that layer as its entry `func`
/// (global view over the mesh's tensor-parallel axes, the weights' signature
/// shardings giving their split, the activations replicated), returns its
/// per-device `spmd func` with the collectives the split needs (Megatron's
/// all-reduces). The SPMD partitioner lives in a crate that depends on this
/// one, so the driver (`pjc`) supplies it.
pub type StagePartitioner<'a> = dyn Fn(&Module, FuncId) -> Result<Function, String> + 'a;

/// Rewrites every scan over parameters stacked along `opts.axis` (module doc).
pub fn pipeline(m: &mut Module, entry: FuncId, opts: &Pipeline) -> R<Vec<Pipelined>> {
    pipeline_with(m, entry, opts, None)
}

/// [`pipeline`], with a partitioner for stacked parameters split over
/// further mesh axes (`on [stage, _, model]`): each stage's layers then run
/// tensor-parallel over those axes, with the collectives `tp` generates
/// inside the stage. Without it such parameters are refused.
pub fn pipeline_with(m: &mut Module, entry: FuncId, opts: &Pipeline, tp: Option<&StagePartitioner>) -> R<Vec<Pipelined>> {
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
                let others: Vec<&str> = s.dims[1..]
                    .iter()
                    .flat_map(|d| if let DimSharding::Axes(x) = d { x.as_slice() } else { &[] })
                    .map(String::as_str)
                    .collect();
                if !others.is_empty() && tp.is_none() {
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
    // Tensor-parallel axes of the stacked parameters (their other
    // dimensions): neither the stage axis nor the batch's.
    for &i in &stacked {
        let v = &f.values[f.params[i]];
        let Some(s) = &v.sharding else { continue };
        if let Some(a) = s.dims[1..]
            .iter()
            .flat_map(|d| if let DimSharding::Axes(x) = d { x.as_slice() } else { &[] })
            .find(|a| batch_axes.contains(a))
        {
            return Err(prog(
                v.span,
                format!("unsupported: {what}: stacked parameter %{} is split over the batch's axis {a} on another dimension; inside a stage the batch's axes split the batch only (tensor parallelism takes other axes)", v.name),
            ));
        }
    }
    if stacked.is_empty() {
        return Err(prog(
            f.name_span,
            format!(
                "unsupported: {what}: no parameter of @{} has dimension 0 split over {axis} (stacked layer parameters, on [{axis}, ...])",
                f.name
            ),
        ));
    }
    // Which parameters of which functions receive them, through call and
    // grad, and the entry parameter each comes from.
    let mut origin: HashMap<(FuncId, usize), usize> = stacked.iter().map(|&i| ((entry, i), i)).collect();
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
                    if let ValueDef::Param(p) = g.values[o].def {
                        if ps.contains(&p) && !marked.get(&c).is_some_and(|s| s.contains(&j)) {
                            more.push((c, j, origin[&(id, p)]));
                        }
                    }
                }
            }
        }
        if more.is_empty() {
            break;
        }
        for (c, j, o) in more {
            marked.entry(c).or_default().insert(j);
            origin.entry((c, j)).or_insert(o);
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
            entry,
            schedule: opts.schedule,
            axis,
            stages,
            micro: opts.microbatches,
            batch_axes: &batch_axes,
            what: &what,
            origin: &origin,
            tp,
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
    entry: FuncId,
    schedule: Schedule,
    axis: &'a str,
    stages: u64,
    micro: u64,
    batch_axes: &'a [String],
    what: &'a str,
    /// The entry parameter each stacked function parameter comes from.
    origin: &'a HashMap<(FuncId, usize), usize>,
    tp: Option<&'a StagePartitioner<'a>>,
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
    // Each scanned operand's split of one layer (dimensions 1.. of the entry
    // parameter it comes from): tensor parallelism inside the stage.
    let tp_dims: Vec<Vec<DimSharding>> = (c..d.operands.len())
        .map(|k| {
            let rank = op_ty[k].shape.len().saturating_sub(1);
            let from = match f.values[d.operands[k]].def {
                ValueDef::Param(p) => cx.origin.get(&(fid, p)).copied(),
                ValueDef::Result(..) => None,
            };
            let e = &m.funcs[cx.entry];
            from.and_then(|i| e.values[e.params[i]].sharding.as_ref()).map(|s| s.dims[1..].to_vec()).unwrap_or_else(|| vec![DimSharding::Replicated; rank])
        })
        .collect();
    let mut tp_axes: Vec<String> = vec![];
    for dims in &tp_dims {
        for d in dims {
            if let DimSharding::Axes(a) = d {
                for x in a {
                    if !tp_axes.contains(x) {
                        tp_axes.push(x.clone());
                    }
                }
            }
        }
    }
    for v in body.values.values() {
        if let Some(sh) = &v.sharding {
            if let Some(a) = sh.axes().find(|a| *a == cx.axis) {
                return Err(prog(v.span, format!("unsupported: {what}: %{} of the layer @{callee} is constrained to be split over the stage axis {a}; a stage holds whole layers", v.name)));
            }
            if cx.tp.is_some() {
                for a in sh.axes() {
                    if !cx.batch_axes.iter().any(|b| b == a) && !tp_axes.iter().any(|t| t == a) {
                        tp_axes.push(a.to_string());
                    }
                }
            } else if sh.axes().any(|a| !cx.batch_axes.iter().any(|b| b == a)) {
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
    for k in 0..stage.results.len() {
        stage.results[k].ty = stage.values[stage.ret[k]].ty.clone();
    }
    if tp_axes.is_empty() {
        stage.kind = FuncKind::Spmd;
        for v in stage.values.keys().collect::<Vec<_>>() {
            stage.values[v].sharding = None;
        }
    } else {
        // Tensor parallelism inside the stage: the layer on one micro-batch,
        // in the global view over the tensor-parallel axes (the weights split
        // as their stack is, the activations replicated, the layer's own
        // constraints without the batch's axes), partitioned by the SPMD
        // partitioner into its per-device form with the collectives the
        // split needs.
        stage.kind = FuncKind::Global;
        for v in stage.values.keys().collect::<Vec<_>>() {
            if let Some(sh) = &mut stage.values[v].sharding {
                for d in &mut sh.dims {
                    if let DimSharding::Axes(a) = d {
                        a.retain(|x| !cx.batch_axes.contains(x));
                        if a.is_empty() {
                            *d = DimSharding::Replicated;
                        }
                    }
                }
            }
        }
        for k in 0..stage.params.len() {
            let v = stage.params[k];
            stage.values[v].sharding = (k >= c).then(|| Sharding { dims: tp_dims[k - c].clone() });
        }
        for k in 0..stage.results.len() {
            stage.results[k].sharding = None;
        }
        let mut one = m.clone();
        one.funcs = Default::default();
        one.end_comments.clear();
        let id = one.funcs.push(stage);
        let partition = cx.tp.expect("tensor-parallel axes only with a partitioner");
        let mut local = partition(&one, id).map_err(|e| {
            prog(
                d.span,
                format!("unsupported: {what}: the layer @{callee} does not partition over [{}] inside a stage: {e}", tp_axes.join(", ")),
            )
        })?;
        local.name = stage_name.clone();
        local.kind = FuncKind::Spmd;
        local.ret_spans.resize(local.ret.len(), Span::NONE);
        // A scan body: its parameters vary as what the scan passes them
        // (the stage's axis, the batch's), so their `on` is left out.
        for k in 0..local.params.len() {
            let v = local.params[k];
            local.values[v].sharding = None;
        }
        if let Some(&i) = local.body.iter().find(|&&i| !local.insts[i].callees.is_empty()) {
            return Err(prog(d.span, format!("unsupported: {what}: the partitioned layer @{callee} calls @{}; a stage's layer is straight-line code", local.insts[i].callees[0])));
        }
        stage = local;
    }
    for k in 0..stage.results.len() {
        stage.results[k].sharding = None;
        stage.results[k].ty = stage.values[stage.ret[k]].ty.clone();
    }
    let per = layers / s;
    // One stage's slice of a stacked parameter: L/S layers, each split over
    // its tensor-parallel axes; and its signature sharding.
    let local_w: Vec<TensorType> = (c..d.operands.len())
        .map(|k| {
            let t = &op_ty[k];
            let mut shape = vec![per];
            for (i, &x) in t.shape[1..].iter().enumerate() {
                shape.push(match &tp_dims[k - c][i] {
                    DimSharding::Axes(a) => x / mesh.group_size(a.iter().map(String::as_str)),
                    _ => x,
                });
            }
            TensorType::new(t.dtype, shape)
        })
        .collect();
    let w_sharding: Vec<Sharding> = tp_dims
        .iter()
        .map(|dims| {
            let mut all = vec![DimSharding::Axes(vec![cx.axis.to_string()])];
            all.extend(dims.iter().cloned());
            Sharding { dims: all }
        })
        .collect();
    let act_ty: Vec<TensorType> = act.iter().map(|&k| op_ty[k].clone()).collect();
    let mb_ty: Vec<TensorType> = act_ty.iter().map(|t| with_dims(t, &[mb], 1)).collect();
    let mbs_ty: Vec<TensorType> = act_ty.iter().map(|t| with_dims(t, &[mm, mb], 1)).collect();
    let inv_ty: Vec<TensorType> = inv.iter().map(|&k| op_ty[k].clone()).collect();
    let ws_ty: Vec<TensorType> = local_w.clone();
    let tick_name = names.fresh(m, &format!("{callee}.tick"));
    let driver_name = names.fresh(m, &format!("{callee}.pipeline"));
    let carry_names: Vec<String> = (0..c).map(|k| body.values[body.params[k]].name.clone()).collect();
    let slice_names: Vec<String> = scanned.iter().map(|&k| slice_names[k].clone()).collect();
    m.funcs.push(stage);
    if cx.schedule == Schedule::OneFOneB {
        let parts = Parts {
            scan_name,
            fname,
            callee,
            act: act.clone(),
            inv: inv.clone(),
            scanned: scanned.clone(),
            op_ty: op_ty.clone(),
            slice_names: slice_names.clone(),
            mb,
            per,
            layers,
            rows,
            stage_name,
            g,
            tick_name: tick_name.clone(),
            driver_name: driver_name.clone(),
            ws_ty: local_w.clone(),
            ws_sharding: w_sharding.clone(),
            tp_axes: tp_axes.clone(),
        };
        return one_f_one_b(m, fid, inst, &d, cx, parts, names);
    }
    // @B.tick.
    let tick = {
        let sigs = signatures(m);
        let mut t = Function::new(&tick_name, FuncKind::Spmd);
        let param = |t: &mut Function, n: &str, ty: TensorType| t.add_param(n, ty);
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
            return_value(&mut t, v, None);
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
            let v = p.add_param(n, ty);
            p.values[v].sharding = sh;
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
            .map(|(j, _)| param(&mut p, &slice_names[j], ws_ty[j].clone(), Some(w_sharding[j].clone())))
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
            return_value(&mut p, v, act_sharding(&act_ty[j]));
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
        tensor_axes: tp_axes,
    })
}

/// What the 1F1B rewrite takes over from [`rewrite`]'s analysis of the scan.
struct Parts {
    scan_name: String,
    fname: String,
    callee: String,
    act: Vec<usize>,
    inv: Vec<usize>,
    scanned: Vec<usize>,
    op_ty: Vec<TensorType>,
    slice_names: Vec<String>,
    mb: u64,
    per: u64,
    layers: u64,
    rows: u64,
    stage_name: String,
    g: u64,
    tick_name: String,
    driver_name: String,
    /// One stage's slices of the stacked parameters, and their signature shardings.
    ws_ty: Vec<TensorType>,
    ws_sharding: Vec<Sharding>,
    tp_axes: Vec<String>,
}

/// `--schedule 1f1b`: the training step's `grad` of the function holding
/// the scan becomes a call of one per-stage program that runs each
/// micro-batch's forward and backward itself, interleaved (PipeDream-Flush's
/// one-forward-one-backward in lockstep ticks): at tick t stage k runs the
/// forward of micro-batch t−k and the backward of micro-batch t−(2S−2−k),
/// the last stage the loss's gradient of the micro-batch it just finished.
/// A stage keeps only its in-flight micro-batches' inputs (at most
/// min(M, 2S−1)) and recomputes its layers in the backward (`grad` of
/// `@B.stage.dot`, the stage's layers dotted with the incoming cotangent).
fn one_f_one_b(m: &mut Module, fid: FuncId, inst: Inst, d: &pjc_ir::InstData, cx: &Ctx, p: Parts, names: &mut FuncNames) -> R<Pipelined> {
    let what = format!("{} --schedule 1f1b", cx.what);
    let (s, mm, mb, per) = (cx.stages, cx.micro, p.mb, p.per);
    let unsupported = |msg: String| prog(d.span, format!("unsupported: {what}: {msg}"));
    if p.act.len() != 1 || !p.inv.is_empty() {
        return Err(unsupported(format!(
            "scan %{} carries {} values; 1F1B takes one activation and nothing else",
            p.scan_name,
            p.act.len() + p.inv.len()
        )));
    }
    let a = p.act[0];
    // The grad of the scan's function, in the entry.
    let e = &m.funcs[cx.entry];
    let Some(gi) = e.body.iter().copied().find(|&i| e.insts[i].op == Opcode::Grad && e.insts[i].callee() == Some(p.fname.as_str())) else {
        return Err(unsupported(format!(
            "1F1B schedules a training step: the entry must take grad of @{} (the function holding the scan)",
            p.fname
        )));
    };
    let gd = e.insts[gi].clone();
    let wrt: Vec<usize> = gd.attr("wrt").and_then(|w| w.as_ints()).unwrap_or_default().into_iter().map(|w| w as usize).collect();
    let f = m.funcs[fid].clone();
    let param_of = |v: Value| match f.values[v].def {
        ValueDef::Param(i) => Some(i),
        ValueDef::Result(..) => None,
    };
    let Some(px) = param_of(d.operands[a]) else {
        return Err(unsupported(format!(
            "the activation scan %{} starts from is computed in @{}; 1F1B takes it as a parameter",
            p.scan_name, p.fname
        )));
    };
    let mut stacked = vec![];
    for &k in &p.scanned {
        match param_of(d.operands[k]) {
            Some(i) => stacked.push(i),
            None => {
                return Err(unsupported(format!(
                    "scanned operand {k} of scan %{} is computed in @{}; 1F1B takes the stacked parameters as they are",
                    p.scan_name, p.fname
                )))
            }
        }
    }
    let mut sorted_wrt = wrt.clone();
    sorted_wrt.sort();
    let mut sorted_stacked = stacked.clone();
    sorted_stacked.sort();
    if sorted_wrt != sorted_stacked {
        return Err(prog(
            gd.span,
            format!("unsupported: {what}: this grad differentiates with respect to operands {wrt:?}; 1F1B gives the gradients of the stacked layer parameters (operands {sorted_stacked:?}) only"),
        ));
    }
    // The loss head: the function with the scan's result as a parameter and
    // without the stacked parameters, for one micro-batch.
    let hres = d.results[a];
    let mut head = f.clone();
    head.body.retain(|&i| i != inst);
    let mut hparams = vec![hres];
    hparams.extend(f.params.iter().enumerate().filter(|(i, _)| !stacked.contains(i)).map(|(_, &v)| v));
    for &i in &head.body {
        if let Some(&o) = head.insts[i].operands.iter().find(|o| stacked.iter().any(|&k| f.params[k] == **o)) {
            return Err(prog(
                head.insts[i].span,
                format!(
                    "unsupported: {what}: the loss uses the stacked parameter %{} after the layers; 1F1B's loss on the last stage takes the activations and the batch only",
                    f.values[o].name
                ),
            ));
        }
    }
    for (i, &v) in hparams.iter().enumerate() {
        head.values[v].def = ValueDef::Param(i);
        head.values[v].sharding = None;
    }
    head.params = hparams.clone();
    // F's parameter index -> head's.
    let head_pos = |i: usize| hparams.iter().position(|&v| v == f.params[i]);
    let bpos: Vec<usize> = (0..hparams.len()).filter(|&i| i == 0 || head.values[hparams[i]].ty.shape.first() == Some(&p.rows)).collect();
    let batched = batch::batched_values(&head, &bpos, p.rows, &what).map_err(PipelineError::Program)?;
    let micro_name = names.fresh(m, &format!("{}.micro", p.fname));
    // One micro-batch of one device of the batch's axes (p.g of them).
    let mut micro = batch::retyped(&head, &batched, p.rows, p.g * mm, &micro_name);
    micro.kind = FuncKind::Spmd;
    for v in micro.values.keys().collect::<Vec<_>>() {
        micro.values[v].sharding = None;
    }
    for r in &mut micro.results {
        r.sharding = None;
    }
    let loss_ty = micro.results[0].ty.clone();
    let micro_ty: Vec<TensorType> = micro.params.iter().map(|&v| micro.values[v].ty.clone()).collect();
    // The head's parameters on one device: the batched ones hold rows/g rows.
    let head_ty: Vec<TensorType> = hparams
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let t = &f.values[v].ty;
            if bpos.contains(&i) {
                with_dims(t, &[t.shape[0] / p.g], 1)
            } else {
                t.clone()
            }
        })
        .collect();
    let batch_sharding = |rank: usize| {
        (p.g > 1).then(|| {
            let mut dims = vec![DimSharding::Axes(cx.batch_axes.to_vec())];
            dims.extend(std::iter::repeat_n(DimSharding::Replicated, rank - 1));
            Sharding { dims }
        })
    };
    m.funcs.push(micro);
    let mesh = m.mesh_or_single();
    // @B.stage.dot's values vary along the stage axis and, with the batch
    // split, along the batch's axes: each device's micro-batch differs, and
    // so do the weights' gradients it computes, which are summed over the
    // batch's axes once after the last micro-batch (not per tick, as the
    // transpose of the weights' implicit broadcast would).
    let mut vary_axes = vec![cx.axis.to_string()];
    if p.g > 1 {
        vary_axes.extend(cx.batch_axes.iter().cloned());
    }
    let on_axis = |rank: usize| {
        let mut dims = vec![DimSharding::Axes(vary_axes.clone())];
        dims.extend(std::iter::repeat_n(DimSharding::Replicated, rank - 1));
        Some(Sharding { dims })
    };
    let w_vary: Vec<Sharding> = p
        .ws_sharding
        .iter()
        .map(|sh| {
            let mut sh = sh.clone();
            sh.dims[0] = DimSharding::Axes(vary_axes.clone());
            sh
        })
        .collect();
    let act_ty = p.op_ty[a].clone();
    let mb_ty = with_dims(&act_ty, &[mb], 1);
    let ws_ty: Vec<TensorType> = p.ws_ty.clone();
    // @B.stage.dot: the stage's layers dotted with a cotangent, summed over
    // the stages (each stage's term depends on its own values only, so its
    // gradients are the stage's own VJP).
    let dot_name = names.fresh(m, &format!("{}.dot", p.stage_name));
    let dot = {
        let sigs = signatures(m);
        let mut t = Function::new(&dot_name, FuncKind::Spmd);
        let param = |t: &mut Function, n: &str, ty: TensorType| {
            let v = t.add_param(n, ty.clone());
            t.values[v].sharding = on_axis(ty.shape.len());
            v
        };
        let x = param(&mut t, "x", mb_ty.clone());
        let ws: Vec<Value> = p
            .scanned
            .iter()
            .enumerate()
            .map(|(j, _)| {
                let v = param(&mut t, &p.slice_names[j], ws_ty[j].clone());
                t.values[v].sharding = Some(w_vary[j].clone());
                v
            })
            .collect();
        let ct = param(&mut t, "ct", mb_ty.clone());
        let mut b = Builder::new(&mut t, &mesh, &sigs);
        let y = stage_layers(&mut b, x, &ws, per, &p.stage_name, "y").map_err(|e| prog(d.span, format!("internal error: {what}: {e}")))?;
        let prod = b.build(Opcode::Mul, &[y, ct], vec![], "dot");
        let dims: Vec<i64> = (0..mb_ty.shape.len() as i64).collect();
        let sum = b.build(Opcode::Reduce, &[prod], vec![("dims", AttrValue::int_list(&dims)), ("kind", AttrValue::Ident("sum".into()))], "dot.sum");
        let over = AttrValue::List(vary_axes.iter().map(|a| AttrValue::Ident(a.clone())).collect());
        let all = b.build(Opcode::AllReduce, &[sum], vec![("axes", over), ("kind", AttrValue::Ident("sum".into()))], "dot.all");
        return_value(&mut t, all, None);
        t
    };
    m.funcs.push(dot);
    let ticks_n = mm + 2 * (s - 1);
    let stash_n = mm.min(2 * s - 1);
    let hb: Vec<usize> = (1..hparams.len()).filter(|i| bpos.contains(i)).collect();
    let hother: Vec<usize> = (1..hparams.len()).filter(|i| !bpos.contains(i)).collect();
    let mbs_of = |t: &TensorType| with_dims(t, &[mm, t.shape[0] / mm], 1);
    let (tick_name, driver_name) = (p.tick_name.clone(), p.driver_name.clone());
    let n = &f.values[d.operands[a]].name.clone();
    let f_params: Vec<(String, TensorType)> = f.params.iter().map(|&v| (f.values[v].name.clone(), f.values[v].ty.clone())).collect();
    let tick = {
        let sigs = signatures(m);
        let mut t = Function::new(&tick_name, FuncKind::Spmd);
        let param = |t: &mut Function, n: &str, ty: TensorType| t.add_param(n, ty);
        let recv_f = param(&mut t, &format!("{n}.recv"), mb_ty.clone());
        let recv_b = param(&mut t, &format!("{n}.ct.recv"), mb_ty.clone());
        let stash = param(&mut t, &format!("{n}.stash"), with_dims(&mb_ty, &[stash_n, mb], 1));
        let gacc: Vec<Value> = ws_ty.iter().enumerate().map(|(j, ty)| param(&mut t, &format!("{}.grad", p.slice_names[j]), ty.clone())).collect();
        let lacc = param(&mut t, "loss.sum", loss_ty.clone());
        let ws: Vec<Value> = ws_ty.iter().enumerate().map(|(j, ty)| param(&mut t, &p.slice_names[j], ty.clone())).collect();
        let xmbs = param(&mut t, &format!("{n}.feed"), with_dims(&mb_ty, &[mm, mb], 1));
        let bmbs: Vec<Value> = hb.iter().map(|&i| param(&mut t, &format!("{}.mbs", head.values[hparams[i]].name), mbs_of(&head_ty[i]))).collect();
        let others: Vec<Value> = hother.iter().map(|&i| param(&mut t, &head.values[hparams[i]].name.clone(), head_ty[i].clone())).collect();
        let tick = param(&mut t, "tick", i32_scalar());
        let mut b = Builder::new(&mut t, &mesh, &sigs);
        let int = |b: &mut Builder, v: i64, name: &str| b.splat(Number::Int(v as i128), i32_scalar(), name);
        let cmp = |b: &mut Builder, x: Value, y: Value, dir: &str, name: &str| b.build(Opcode::Compare, &[x, y], vec![("dir", AttrValue::Ident(dir.to_string()))], name);
        let k = b.build_typed(Opcode::AxisIndex, &[], vec![("axis", AttrValue::Ident(cx.axis.to_string()))], i32_scalar(), "stage");
        let zero = int(&mut b, 0, "zero");
        let count = int(&mut b, mm as i64, "micro.count");
        let lastk = int(&mut b, s as i64 - 1, "stage.last");
        let first = cmp(&mut b, k, zero, "eq", "first");
        let last = cmp(&mut b, k, lastk, "eq", "last");
        let valid = |b: &mut Builder, i: Value, name: &str| {
            let ge = cmp(b, i, zero, "ge", &format!("{name}.started"));
            let lt = cmp(b, i, count, "lt", &format!("{name}.not_done"));
            b.build(Opcode::And, &[ge, lt], vec![], name)
        };
        // Forward slot: micro-batch t - k.
        let fm = b.build(Opcode::Sub, &[tick, k], vec![], "fwd.micro");
        let fv = valid(&mut b, fm, "fwd.active");
        let read = |b: &mut Builder, arr: Value, i: Value, name: &str| {
            let ty = b.func.values[arr].ty.clone();
            let mut idx = vec![i];
            idx.extend(std::iter::repeat_n(zero, ty.shape.len() - 1));
            let mut sizes = vec![1i64];
            sizes.extend(ty.shape[1..].iter().map(|&x| x as i64));
            let one = b.build(Opcode::DynamicSlice, &[&[arr][..], &idx].concat(), vec![("sizes", AttrValue::int_list(&sizes))], &format!("{name}.one"));
            b.build_typed(Opcode::Reshape, &[one], vec![], TensorType::new(ty.dtype, ty.shape[1..].to_vec()), name)
        };
        let x0 = read(&mut b, xmbs, fm, &format!("{n}.first"));
        let xin = b.build(Opcode::Select, &[first, x0, recv_f], vec![], &format!("{n}.in"));
        let zx = b.splat(zero_of(mb_ty.dtype), mb_ty.clone(), &format!("{n}.idle"));
        let xin = b.build(Opcode::Select, &[fv, xin, zx], vec![], &format!("{n}.x"));
        let y = stage_layers(&mut b, xin, &ws, per, &p.stage_name, &format!("{n}.layers")).map_err(|e| prog(d.span, format!("internal error: {what}: {e}")))?;
        let send_f = b.build(Opcode::CollectivePermute, &[y], vec![("axes", axes_attr(cx.axis)), ("shift", AttrValue::Int(1))], &format!("{n}.send"));
        // Its input kept until its backward.
        let slots = int(&mut b, stash_n as i64, "stash.slots");
        let fslot = b.build(Opcode::Rem, &[fm, slots], vec![], "fwd.slot");
        let one = b.build_typed(Opcode::Reshape, &[xin], vec![], with_dims(&mb_ty, &[1, mb], 1), &format!("{n}.kept"));
        let mut idx = vec![fslot];
        idx.extend(std::iter::repeat_n(zero, mb_ty.shape.len()));
        let put = b.build(Opcode::DynamicUpdateSlice, &[&[stash, one][..], &idx].concat(), vec![], &format!("{n}.stash.put"));
        let stash2 = b.build(Opcode::Select, &[fv, put, stash], vec![], &format!("{n}.stash.next"));
        // The loss of the micro-batch the last stage finished, and its gradient.
        let mut hargs = vec![y];
        let (mut jb, mut jo) = (0, 0);
        for i in 1..hparams.len() {
            if hb.contains(&i) {
                hargs.push(read(&mut b, bmbs[jb], fm, &format!("{}.micro", head.values[hparams[i]].name)));
                jb += 1;
            } else {
                hargs.push(others[jo]);
                jo += 1;
            }
        }
        let _ = &micro_ty;
        let lg = b
            .try_build(Opcode::Grad, &hargs, vec![("wrt", AttrValue::int_list(&[0]))], std::slice::from_ref(&micro_name), None, "loss.micro")
            .map_err(|e| prog(d.span, format!("internal error: {what}: the loss's gradient does not type: {}", e.msg)))?;
        let counted = b.build(Opcode::And, &[last, fv], vec![], "loss.counted");
        let lz = b.splat(zero_of(loss_ty.dtype), loss_ty.clone(), "loss.none");
        let lm = b.build(Opcode::Select, &[counted, lg[0], lz], vec![], "loss.mine");
        let lacc2 = b.build(Opcode::Add, &[lacc, lm], vec![], "loss.sum.next");
        // Backward slot: micro-batch t - (2S - 2 - k).
        let lag = b.build(Opcode::Sub, &[lastk, k], vec![], "bwd.lag");
        let lag2 = b.build(Opcode::Add, &[lag, lastk], vec![], "bwd.delay");
        let bm = b.build(Opcode::Sub, &[tick, lag2], vec![], "bwd.micro");
        let bv = valid(&mut b, bm, "bwd.active");
        let bslot = b.build(Opcode::Rem, &[bm, slots], vec![], "bwd.slot");
        let xb = read(&mut b, stash2, bslot, &format!("{n}.again"));
        let ct_in = b.build(Opcode::Select, &[last, lg[1], recv_b], vec![], &format!("{n}.ct.in"));
        let mut dargs = vec![xb];
        dargs.extend(&ws);
        dargs.push(ct_in);
        let wrt_d: Vec<i64> = (0..=ws.len() as i64).collect();
        let gs = b
            .try_build(
                Opcode::Grad,
                &dargs,
                vec![("wrt", AttrValue::int_list(&wrt_d))],
                std::slice::from_ref(&dot_name),
                None,
                &format!("{n}.vjp"),
            )
            .map_err(|e| prog(d.span, format!("internal error: {what}: the stage's VJP does not type: {}", e.msg)))?;
        let gx = b.build(Opcode::Select, &[bv, gs[1], zx], vec![], &format!("{n}.ct.out"));
        let send_b = b.build(
            Opcode::CollectivePermute,
            &[gx],
            vec![("axes", axes_attr(cx.axis)), ("shift", AttrValue::Int(-1))],
            &format!("{n}.ct.send"),
        );
        let mut gnext = vec![];
        for (j, &acc) in gacc.iter().enumerate() {
            let z = b.splat(zero_of(ws_ty[j].dtype), ws_ty[j].clone(), &format!("{}.grad.none", p.slice_names[j]));
            let gj = b.build(Opcode::Select, &[bv, gs[2 + j], z], vec![], &format!("{}.grad.mine", p.slice_names[j]));
            gnext.push(b.build(Opcode::Add, &[acc, gj], vec![], &format!("{}.grad.next", p.slice_names[j])));
        }
        let mut ret = vec![send_f, send_b, stash2];
        ret.extend(gnext);
        ret.push(lacc2);
        ret.extend(&ws);
        ret.push(xmbs);
        ret.extend(&bmbs);
        ret.extend(&others);
        for v in ret {
            return_value(&mut t, v, None);
        }
        t
    };
    m.funcs.push(tick);
    // @B.pipeline: the whole step on one stage.
    let driver = {
        let sigs = signatures(m);
        let mut t = Function::new(&driver_name, FuncKind::Spmd);
        t.comments.before = vec![format!(
            " grad of @{} as a {s}-stage 1F1B pipeline over {} ({mm} micro-batches, --pipeline --schedule 1f1b).",
            p.fname, cx.axis
        )];
        let mut fp = vec![];
        for (i, (nm, ty)) in f_params.iter().enumerate() {
            let (ty, sh) = if let Some(j) = stacked.iter().position(|&k| k == i) {
                (ws_ty[j].clone(), Some(p.ws_sharding[j].clone()))
            } else if let Some(h) = head_pos(i).filter(|h| bpos.contains(h)) {
                (head_ty[h].clone(), batch_sharding(ty.shape.len()))
            } else {
                (ty.clone(), None)
            };
            let v = t.add_value(nm, ty, ValueDef::Param(i), Span::NONE);
            t.values[v].sharding = sh;
            t.params.push(v);
            fp.push(v);
        }
        let mut b = Builder::new(&mut t, &mesh, &sigs);
        let mut ops = vec![];
        ops.push(b.splat(zero_of(mb_ty.dtype), mb_ty.clone(), &format!("{n}.recv0")));
        ops.push(b.splat(zero_of(mb_ty.dtype), mb_ty.clone(), &format!("{n}.ct.recv0")));
        ops.push(b.splat(zero_of(mb_ty.dtype), with_dims(&mb_ty, &[stash_n, mb], 1), &format!("{n}.stash0")));
        for (j, ty) in ws_ty.iter().enumerate() {
            ops.push(b.splat(zero_of(ty.dtype), ty.clone(), &format!("{}.grad0", p.slice_names[j])));
        }
        ops.push(b.splat(zero_of(loss_ty.dtype), loss_ty.clone(), "loss.zero"));
        for &k in &stacked {
            ops.push(fp[k]);
        }
        ops.push(b.build_typed(Opcode::Reshape, &[fp[px]], vec![], with_dims(&mb_ty, &[mm, mb], 1), &format!("{n}.feed")));
        for &i in &hb {
            let fi = (0..f_params.len()).find(|&q| head_pos(q) == Some(i)).expect("a head parameter is one of the function's");
            let ty = mbs_of(&head_ty[i]);
            ops.push(b.build_typed(Opcode::Reshape, &[fp[fi]], vec![], ty, &format!("{}.mbs", f_params[fi].0)));
        }
        for &i in &hother {
            let fi = (0..f_params.len()).find(|&q| head_pos(q) == Some(i)).expect("a head parameter is one of the function's");
            ops.push(fp[fi]);
        }
        let nc = ops.len();
        ops.push(b.build_typed(Opcode::Iota, &[], vec![("dim", AttrValue::Int(0))], TensorType::new(DType::I32, vec![ticks_n]), "ticks"));
        let res = b
            .try_build(
                Opcode::Scan,
                &ops,
                vec![("length", AttrValue::Int(ticks_n as i64)), ("carries", AttrValue::Int(nc as i64))],
                std::slice::from_ref(&tick_name),
                None,
                &format!("{n}.ticks"),
            )
            .map_err(|e| prog(d.span, format!("internal error: {what}: the tick scan does not type: {}", e.msg)))?;
        let nw = ws_ty.len();
        // The loss: the last stage's sum over its micro-batches, summed over
        // the batch's devices too; the weights' gradients summed over the
        // batch's devices once, after the last micro-batch.
        let mut loss_axes = vec![AttrValue::Ident(cx.axis.to_string())];
        loss_axes.extend(cx.batch_axes.iter().filter(|_| p.g > 1).map(|a| AttrValue::Ident(a.clone())));
        let loss = b.build(Opcode::AllReduce, &[res[3 + nw]], vec![("axes", AttrValue::List(loss_axes)), ("kind", AttrValue::Ident("sum".into()))], "loss");
        let mut ret = vec![(loss, None)];
        for &w in &wrt {
            let j = stacked.iter().position(|&k| k == w).expect("wrt is the stacked parameters");
            let gsum = if p.g > 1 {
                let batch: Vec<AttrValue> = cx.batch_axes.iter().map(|a| AttrValue::Ident(a.clone())).collect();
                b.build(
                    Opcode::AllReduce,
                    &[res[3 + j]],
                    vec![("axes", AttrValue::List(batch)), ("kind", AttrValue::Ident("sum".into()))],
                    &format!("{}.grad.all", p.slice_names[j]),
                )
            } else {
                res[3 + j]
            };
            ret.push((gsum, Some(p.ws_sharding[j].clone())));
        }
        for (v, sh) in ret {
            return_value(&mut t, v, sh);
        }
        t
    };
    m.funcs.push(driver);
    // The grad becomes the call.
    let e = &mut m.funcs[cx.entry];
    let gdata = &mut e.insts[gi];
    gdata.op = Opcode::Call;
    gdata.set_callee(driver_name.clone());
    gdata.attrs.clear();
    Ok(Pipelined {
        func: p.fname,
        value: p.scan_name,
        body: p.callee,
        driver: driver_name,
        tick: tick_name,
        stage: p.stage_name,
        axis: cx.axis.to_string(),
        schedule: Schedule::OneFOneB,
        stages: s,
        layers: p.layers,
        microbatches: mm,
        rows: p.rows,
        batch_axes: cx.batch_axes.to_vec(),
        micro_rows: mb,
        differentiated: true,
        tensor_axes: p.tp_axes,
    })
}

/// One stage's `per` layers on activation `x`: the scan of the stage's layer
/// function `stage` over its stacked weights `ws`, carrying the activation.
fn stage_layers(b: &mut Builder, x: Value, ws: &[Value], per: u64, stage: &str, name: &str) -> Result<Value, String> {
    let mut ops = vec![x];
    ops.extend(ws);
    let attrs = vec![("length", AttrValue::Int(per as i64)), ("carries", AttrValue::Int(1))];
    let r = b.try_build(Opcode::Scan, &ops, attrs, &[stage.to_string()], None, name).map_err(|e| e.msg)?;
    Ok(r[0])
}

/// Appends `v` to `f`'s results (unnamed, with `sharding`).
fn return_value(f: &mut Function, v: Value, sharding: Option<Sharding>) {
    let ty = f.values[v].ty.clone();
    f.results.push(ResultDecl { name: None, ty, sharding, span: Span::NONE });
    f.ret.push(v);
    f.ret_spans.push(Span::NONE);
}
