//! The kernel plan of one function, as the planner (`pjc-fusion`) builds it
//! and everything after it reads it: its buffers (parameters, constants,
//! temporaries), its steps in execution order (loop kernels, library calls,
//! collectives) and its text form (`pjc compile --emit plan`).

use crate::control::{preorder, write_control, Control};
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
    /// A collective (runtime call).
    Collective { inst: InstData, input: usize, output: usize },
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

/// The steps' lines of `--emit plan`, each after `pad`.
fn write_steps(f: &mut fmt::Formatter<'_>, steps: &[Step], pad: &str) -> fmt::Result {
    {
        for s in steps {
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
                Step::Collective { inst, input, output } => {
                    let attrs: Vec<String> = inst
                        .attrs
                        .iter()
                        .map(|a| format!("{}={}", a.name, attr_text(&a.value)))
                        .collect();
                    writeln!(f, "{pad}collective {} {{{}}} (b{input}) -> (b{output})", inst.op, attrs.join(", "))?
                }
            }
        }
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
