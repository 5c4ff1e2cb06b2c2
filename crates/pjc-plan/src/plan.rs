//! The kernel plan of one function, as the planner (`pjc-fusion`) builds it
//! and everything after it reads it: its buffers (parameters, constants,
//! temporaries), its steps in execution order (loop kernels, library calls,
//! collectives) and its text form (`pjc compile --emit plan`).

use crate::kernel::Kernel;
use pjc_ir::{AttrValue, InstData, Literal, TensorType};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a buffer holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum BufferKind {
    /// Parameter `i` of the function.
    Param(usize),
    /// A dense constant, filled once.
    Constant(Literal),
    /// An intermediate or result value.
    Temp,
    /// `i32[n]`: this device's index along each of the named mesh axes, in
    /// order, written by the backend before the first step (what
    /// `axis_index` kernels load; 0 everywhere on a single device).
    AxisIndices(Vec<String>),
    /// A slice along dimension 0 of buffer `whole`, at the position the scan
    /// that names it sets before each iteration (`crate::control`): a view,
    /// with no memory of its own.
    Window { whole: usize },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Buffer {
    pub name: String,
    pub ty: TensorType,
    pub kind: BufferKind,
}

impl Buffer {
    /// Byte size. `plan` only builds plans whose buffers (aligned, all
    /// together) fit in u64; saturates otherwise.
    pub fn bytes(&self) -> u64 {
        self.ty.bytes()
    }
}

/// One step of the plan, in execution order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Step {
    /// A generated loop kernel.
    Kernel(Kernel),
    /// A library call (dot_general → GEMM, convolution, scatter, sort,
    /// top_k): the instruction, with its operand buffers and one buffer per
    /// result. `device` is the same computation as generated loop kernels,
    /// run in order, for a device without a library routine for the step (the
    /// CUDA backend where cuBLAS does not take it; see `pjc_host::device`):
    /// they read the operands and write the results, through temporaries of
    /// their own (sort's ranks) that the buffer plan gives this step. Empty
    /// for an op without one.
    Library { inst: InstData, inputs: Vec<usize>, outputs: Vec<usize>, device: Vec<Kernel> },
    /// A collective (runtime call). `done` None: it completes before the
    /// next step (blocking). `Some(j)`: it *starts* here and completes before
    /// step `j` of the same step list (`j` = the list's length: at its end) —
    /// a start/done pair; the steps between neither read its output nor write
    /// its input or output, so they may run while it is in flight
    /// (`pjc_fusion::schedule` decides; the buffer plan keeps both buffers
    /// live until the done).
    Collective { inst: InstData, input: usize, output: usize, done: Option<usize> },
    /// `while`, `scan` or `switch`: blocks of steps run in a loop or by an
    /// index (`crate::control`).
    Control(Control),
}

/// The whole plan of one function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub name: String,
    pub buffers: Vec<Buffer>,
    pub steps: Vec<Step>,
    /// Buffer of each parameter.
    pub params: Vec<usize>,
    /// Buffer of each result.
    pub results: Vec<usize>,
}

impl Plan {
    /// The plan with every library step that has a device kernel replaced by
    /// that kernel (what a device without library routines runs; the CUDA
    /// backend keeps the products cuBLAS takes: `pjc_host::device::cuda_plan`).
    /// Buffers, and so the buffer plan, are unchanged: a device kernel reads
    /// and writes the step's buffers.
    pub fn with_device_kernels(&self) -> Plan {
        fn replace(steps: &[Step]) -> Vec<Step> {
            steps
                .iter()
                .flat_map(|s| match s {
                    Step::Library { device, .. } if !device.is_empty() => device.iter().cloned().map(Step::Kernel).collect(),
                    Step::Control(c) => {
                        let mut c = c.clone();
                        for b in c.blocks_mut() {
                            b.steps = replace(&b.steps);
                        }
                        vec![Step::Control(c)]
                    }
                    s => vec![s.clone()],
                })
                .collect()
        }
        Plan { steps: replace(&self.steps), ..self.clone() }
    }

