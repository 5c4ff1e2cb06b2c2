//! The kernel description: one loop nest over an iteration space whose body is
//! a small SSA expression graph. Both code generators (x86-64 and NVPTX) lower
//! exactly this; nothing target-specific lives here.
//!
//! A kernel iterates over `shape` (the output's shape). For a reduction kernel
//! the body is evaluated for every point of `shape ++ reduce.shape` and the
//! values are combined per output point. Coordinates are i64 values
//! ([`Node::Coord`]): output dims first, then reduction dims. Loads index input
//! buffers by a linear (row-major) i64 index computed in the body, so every
//! data-movement op (transpose, slice, broadcast, reshape, pad, concat, reverse,
//! gather) is only index arithmetic.
//!
//! Values of f16/bf16 loads are held as f32 ("compute in f32"); stores round to
//! the element type once (round to nearest even).

use pjc_ir::{BinaryOp, DType, UnaryOp};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A node of a kernel body.
pub type NodeId = usize;

/// The type a node's value has in registers: f16/bf16 become f32.
pub fn compute_type(d: DType) -> DType {
    match d {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Node {
    /// Coordinate `k` of the iteration point (i64).
    Coord(usize),
    /// An integer constant of type `ty` (indices are i64).
    ConstInt(i128, DType),
    /// A float constant (already rounded to its storage dtype), of compute type.
    ConstFloat(f64, DType),
    ConstBool(bool),
    /// Element `index` (i64, row-major) of input buffer `input`.
    Load { input: usize, index: NodeId },
    /// An elementwise PIR op on values (spec semantics).
    Unary { op: UnaryOp, x: NodeId },
    Binary { op: BinaryOp, a: NodeId, b: NodeId },
    Compare { dir: CmpDir, a: NodeId, b: NodeId },
    Select { cond: NodeId, a: NodeId, b: NodeId },
    /// `convert` to `to` with the spec's rules (saturating float→int, …); for f16/bf16
    /// targets the value is rounded to that type and kept as f32.
    Convert { x: NodeId, to: DType },
    /// Same bits as another dtype of the same width (`from` is the operand's
    /// storage dtype, which matters for f16/bf16 values held as f32).
    Bitcast { x: NodeId, from: DType, to: DType },
    /// Index arithmetic on i64 (never overflows for valid programs).
    Index { op: IndexOp, a: NodeId, b: NodeId },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum IndexOp {
    Add,
    Sub,
    Mul,
    /// Floor division by a positive divisor.
    Div,
    /// Remainder by a positive divisor (non-negative result).
    Rem,
    Min,
    Max,
    /// 1 if a < b else 0.
    Lt,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CmpDir {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpDir {
    pub fn parse(s: &str) -> Option<CmpDir> {
        Some(match s {
            "eq" => CmpDir::Eq,
            "ne" => CmpDir::Ne,
            "lt" => CmpDir::Lt,
            "le" => CmpDir::Le,
            "gt" => CmpDir::Gt,
            "ge" => CmpDir::Ge,
            _ => return None,
        })
    }
}

/// How a reduction kernel combines values: the op table's reduction kinds.
pub use pjc_ir::ReduceKind;

/// The reduction loop of a kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reduction {
    /// Sizes of the reduced dims (coordinates `shape.len()..`).
    pub shape: Vec<u64>,
    pub kind: ReduceKind,
    /// Accumulator type (f32 for f16/bf16/f32 sums, f64 for f64; the value's type otherwise).
    pub acc: DType,
}

/// A buffer a kernel reads or writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BufferArg {
    /// Which plan buffer.
    pub buffer: usize,
    pub dtype: DType,
}

/// One loop kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    pub name: String,
    /// The iteration space (the outputs' shape).
    pub shape: Vec<u64>,
    pub reduce: Option<Reduction>,
    pub inputs: Vec<BufferArg>,
    pub outputs: Vec<BufferArg>,
    /// Topologically ordered: a node only refers to earlier nodes.
    pub nodes: Vec<Node>,
    /// Compute type of each node.
    pub types: Vec<DType>,
    /// Per output, the node stored at the output's linear index (for reductions:
    /// the node combined over the reduction loop).
    pub results: Vec<NodeId>,
    /// The PIR values this kernel computes, for printing.
    pub fuses: Vec<String>,
}

impl Kernel {
    pub fn num_elements(&self) -> u64 {
        self.shape.iter().product()
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shape = self.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",");
        write!(f, "kernel {} [{shape}]", self.name)?;
        if let Some(r) = &self.reduce {
            let rs = r.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",");
            write!(f, " reduce {:?} over [{rs}] in {}", r.kind, r.acc)?;
        }
        let ins = self.inputs.iter().map(|b| format!("b{}:{}", b.buffer, b.dtype)).collect::<Vec<_>>().join(", ");
        let outs = self.outputs.iter().map(|b| format!("b{}:{}", b.buffer, b.dtype)).collect::<Vec<_>>().join(", ");
        write!(f, " ({ins}) -> ({outs})  fuses {}", self.fuses.join(" "))
    }
}
