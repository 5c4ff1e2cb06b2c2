//! Control flow in the planner (spec section 7.1; the steps' meaning is
//! `pjc_plan::control`'s).
//!
//! A function's plan gives a control-flow instruction buffers for its
//! results — the carried values' *state*, the stacked outputs' whole arrays,
//! a switch's outputs — and *window* buffers for the slices a scan step reads
//! and writes, and a control step naming its bodies ([`Planner::control`]).
//! [`plan_program`] then plans each body as a function of its own (with all
//! of the planner's fusion: kernels fuse inside a body) and merges it into the
//! plan as a block: its parameters become the buffers the step passes, its
//! other buffers join the plan's table, its kernels are renamed `b<N>_...` so
//! that every kernel of the program has one name in one module.
//!
//! A block's results are then made what the step's meaning needs:
//! - a switch branch's result and a scan's stacked output is written where
//!   the op wants it (the output buffer, the window): the buffer its last step
//!   writes *is* that buffer, or a copy kernel ends the block;
//! - a carried result is the state buffer itself (a body that returns its
//!   parameter: nothing to do), or a temporary of its own that the loop swaps
//!   with the state (ping-pong), or a copy kernel's output where it is
//!   neither (a dense constant, another carry's parameter, a scanned slice, a
//!   temporary another carry already swaps).

use super::{plan_function, Planner, PlanError, Unplannable};
use pjc_plan::control::{remap_buffers, Block, Control};
use pjc_plan::kernel::{compute_type, BufferArg, Kernel, Node};
use pjc_plan::{Buffer, BufferKind, Plan, Step};
use pjc_ir::{DType, FuncId, InstData, Module, Opcode};

impl Planner<'_> {
    /// The buffers and the (unfilled) control step of `inst`.
    pub(super) fn control(&mut self, inst: &InstData) -> Result<(), PlanError> {
        let ops: Vec<usize> = inst.operands.iter().map(|o| self.buffer_of[o]).collect();
        let unfilled = |name: &str, params: Vec<usize>| Block { name: name.to_string(), steps: vec![], params, results: vec![] };
        let step = match inst.op {
            Opcode::While => {
                let state: Vec<usize> = inst.results.iter().map(|&r| self.new_buffer(r, BufferKind::Temp)).collect();
                Control::While {
                    init: ops,
                    state: state.clone(),
                    cond: unfilled(&inst.callees[0], state.clone()),
                    body: unfilled(&inst.callees[1], state),
                }
            }
            Opcode::Scan => {
                let a = self.attrs_of(inst);
                let (length, carries, reverse) = (a.int("length")?, a.int("carries")?, a.bool("reverse")?);
                let c = carries as usize;
                let state: Vec<usize> = inst.results[..c].iter().map(|&r| self.new_buffer(r, BufferKind::Temp)).collect();
                let window = |p: &mut Planner, whole: usize, name: &str| {
                    let mut ty = p.buffers[whole].ty.clone();
                    ty.shape.remove(0);
                    p.temp_buffer(&format!("{name}.slice"), ty, BufferKind::Window { whole })
                };
                let scanned: Vec<usize> = inst.operands[c..].iter().zip(&ops[c..]).map(|(&o, &b)| window(self, b, &self.f.values[o].name.clone())).collect();
                let stacked: Vec<usize> = inst.results[c..]
                    .iter()
                    .map(|&r| {
                        let whole = self.new_buffer(r, BufferKind::Temp);
                        window(self, whole, &self.f.values[r].name.clone())
                    })
                    .collect();
                let params = state.iter().chain(&scanned).copied().collect();
                Control::Scan {
                    length: length as u64,
                    reverse,
                    init: ops[..c].to_vec(),
                    state,
                    scanned,
                    stacked,
                    step: unfilled(&inst.callees[0], params),
                }
            }
            _ => {
                let outputs: Vec<usize> = inst.results.iter().map(|&r| self.new_buffer(r, BufferKind::Temp)).collect();
                Control::Switch {
                    index: ops[0],
                    operands: ops[1..].to_vec(),
                    outputs,
                    branches: inst.callees.iter().map(|c| unfilled(c, ops[1..].to_vec())).collect(),
                }
            }
        };
        self.steps.push(Step::Control(step));
        Ok(())
    }
}

/// Builds the plan of function `entry` of `m` (a per-device program: the
/// entry and the bodies its control flow names, without calls or
/// transforms), every control step's blocks planned and merged.
pub fn plan_program(m: &Module, entry: FuncId) -> Result<Plan, Unplannable> {
    let mut plan = plan_function(&m.funcs[entry])?;
    let mut blocks = 0;
    let mut steps = std::mem::take(&mut plan.steps);
    fill(m, &mut plan, &mut steps, &mut blocks)?;
    plan.steps = steps;
    read_unchanged_carries_in_place(&mut plan);
    crate::schedule::schedule_on(&mut plan, Some(&m.mesh_or_single()));
    Ok(plan)
}