    /// Every kernel the plan launches, in step order (the blocks of control
    /// steps included, in pre-order).
    pub fn kernels(&self) -> impl Iterator<Item = &Kernel> {
        preorder(&self.steps).into_iter().filter_map(|s| match s {
            Step::Kernel(k) => Some(k),
            _ => None,
        })
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "plan @{}", self.name)?;
        for (i, b) in self.buffers.iter().enumerate() {
            let kind = match &b.kind {
                BufferKind::Param(k) => format!("param {k}"),
                BufferKind::Constant(_) => "constant".to_string(),
                BufferKind::Temp => "temp".to_string(),
                BufferKind::AxisIndices(axes) => format!("axis indices [{}]", axes.join(", ")),
                BufferKind::Window { whole } => format!("window of b{whole}"),
            };
            writeln!(f, "  b{i} = %{} : {} ({kind})", b.name, b.ty)?;
        }
        write_steps(f, &self.steps, "  ")?;
        let res = self.results.iter().map(|b| format!("b{b}")).collect::<Vec<_>>().join(", ");
        writeln!(f, "  return {res}")
    }
}

impl Plan {
    /// What buffer `i` is to the program: "parameter", "constant", "axis
    /// indices", "result" or "temporary" (windows count as temporaries).
    pub fn role(&self, i: usize) -> &'static str {
        match self.buffers[i].kind {
            BufferKind::Param(_) => "parameter",
            BufferKind::Constant(_) => "constant",
            BufferKind::AxisIndices(_) => "axis indices",
            _ if self.results.contains(&i) => "result",
            _ => "temporary",
        }
    }
}

/// For each position `j` of a step list (0..=len), the asynchronous
/// collectives of the list that complete before step `j` (`j` = len: at its
/// end), in step order.
pub fn dones_at(steps: &[Step]) -> Vec<Vec<usize>> {
    let mut at = vec![vec![]; steps.len() + 1];
    for (i, s) in steps.iter().enumerate() {
        if let Step::Collective { done: Some(d), .. } = s {
            if let Some(v) = at.get_mut(*d) {
                v.push(i);
            }
        }
    }
    at
}

/// The steps' lines of `--emit plan`, each after `pad`.
fn write_steps(f: &mut fmt::Formatter<'_>, steps: &[Step], pad: &str) -> fmt::Result {
    {
        // Where an asynchronous collective completes: a `done` line before the
        // step that needs it (or at the end of the list).
        let at = dones_at(steps);
        let dones = |f: &mut fmt::Formatter<'_>, j: usize| -> fmt::Result {
            for &i in &at[j] {
                if let Step::Collective { inst, output, .. } = &steps[i] {
                    writeln!(f, "{pad}done {} -> (b{output})", inst.op)?;
                }
            }
            Ok(())
        };
        for (j, s) in steps.iter().enumerate() {
            dones(f, j)?;
            match s {
                Step::Control(c) => write_control(f, c, pad, &write_steps)?,
                Step::Kernel(k) => writeln!(f, "{pad}{k}")?,
                Step::Library { inst, inputs, outputs, device } => {
                    let bufs = |bs: &[usize]| bs.iter().map(|b| format!("b{b}")).collect::<Vec<_>>().join(", ");
                    let dev = match device.len() {
                        0 => String::new(),
                        1 => format!("  device kernel {}", device[0].name),
                        _ => format!("  device kernels {}", device.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(", ")),
                    };
                    let attrs: Vec<String> = inst.attrs.iter().map(|a| format!("{}={}", a.name, attr_text(&a.value))).collect();
                    let attrs = if attrs.is_empty() { String::new() } else { format!(" {{{}}}", attrs.join(", ")) };
                    writeln!(f, "{pad}library {}{attrs} ({}) -> ({}){dev}", inst.op, bufs(inputs), bufs(outputs))?
                }
                Step::Collective { inst, input, output, done } => {
                    let attrs: Vec<String> = inst
                        .attrs
                        .iter()
                        .map(|a| format!("{}={}", a.name, attr_text(&a.value)))
                        .collect();
                    let what = if done.is_some() { "collective start" } else { "collective" };
                    writeln!(f, "{pad}{what} {} {{{}}} (b{input}) -> (b{output})", inst.op, attrs.join(", "))?
                }
            }
        }
        dones(f, steps.len())?;
        Ok(())
    }
}

