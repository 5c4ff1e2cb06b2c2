//! Gradient accumulation (`pjc compile --accumulate K`): a training step
//! whose gradient is taken with `grad` over a batch becomes a `scan` over K
//! micro-batches that adds up their losses and gradients, so only one
//! micro-batch's activations are live at once (about 1/K of the step's
//! activation memory) for the same result up to float reassociation.
//!
//! Runs on the verified program before `grad` is expanded. For each `grad`
//! of the entry function that takes a *batch parameter* — an entry parameter
//! whose dimension 0 is split over a mesh axis (`on [data, ...]`: the
//! data-parallel inputs), or one named by `--batch-params` — as an operand it
//! does not differentiate:
//!
//! ```text
//! %l, %g = grad @loss(%w, %x) {wrt=[0]}                  // %x: f32[B,D] on [data, _]
//! ```
//! becomes
//! ```text
//! %x.mb = reshape %x : f32[B/K,K,D]                      // row j*K+k ...
//! %x.mbs = transpose %x.mb {perm=[1,0,2]} : f32[K,B/K,D] // ... is row j of micro-batch k
//! %l, %g, %w.c = scan @loss.accumulate(%l.zero, %g.zero, %w, %x.mbs) {length=K, carries=3}
//! ```
//! where the step `@loss.accumulate` takes `grad` of `@loss.micro` — `@loss`
//! retyped for B/K rows (`batch.rs`) — and adds its results to the carries.
//! Micro-batch k holds rows k, K+k, 2K+k, ...: each device's block of rows
//! splits into the K micro-batches locally, so the reshape, the transpose and
//! the scan's slices move no data between devices. The loss must be a sum
//! over examples (a mean is one, divided by the constant B): `@loss.micro`
//! keeps `@loss`'s constants, so its results on the micro-batches *add up*
//! to the full batch's (not averaged: each already divides by B). The
//! partitioner then puts each gradient's all-reduce in the step, and the
//! code motion after partitioning (`pjc-partition`'s `hoist.rs`) moves it
//! after the loop: one per step.

pub(crate) mod batch;

use crate::names::FuncNames;
use crate::TransformError;
use pjc_ir::builder::{signatures, Builder};
use pjc_ir::{AttrValue, DimSharding, FuncId, FuncKind, Function, Module, Number, Opcode, ResultDecl, Span, TensorType, Value, ValueDef};

/// What `--accumulate` asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct Accumulate {
    /// Micro-batches per step (K ≥ 1).
    pub k: u64,
    /// `--batch-params`: the batch parameters by name, instead of those
    /// whose dimension 0 is split.
    pub batch_params: Option<Vec<String>>,
}

/// Why the step cannot be accumulated.
#[derive(Clone, Debug, PartialEq)]
pub enum AccumulateError {
    /// The program (with `--accumulate K`) cannot be rewritten: a located
    /// diagnostic (exit 1).
    Program(TransformError),
    /// The command line is wrong (`--batch-params` naming no parameter): one
    /// line (exit 2).
    Flag(String),
}

/// One `grad` rewritten.
#[derive(Clone, Debug, PartialEq)]
pub struct Accumulated {
    /// The loss function and the generated step and micro-batch functions.
    pub loss: String,
    pub step: String,
    pub micro: String,
    /// The batch parameters it scans, and the batch size.
    pub batch: Vec<String>,
    pub rows: u64,
}