/// A carry that a loop's body returns unchanged (its result is its state
/// buffer: a weight that micro-batches or layers only read) needs no state
/// of its own: the loop reads its initial value's buffer, with no copy on
/// entry and no second buffer of its size. Every use of the state buffer
/// becomes the initial buffer (which nothing writes: plan buffers are written
/// once, and an unchanged carry is never swapped). Not for windows (a scan
/// slice moves each iteration of its own loop) or initial values that are
/// another carry's state in the same loop.
fn read_unchanged_carries_in_place(plan: &mut Plan) {
    fn collect(steps: &[Step], buffers: &[Buffer], map: &mut Vec<(usize, usize)>) {
        for s in steps {
            let Step::Control(c) = s else { continue };
            let carries = match c {
                Control::While { init, state, body, .. } => Some((init, state, body)),
                Control::Scan { init, state, step, .. } => Some((init, state, step)),
                Control::Switch { .. } => None,
            };
            if let Some((init, state, body)) = carries {
                for (k, (&i, &st)) in init.iter().zip(state).enumerate() {
                    let unchanged = body.results.get(k) == Some(&st);
                    let window = matches!(buffers[i].kind, BufferKind::Window { .. });
                    if unchanged && i != st && !window && !state.contains(&i) {
                        map.push((st, i));
                    }
                }
            }
            for b in c.blocks() {
                collect(&b.steps, buffers, map);
            }
        }
    }
    let mut map = vec![];
    collect(&plan.steps, &plan.buffers, &mut map);
    if map.is_empty() {
        return;
    }
    // Chains (an outer loop's unchanged state passed on unchanged) resolve
    // to the first initial value.
    let resolve = |mut b: usize| {
        while let Some(&(_, to)) = map.iter().find(|&&(from, _)| from == b) {
            b = to;
        }
        b
    };
    let table: std::collections::HashMap<usize, usize> = map.iter().map(|&(from, _)| (from, resolve(from))).collect();
    let mut f = |b: &mut usize| {
        if let Some(&to) = table.get(b) {
            *b = to;
        }
    };
    remap_buffers(&mut plan.steps, &mut f);
    plan.results.iter_mut().for_each(&mut f);
    // Windows onto such a state view the initial buffer.
    for b in &mut plan.buffers {
        if let BufferKind::Window { whole } = &mut b.kind {
            f(whole);
        }
    }
}

/// What a block's result must be (see the module doc).
#[derive(Copy, Clone)]
enum Want {
    /// Anything (a condition's predicate, read by the host).
    Any,
    /// Swapped with (or equal to) this state buffer.
    Carry(usize),
    /// Written into this buffer.
    Into(usize),
}

/// Fills the blocks of the control steps of `steps` (steps of `plan`).
fn fill(m: &Module, plan: &mut Plan, steps: &mut [Step], blocks: &mut usize) -> Result<(), Unplannable> {
    for s in steps {
        let Step::Control(c) = s else { continue };
        match c {
            Control::While { state, cond, body, .. } => {
                *cond = merge(m, plan, &cond.name, state, &[Want::Any], blocks)?;
                let carries: Vec<Want> = state.iter().map(|&s| Want::Carry(s)).collect();
                *body = merge(m, plan, &body.name, state, &carries, blocks)?;
            }
            Control::Scan { state, stacked, step, .. } => {
                let params = step.params.clone();
                let wants: Vec<Want> = state.iter().map(|&s| Want::Carry(s)).chain(stacked.iter().map(|&w| Want::Into(w))).collect();
                *step = merge(m, plan, &step.name, &params, &wants, blocks)?;
            }
            Control::Switch { operands, outputs, branches, .. } => {
                let wants: Vec<Want> = outputs.iter().map(|&o| Want::Into(o)).collect();
                for b in branches.iter_mut() {
                    *b = merge(m, plan, &b.name, operands, &wants, blocks)?;
                }
            }
        }
    }
    Ok(())
}