fn attr_text(v: &AttrValue) -> String {
    match v {
        AttrValue::Int(i) => i.to_string(),
        AttrValue::Ident(s) => s.clone(),
        AttrValue::Str(s) => format!("{s:?}"),
        AttrValue::Bool(b) => b.to_string(),
        AttrValue::List(l) => format!("[{}]", l.iter().map(attr_text).collect::<Vec<_>>().join(",")),
        other => format!("{other:?}"),
    }
}

// ---- Control-flow steps: their structure (their meaning is `crate::control`'s).

/// The steps of one body function as a control step runs them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Block {
    /// The function it runs, for `--emit plan`.
    pub name: String,
    pub steps: Vec<Step>,
    /// The buffers its function's parameters are in.
    pub params: Vec<usize>,
    /// The buffers its function's results are in when its steps have run.
    pub results: Vec<usize>,
}

/// A control-flow step (what each does: `crate::control`'s module doc).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Control {
    /// `cond.params == body.params == state`; `cond.results == [predicate]`;
    /// `body.results[k]` is `state[k]` or a temporary swapped into it.
    While { init: Vec<usize>, state: Vec<usize>, cond: Block, body: Block },
    /// `step.params == state ++ scanned`, `step.results == carries ++ stacked`:
    /// the carries as in `while`; `scanned` and `stacked` are window buffers.
    Scan { length: u64, reverse: bool, init: Vec<usize>, state: Vec<usize>, scanned: Vec<usize>, stacked: Vec<usize>, step: Block },
    /// `branches[i].params == operands`, `branches[i].results == outputs`.
    Switch { index: usize, operands: Vec<usize>, outputs: Vec<usize>, branches: Vec<Block> },
}

impl Control {
    /// The blocks, in step-numbering order.
    pub fn blocks(&self) -> Vec<&Block> {
        match self {
            Control::While { cond, body, .. } => vec![cond, body],
            Control::Scan { step, .. } => vec![step],
            Control::Switch { branches, .. } => branches.iter().collect(),
        }
    }

    pub fn blocks_mut(&mut self) -> Vec<&mut Block> {
        match self {
            Control::While { cond, body, .. } => vec![cond, body],
            Control::Scan { step, .. } => vec![step],
            Control::Switch { branches, .. } => branches.iter_mut().collect(),
        }
    }

    /// The buffers the step itself names (not those of its blocks' steps).
    pub fn own_buffers_mut(&mut self) -> Vec<&mut usize> {
        let mut out: Vec<&mut usize> = vec![];
        match self {
            Control::While { init, state, cond, body } => {
                out.extend(init.iter_mut());
                out.extend(state.iter_mut());
                for b in [cond, body] {
                    out.extend(b.params.iter_mut());
                    out.extend(b.results.iter_mut());
                }
            }
            Control::Scan { init, state, scanned, stacked, step, .. } => {
                out.extend(init.iter_mut());
                out.extend(state.iter_mut());
                out.extend(scanned.iter_mut());
                out.extend(stacked.iter_mut());
                out.extend(step.params.iter_mut());
                out.extend(step.results.iter_mut());
            }
            Control::Switch { index, operands, outputs, branches } => {
                out.push(index);
                out.extend(operands.iter_mut());
                out.extend(outputs.iter_mut());
                for b in branches {
                    out.extend(b.params.iter_mut());
                    out.extend(b.results.iter_mut());
                }
            }
        }
        out
    }

    /// The op's results, as the plan around it sees them: the state (and, for
    /// `scan`, the whole buffers of the stacked outputs), or the outputs.
    pub fn outputs(&self, buffers: &[Buffer]) -> Vec<usize> {
        match self {
            Control::While { state, .. } => state.clone(),
            Control::Scan { state, stacked, .. } => state.iter().copied().chain(stacked.iter().map(|&w| whole_of(buffers, w))).collect(),
            Control::Switch { outputs, .. } => outputs.clone(),
        }
    }
}

/// The buffer a window buffer is a slice of (itself for any other buffer).
pub fn whole_of(buffers: &[Buffer], w: usize) -> usize {
    match buffers[w].kind {
        BufferKind::Window { whole } => whole,
        _ => w,
    }
}