/// Rewrites every `grad` of `entry` that takes a batch parameter into its
/// K-micro-batch form (module doc).
pub fn accumulate(m: &mut Module, entry: FuncId, opts: &Accumulate) -> Result<Vec<Accumulated>, AccumulateError> {
    let what = format!("--accumulate {}", opts.k);
    let f = &m.funcs[entry];
    let prog = |span: Span, msg: String| AccumulateError::Program(TransformError { span, msg });
    if opts.k == 0 {
        return Err(AccumulateError::Flag("--accumulate needs at least 1 micro-batch".into()));
    }
    if f.kind == FuncKind::Spmd {
        return Err(prog(f.name_span, format!("unsupported: {what} rewrites a training step in the global view (a func); @{} is a spmd func", f.name)));
    }
    // The batch parameters (positions in the entry).
    let batch: Vec<usize> = match &opts.batch_params {
        Some(names) => {
            let mut out = vec![];
            for n in names {
                let i = (0..f.params.len()).find(|&i| f.param_name(i) == n).ok_or_else(|| {
                    let all: Vec<&str> = (0..f.params.len()).map(|i| f.param_name(i)).collect();
                    AccumulateError::Flag(format!("--batch-params names '{n}', but @{} has no parameter '{n}' (its parameters: {})", f.name, all.join(", ")))
                })?;
                if f.values[f.params[i]].ty.shape.is_empty() {
                    return Err(AccumulateError::Flag(format!("--batch-params names '{n}', a scalar: a batch parameter's dimension 0 is the batch")));
                }
                out.push(i);
            }
            out
        }
        None => (0..f.params.len())
            .filter(|&i| f.values[f.params[i]].sharding.as_ref().and_then(|s| s.dims.first()).is_some_and(|d| matches!(d, DimSharding::Axes(a) if !a.is_empty())))
            .collect(),
    };
    let grads: Vec<pjc_ir::Inst> = f.body.iter().copied().filter(|&i| f.insts[i].op == Opcode::Grad).collect();
    if grads.is_empty() {
        return Err(prog(f.name_span, format!("unsupported: {what} needs a training step that takes its gradient with grad, and @{} has no grad: there is nothing to accumulate (a step exported from JAX arrives differentiated: accumulate there, with a lax.scan over micro-batches or optax.MultiSteps, and pjc moves the loop's all-reduces out of it)", f.name)));
    }
    let which = if opts.batch_params.is_some() { "named by --batch-params" } else { "whose dimension 0 is split over a mesh axis (on [data, ...]; --batch-params names others)" };
    let mut done = vec![];
    let mut names = FuncNames::default();
    for g in grads {
        if let Some(a) = rewrite(m, entry, g, &batch, opts.k, &what, &mut names)? {
            done.push(a);
        }
    }
    if done.is_empty() {
        return Err(prog(
            m.funcs[entry].name_span,
            format!("unsupported: {what}: no grad of @{} takes a batch parameter (a parameter {which}) as an operand it does not differentiate", m.funcs[entry].name),
        ));
    }
    Ok(done)
}

