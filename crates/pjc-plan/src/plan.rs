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
    /// A library call for an op with no generated kernel (dot_general → GEMM,
    /// convolution, argmax/argmin, gather, scatter_add, select_and_scatter_add,
    /// axis_index): the instruction, with its operands and result buffers.
    Library { inst: InstData, inputs: Vec<usize>, output: usize },
    /// A collective (runtime call).
    Collective { inst: InstData, input: usize, output: usize },
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


impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "plan @{}", self.name)?;
        for (i, b) in self.buffers.iter().enumerate() {
            let kind = match &b.kind {
                BufferKind::Param(k) => format!("param {k}"),
                BufferKind::Constant(_) => "constant".to_string(),
                BufferKind::Temp => "temp".to_string(),
            };
            writeln!(f, "  b{i} = %{} : {} ({kind})", b.name, b.ty)?;
        }
        for s in &self.steps {
            match s {
                Step::Kernel(k) => writeln!(f, "  {k}")?,
                Step::Library { inst, inputs, output } => {
                    let ins = inputs.iter().map(|b| format!("b{b}")).collect::<Vec<_>>().join(", ");
                    writeln!(f, "  library {} ({ins}) -> (b{output})", inst.op)?
                }
                Step::Collective { inst, input, output } => {
                    let attrs: Vec<String> = inst
                        .attrs
                        .iter()
                        .map(|a| format!("{}={}", a.name, attr_text(&a.value)))
                        .collect();
                    writeln!(f, "  collective {} {{{}}} (b{input}) -> (b{output})", inst.op, attrs.join(", "))?
                }
            }
        }
        let res = self.results.iter().map(|b| format!("b{b}")).collect::<Vec<_>>().join(", ");
        writeln!(f, "  return {res}")
    }
}

fn attr_text(v: &AttrValue) -> String {
    match v {
        AttrValue::Int(i) => i.to_string(),
        AttrValue::Ident(s) => s.clone(),
        AttrValue::List(l) => format!("[{}]", l.iter().map(attr_text).collect::<Vec<_>>().join(",")),
        other => format!("{other:?}"),
    }
}
