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
    /// The element type the kernel reads or writes it as: the buffer's own,
    /// or another of the same width (sort's gathers move floats as unsigned
    /// integers, so every bit is kept).
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

/// The symbol of a kernel body with hash `h` ([`Kernel::symbol`]).
pub fn symbol_of(h: &[u8; 32]) -> String {
    let mut s = String::with_capacity(28);
    s.push_str("pjc_");
    for b in &h[..12] {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The distinct bodies of a list of kernels.
pub struct Distinct<'a> {
    /// Each distinct body's first kernel and its hash, in order of first use.
    pub bodies: Vec<(&'a Kernel, [u8; 32])>,
    /// Per kernel (in the order given), the index of its body.
    pub body_of: Vec<usize>,
}

/// Groups `kernels` by [`Kernel::body_hash`].
pub fn distinct<'a>(kernels: impl IntoIterator<Item = &'a Kernel>) -> Distinct<'a> {
    let mut index = std::collections::HashMap::new();
    let mut d = Distinct { bodies: vec![], body_of: vec![] };
    for k in kernels {
        let h = k.body_hash();
        let i = *index.entry(h).or_insert_with(|| {
            d.bodies.push((k, h));
            d.bodies.len() - 1
        });
        d.body_of.push(i);
    }
    d
}

/// An index node as `constant + Σ coeff · Coord(c)` ([`Kernel::affine`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Affine {
    /// (coordinate, coefficient), by coordinate, without zero coefficients.
    pub terms: Vec<(usize, i128)>,
    pub constant: i128,
}

impl Affine {
    /// The coefficient of coordinate `c` (0 when it does not appear).
    pub fn coeff(&self, c: usize) -> i128 {
        self.terms.iter().find(|t| t.0 == c).map_or(0, |t| t.1)
    }
}

impl Kernel {
    pub fn num_elements(&self) -> u64 {
        self.shape.iter().product()
    }

    /// A structural hash of everything code generation reads: the iteration
    /// space, the reduction, the element types of the buffers, the body and
    /// its results. Not the kernel's name, the PIR values it fuses or which
    /// plan buffers it is passed (a kernel reads its buffers through its
    /// argument array), so two kernels with the same hash compile to the
    /// same code: codegen compiles each distinct body once and the compile
    /// cache is keyed by it.
    pub fn body_hash(&self) -> [u8; 32] {
        #[derive(Serialize)]
        struct Body<'a> {
            shape: &'a [u64],
            reduce: &'a Option<Reduction>,
            inputs: Vec<DType>,
            outputs: Vec<DType>,
            nodes: &'a [Node],
            types: &'a [DType],
            results: &'a [NodeId],
        }
        let body = Body {
            shape: &self.shape,
            reduce: &self.reduce,
            inputs: self.inputs.iter().map(|b| b.dtype).collect(),
            outputs: self.outputs.iter().map(|b| b.dtype).collect(),
            nodes: &self.nodes,
            types: &self.types,
            results: &self.results,
        };
        let bytes = postcard::to_stdvec(&body).expect("a kernel body always encodes");
        *blake3::hash(&bytes).as_bytes()
    }

    /// The symbol of this kernel's generated code (in the host kernels'
    /// shared object and as the PTX `.entry`): `pjc_` and 24 hex digits of
    /// [`Kernel::body_hash`], so kernels with the same body share one
    /// symbol, in every program.
    pub fn symbol(&self) -> String {
        symbol_of(&self.body_hash())
    }

    /// Node `n` as an affine function of the coordinates, when it is one:
    /// index additions, subtractions and products with constants of
    /// coordinates and constants (how loads address their inputs without
    /// clamps or divisions). `None` for anything else.
    pub fn affine(&self, n: NodeId) -> Option<Affine> {
        fn walk(k: &Kernel, n: NodeId, scale: i128, a: &mut Affine, depth: usize) -> Option<()> {
            if depth > 256 {
                return None;
            }
            match &k.nodes[n] {
                Node::Coord(c) => match a.terms.iter_mut().find(|t| t.0 == *c) {
                    Some(t) => t.1 += scale,
                    None => a.terms.push((*c, scale)),
                },
                Node::ConstInt(x, _) => a.constant += scale * x,
                Node::Index { op: IndexOp::Add, a: x, b: y } => {
                    walk(k, *x, scale, a, depth + 1)?;
                    walk(k, *y, scale, a, depth + 1)?;
                }
                Node::Index { op: IndexOp::Sub, a: x, b: y } => {
                    walk(k, *x, scale, a, depth + 1)?;
                    walk(k, *y, -scale, a, depth + 1)?;
                }
                Node::Index { op: IndexOp::Mul, a: x, b: y } => match (&k.nodes[*x], &k.nodes[*y]) {
                    (_, Node::ConstInt(c, _)) => walk(k, *x, scale * c, a, depth + 1)?,
                    (Node::ConstInt(c, _), _) => walk(k, *y, scale * c, a, depth + 1)?,
                    _ => return None,
                },
                _ => return None,
            }
            Some(())
        }
        let mut a = Affine { terms: vec![], constant: 0 };
        walk(self, n, 1, &mut a, 0)?;
        a.terms.retain(|t| t.1 != 0);
        a.terms.sort();
        Some(a)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(nodes: Vec<Node>) -> Kernel {
        let types = vec![DType::I64; nodes.len()];
        Kernel { name: "k".into(), shape: vec![4, 5], reduce: None, inputs: vec![], outputs: vec![], nodes, types, results: vec![], fuses: vec![] }
    }

    #[test]
    fn affine_index_nodes_merge_their_terms_and_others_are_none() {
        use IndexOp::*;
        let ix = |op, a, b| Node::Index { op, a, b };
        // 7 + c0*5 + c1 - (c1*3 - 3*c0), then clamp-like max: not affine.
        let k = kernel(vec![
            Node::Coord(0),                 // 0
            Node::Coord(1),                 // 1
            Node::ConstInt(5, DType::I64),  // 2
            Node::ConstInt(3, DType::I64),  // 3
            Node::ConstInt(7, DType::I64),  // 4
            ix(Mul, 0, 2),                  // 5: 5 c0
            ix(Add, 4, 5),                  // 6
            ix(Add, 6, 1),                  // 7: 7 + 5 c0 + c1
            ix(Mul, 1, 3),                  // 8: 3 c1
            ix(Mul, 3, 0),                  // 9: 3 c0
            ix(Sub, 8, 9),                  // 10
            ix(Sub, 7, 10),                 // 11: 7 + 8 c0 - 2 c1
            ix(Max, 11, 4),                 // 12
            ix(Mul, 0, 1),                  // 13: c0 * c1
        ]);
        assert_eq!(k.affine(11), Some(Affine { terms: vec![(0, 8), (1, -2)], constant: 7 }));
        assert_eq!(k.affine(11).unwrap().coeff(1), -2);
        assert_eq!(k.affine(11).unwrap().coeff(2), 0);
        assert_eq!(k.affine(10), Some(Affine { terms: vec![(0, -3), (1, 3)], constant: 0 }));
        assert_eq!(k.affine(12), None);
        assert_eq!(k.affine(13), None);
    }
}