/// Rewrites `grad` instruction `g` of the entry; `None` when it takes no
/// batch parameter.
fn rewrite(m: &mut Module, entry: FuncId, g: pjc_ir::Inst, batch: &[usize], k: u64, what: &str, names: &mut FuncNames) -> Result<Option<Accumulated>, AccumulateError> {
    let prog = |span: Span, msg: String| AccumulateError::Program(TransformError { span, msg });
    let f = &m.funcs[entry];
    let d = f.insts[g].clone();
    let wrt: Vec<usize> = d.attr("wrt").and_then(|a| a.as_ints()).unwrap_or_default().into_iter().map(|w| w as usize).collect();
    // Operand positions holding a batch parameter.
    let param_of = |v: Value| match f.values[v].def {
        ValueDef::Param(i) if batch.contains(&i) => Some(i),
        _ => None,
    };
    let scanned: Vec<usize> = (0..d.operands.len()).filter(|j| param_of(d.operands[*j]).is_some()).collect();
    if scanned.is_empty() {
        return Ok(None);
    }
    if let Some(&j) = scanned.iter().find(|j| wrt.contains(j)) {
        return Err(prog(d.span, format!("unsupported: {what}: this grad differentiates with respect to batch parameter %{}; micro-batches add up gradients of the other operands only", f.values[d.operands[j]].name)));
    }
    // One batch size B, divisible by K, each micro-batch splitting as the batch does.
    let mesh = m.mesh_or_single();
    let rows = f.values[d.operands[scanned[0]]].ty.shape[0];
    for &j in &scanned {
        let v = &f.values[d.operands[j]];
        let span = v.span;
        let b = v.ty.shape[0];
        if b != rows {
            return Err(prog(span, format!("{what}: batch parameter %{} has {b} rows (dimension 0) and %{} has {rows}: the micro-batches of one grad need one batch size", v.name, f.values[d.operands[scanned[0]]].name)));
        }
        if b % k != 0 {
            return Err(prog(span, format!("{what}: dimension 0 of batch parameter %{} has size {b}, which is not divisible by {k} (micro-batches must be equal)", v.name)));
        }
        if let Some(DimSharding::Axes(axes)) = v.sharding.as_ref().and_then(|s| s.dims.first()) {
            let n = mesh.group_size(axes.iter().map(|a| a.as_str()));
            if (b / k) % n != 0 {
                return Err(prog(span, format!("{what}: a micro-batch of batch parameter %{} has {b}/{k} = {} rows, which do not split over [{}] ({n} devices; dimension 0's sharding)", v.name, b / k, axes.join(", "))));
            }
        }
    }
    let callee = d.callee().unwrap_or_default().to_string();
    let lid = m.func_by_name(&callee).ok_or_else(|| prog(d.span, format!("unknown function @{callee}")))?;
    // The loss for one micro-batch.
    let has_calls = m.funcs[lid].body.iter().any(|&i| !m.funcs[lid].insts[i].callees.is_empty());
    let loss = if has_calls { crate::inline_calls(m, lid).map_err(AccumulateError::Program)? } else { m.funcs[lid].clone() };
    let batched = batch::batched_values(&loss, &scanned, rows, what).map_err(AccumulateError::Program)?;
    let micro_name = names.fresh(m, &format!("{callee}.micro"));
    let mut micro = batch::retyped(&loss, &batched, rows, k, &micro_name);
    // Its signature: open shardings (a callee's are constraints where written).
    for &p in &micro.params.clone() {
        micro.values[p].sharding = None;
    }
    let step_name = names.fresh(m, &format!("{callee}.accumulate"));
    let step = step_fn(m, entry, &d, &scanned, &micro, &step_name);
    m.funcs.push(micro);
    m.funcs.push(step);
    // In the entry: the micro-batched operands, zeros, the scan.
    let sigs = signatures(m);
    let f = &mut m.funcs[entry];
    let before = f.body.len();
    let results = d.results.clone();
    let (carried, slices) = {
        let mut b = Builder::new(f, &mesh, &sigs);
        let mut slices = vec![];
        for &j in &scanned {
            let x = d.operands[j];
            let ty = b.func.values[x].ty.clone();
            let name = b.func.values[x].name.clone();
            let mut split = vec![rows / k, k];
            split.extend(&ty.shape[1..]);
            let mb = b.build_typed(Opcode::Reshape, &[x], vec![], TensorType::new(ty.dtype, split), &format!("{name}.mb"));
            let mut perm = vec![1i64, 0];
            perm.extend((2..=ty.shape.len() as i64).collect::<Vec<_>>());
            slices.push(b.build(Opcode::Transpose, &[mb], vec![("perm", AttrValue::int_list(&perm))], &format!("{name}.mbs")));
        }
        let mut carried = vec![];
        for &r in &results {
            let ty = b.func.values[r].ty.clone();
            let name = b.func.values[r].name.clone();
            let zero = if ty.dtype.is_float() { Number::Float(0.0) } else { Number::Int(0) };
            carried.push(b.splat(zero, ty, &format!("{name}.zero")));
        }
        for (j, &o) in d.operands.iter().enumerate() {
            if !scanned.contains(&j) {
                carried.push(o);
            }
        }
        (carried, slices)
    };
    let n_carries = carried.len();
    let mut operands = carried.clone();
    operands.extend(&slices);
    let scan_results = {
        let mut b = Builder::new(f, &mesh, &sigs);
        let base = b.func.values[results[0]].name.clone();
        let attrs = vec![("length", AttrValue::Int(k as i64)), ("carries", AttrValue::Int(n_carries as i64))];
        b.try_build(Opcode::Scan, &operands, attrs, std::slice::from_ref(&step_name), None, &format!("{base}.acc"))
            .map_err(|e| prog(d.span, format!("internal error: {what}: the micro-batch scan does not type: {}", e.msg)))?
    };
    // The grad's results are the scan's first results (same values, so no use changes).
    let scan = match f.values[scan_results[0]].def {
        ValueDef::Result(i, _) => i,
        ValueDef::Param(_) => unreachable!("built"),
    };
    for (q, &r) in results.iter().enumerate() {
        f.insts[scan].results[q] = r;
        f.values[r].def = ValueDef::Result(scan, q);
    }
    // The other carries come back unchanged: named after what they carry.
    let mut fresh = pjc_ir::builder::Names::default();
    for q in results.len()..n_carries {
        let v = f.insts[scan].results[q];
        let n = fresh.fresh(f, &format!("{}.c", f.values[carried[q]].name));
        f.values[v].name = n;
    }
    // The grad is gone: its instruction keeps no handles.
    f.insts[g].results.clear();
    f.insts[g].operands.clear();
    f.insts[scan].span = d.span;
    f.insts[scan].comments = d.comments.clone();
    let new = f.body.split_off(before);
    let at = f.body.iter().position(|&i| i == g).expect("the grad is in the entry");
    f.body.splice(at..=at, new);
    let batch_names = scanned.iter().map(|&j| f.values[d.operands[j]].name.clone()).collect();
    Ok(Some(Accumulated { loss: callee, step: step_name, micro: micro_name, batch: batch_names, rows }))
}