/// Plans body `name` and merges it into `plan` as a block whose parameters
/// are `params` and whose results are what `wants` says.
fn merge(m: &Module, plan: &mut Plan, name: &str, params: &[usize], wants: &[Want], blocks: &mut usize) -> Result<Block, Unplannable> {
    let missing = || Unplannable::Construct { func: name.to_string(), value: String::new(), msg: format!("internal error: the body @{name} is not in the per-device program") };
    let id = m.func_by_name(name).ok_or_else(missing)?;
    let f = &m.funcs[id];
    let mut body = plan_function(f)?;
    let mut inner = std::mem::take(&mut body.steps);
    fill(m, &mut body, &mut inner, blocks)?;
    *blocks += 1;
    let tag = format!("b{blocks}_");
    // Results written where the op wants them: the buffer a top-level step
    // of the block writes, returned once, becomes the target.
    let written: Vec<usize> = inner
        .iter()
        .flat_map(|s| match s {
            Step::Kernel(k) => k.outputs.iter().map(|b| b.buffer).collect(),
            Step::Library { outputs, .. } => outputs.clone(),
            Step::Collective { output, .. } => vec![*output],
            Step::Control(_) => vec![],
        })
        .collect();
    let mut map: Vec<Option<usize>> = vec![None; body.buffers.len()];
    for (k, &r) in body.results.iter().enumerate() {
        if let Want::Into(t) = wants[k] {
            let once = body.results.iter().filter(|&&x| x == r).count() == 1;
            if once && written.contains(&r) && map[r].is_none() {
                map[r] = Some(t);
            }
        }
    }
    for (i, b) in body.buffers.iter().enumerate() {
        if let BufferKind::Param(k) = b.kind {
            map[i] = Some(params[k]);
        } else if map[i].is_none() {
            let kind = match b.kind {
                BufferKind::Window { whole } => BufferKind::Window { whole: map[whole].expect("a window comes after its whole buffer") },
                ref k => k.clone(),
            };
            plan.buffers.push(Buffer { name: b.name.clone(), ty: b.ty.clone(), kind });
            map[i] = Some(plan.buffers.len() - 1);
        }
    }
    let map: Vec<usize> = map.into_iter().map(|b| b.expect("every buffer is mapped")).collect();
    remap_buffers(&mut inner, &mut |b| *b = map[*b]);
    rename_kernels(&mut inner, &tag);
    let mut results: Vec<usize> = vec![];
    let mut copies = 0;
    for (k, &r) in body.results.iter().enumerate() {
        let got = map[r];
        let result = match wants[k] {
            Want::Any => got,
            Want::Into(t) if got == t => t,
            Want::Carry(s) if got == s => s,
            // A temporary of this block's own that no other carry swaps:
            // swapped (copies of it into other results run before the swap).
            Want::Carry(_) if !results.contains(&got) && !params.contains(&got) && plan.buffers[got].kind == BufferKind::Temp => got,
            Want::Into(t) => {
                inner.push(Step::Kernel(copy_kernel(format!("{tag}copy{copies}"), got, t, &plan.buffers[t])));
                copies += 1;
                t
            }
            Want::Carry(s) => {
                let b = &plan.buffers[s];
                plan.buffers.push(Buffer { name: format!("{}.next", b.name), ty: b.ty.clone(), kind: BufferKind::Temp });
                let t = plan.buffers.len() - 1;
                inner.push(Step::Kernel(copy_kernel(format!("{tag}copy{copies}"), got, t, &plan.buffers[t])));
                copies += 1;
                t
            }
        };
        results.push(result);
    }
    Ok(Block { name: name.to_string(), steps: inner, params: params.to_vec(), results })
}

/// Prefixes every kernel name of `steps` (nested blocks and device kernels
/// included) with `tag`: a body's kernel names are unique only in its own plan.
fn rename_kernels(steps: &mut [Step], tag: &str) {
    for s in steps {
        match s {
            Step::Kernel(k) => k.name = format!("{tag}{}", k.name),
            Step::Library { device, .. } => device.iter_mut().for_each(|k| k.name = format!("{tag}{}", k.name)),
            Step::Collective { .. } => {}
            Step::Control(c) => c.blocks_mut().into_iter().for_each(|b| rename_kernels(&mut b.steps, tag)),
        }
    }
}

/// A kernel copying buffer `src` into buffer `dst` (of `dst`'s type), point
/// by point in row-major order.
fn copy_kernel(name: String, src: usize, dst: usize, ty: &Buffer) -> Kernel {
    let d = ty.ty.dtype;
    Kernel {
        name,
        shape: vec![ty.ty.num_elements()],
        reduce: None,
        inputs: vec![BufferArg { buffer: src, dtype: d }],
        outputs: vec![BufferArg { buffer: dst, dtype: d }],
        nodes: vec![Node::Coord(0), Node::Load { input: 0, index: 0 }],
        types: vec![DType::I64, compute_type(d)],
        results: vec![1],
        fuses: vec![format!("%{} (copy)", ty.name)],
    }
}