/// How many steps `s` counts in the pre-order numbering: itself and, for a
/// control step, every step of its blocks.
pub fn step_count(s: &Step) -> usize {
    match s {
        Step::Control(c) => 1 + c.blocks().iter().map(|b| steps_count(&b.steps)).sum::<usize>(),
        _ => 1,
    }
}

/// [`step_count`] summed over `steps`.
pub fn steps_count(steps: &[Step]) -> usize {
    steps.iter().map(step_count).sum()
}

/// Every step of `steps` and of the blocks of its control steps, in pre-order
/// (the numbering backends index their per-step data by).
pub fn preorder(steps: &[Step]) -> Vec<&Step> {
    let mut out = vec![];
    // An explicit stack: nesting depth is the program's, not the machine stack's.
    let mut stack: Vec<std::slice::Iter<'_, Step>> = vec![steps.iter()];
    while let Some(top) = stack.last_mut() {
        let Some(s) = top.next() else {
            stack.pop();
            continue;
        };
        out.push(s);
        if let Step::Control(c) = s {
            for b in c.blocks().into_iter().rev() {
                stack.push(b.steps.iter());
            }
        }
    }
    out
}

/// Applies `f` to every buffer number `steps` name, nested blocks included.
pub fn remap_buffers(steps: &mut [Step], f: &mut dyn FnMut(&mut usize)) {
    for s in steps {
        match s {
            Step::Kernel(k) => k.inputs.iter_mut().chain(k.outputs.iter_mut()).for_each(|b| f(&mut b.buffer)),
            Step::Library { inputs, outputs, device, .. } => {
                inputs.iter_mut().chain(outputs.iter_mut()).for_each(&mut *f);
                for k in device {
                    k.inputs.iter_mut().chain(k.outputs.iter_mut()).for_each(|b| f(&mut b.buffer));
                }
            }
            Step::Collective { input, output, .. } => {
                f(input);
                f(output);
            }
            Step::Control(c) => {
                c.own_buffers_mut().into_iter().for_each(&mut *f);
                for b in c.blocks_mut() {
                    remap_buffers(&mut b.steps, f);
                }
            }
        }
    }
}

/// Every buffer step `s` names, its blocks' steps included (with repeats).
pub fn step_buffers(s: &Step) -> Vec<usize> {
    let mut out = vec![];
    remap_buffers(&mut [s.clone()], &mut |b| out.push(*b));
    out
}

/// One line per control step and its blocks, as `--emit plan` prints them;
/// `write_steps` prints the blocks' steps (at `pad` plus four spaces).
pub fn write_control(
    f: &mut fmt::Formatter<'_>,
    c: &Control,
    pad: &str,
    write_steps: &dyn Fn(&mut fmt::Formatter<'_>, &[Step], &str) -> fmt::Result,
) -> fmt::Result {
    let list = |bs: &[usize]| bs.iter().map(|b| format!("b{b}")).collect::<Vec<_>>().join(", ");
    let inner = format!("{pad}    ");
    let block = |f: &mut fmt::Formatter<'_>, what: &str, b: &Block| -> fmt::Result {
        writeln!(f, "{pad}  {what} @{} ({}) -> ({})", b.name, list(&b.params), list(&b.results))?;
        write_steps(f, &b.steps, &inner)
    };
    match c {
        Control::While { init, state, cond, body } => {
            writeln!(f, "{pad}while ({}) -> ({})", list(init), list(state))?;
            block(f, "cond", cond)?;
            block(f, "body", body)
        }
        Control::Scan { length, reverse, init, state, scanned, stacked, step } => {
            let rev = if *reverse { ", reverse" } else { "" };
            writeln!(f, "{pad}scan {{length={length}{rev}}} ({}) -> ({}) windows ({}) ({})", list(init), list(state), list(scanned), list(stacked))?;
            block(f, "step", step)
        }
        Control::Switch { index, operands, outputs, branches } => {
            writeln!(f, "{pad}switch b{index} ({}) -> ({})", list(operands), list(outputs))?;
            for (i, b) in branches.iter().enumerate() {
                block(f, &format!("branch {i}"), b)?;
            }
            Ok(())
        }
    }
}