/// The scan's step: carries (the accumulated loss and gradients, then the
/// grad's other operands, returned unchanged), then one micro-batch of each
/// batch operand; `grad` of the micro-batch loss added to the carries.
fn step_fn(m: &Module, entry: FuncId, d: &pjc_ir::InstData, scanned: &[usize], micro: &Function, name: &str) -> Function {
    let f = &m.funcs[entry];
    let mesh = m.mesh_or_single();
    let mut sigs = signatures(m);
    sigs.insert(micro.name.clone(), pjc_ir::infer::CalleeSig {
        name: micro.name.clone(),
        kind: micro.kind,
        params: micro.params.iter().map(|&p| (micro.values[p].ty.clone(), None)).collect(),
        results: micro.results.iter().map(|r| (r.ty.clone(), r.sharding.clone())).collect(),
    });
    let mut s = Function::new(name, FuncKind::Global);
    let param = |s: &mut Function, n: &str, ty: TensorType| s.add_param(n, ty);
    let accs: Vec<Value> = d.results.iter().map(|&r| param(&mut s, &format!("{}.sum", f.values[r].name), f.values[r].ty.clone())).collect();
    let mut args: Vec<Option<Value>> = vec![None; d.operands.len()];
    let mut kept = vec![];
    for (j, &o) in d.operands.iter().enumerate() {
        if !scanned.contains(&j) {
            let v = param(&mut s, &f.values[o].name, f.values[o].ty.clone());
            args[j] = Some(v);
            kept.push(v);
        }
    }
    for &j in scanned {
        let o = d.operands[j];
        args[j] = Some(param(&mut s, &f.values[o].name, micro.values[micro.params[j]].ty.clone()));
    }
    let args: Vec<Value> = args.into_iter().map(|a| a.expect("every operand placed")).collect();
    let mut b = Builder::new(&mut s, &mesh, &sigs);
    let base = f.values[d.results[0]].name.clone();
    let attrs: Vec<(&str, AttrValue)> = d.attrs.iter().map(|a| (a.name.as_str(), a.value.clone())).collect();
    let got = b.try_build(Opcode::Grad, &args, attrs, std::slice::from_ref(&micro.name), None, &base).expect("grad of the micro-batch loss types as the original");
    let mut ret = vec![];
    for (q, (&acc, &v)) in accs.iter().zip(&got).enumerate() {
        ret.push(b.build(Opcode::Add, &[acc, v], vec![], &format!("{}.next", f.values[d.results[q]].name)));
    }
    ret.extend(kept);
    for &v in &ret {
        let ty = s.values[v].ty.clone();
        s.results.push(ResultDecl { name: None, ty, sharding: None, span: Span::NONE });
        s.ret.push(v);
        s.ret_spans.push(Span::NONE);
    }
    s
}
