//! Device kernels of `sort` and `top_k`: sorting as ranking, three kernels
//! per op, no host step.
//!
//! 1. **rank** (a reduction per element over its row): element `j`'s place is
//!    `#{k : key_k sorts before key_j, or the keys are equal and k < j}` in
//!    spec section 11's total order (numeric, −0.0 equal to +0.0, NaNs equal
//!    to each other and after +inf; `descending` reverses the comparison, not
//!    the tie-break, so both directions are stable; several keys compare
//!    lexicographically). The ranks of a row are a permutation of `0..n`.
//! 2. **perm** (a reduction per output position `i` over the row): the `k`
//!    whose rank is `i` — the inverse permutation; `top_k` keeps positions
//!    `i < k` of the descending order (ties by lower index).
//! 3. **gather**: every result at position `i` is its operand at `perm[i]`
//!    (`top_k`: the value and the index itself, as i32). Floats move as
//!    same-width unsigned integers, so every bit (NaN payloads, −0.0) is kept.
//!
//! Kernels 1 and 2 compare every pair of a row: O(n²) work per row, exact and
//! deterministic (no atomics, no data-dependent control flow), but slow for
//! long rows — a first version; the CPU runs the host library's O(n log n)
//! sort instead.

use super::{Body, PlanError, Planner};
use pjc_ir::{BinaryOp, DType, InstData, Opcode, TensorType, Value};
use pjc_plan::kernel::{BufferArg, CmpDir, IndexOp, Kernel, Node, NodeId, ReduceKind, Reduction};

/// The dtype a gather kernel moves elements of `d` as: floats as the
/// unsigned integer of their width (bit for bit), others as themselves.
pub(super) fn bits_view(d: DType) -> DType {
    match d {
        DType::F16 | DType::BF16 => DType::U16,
        DType::F32 => DType::U32,
        DType::F64 => DType::U64,
        d => d,
    }
}

impl<'a> Planner<'a> {
    /// The rank, perm and gather kernels of `sort`/`top_k` writing `outputs`.
    pub(super) fn ranked_device(&mut self, inst: &InstData, outputs: &[usize]) -> Result<Vec<Kernel>, PlanError> {
        let a = self.attrs_of(inst);
        let xt = self.ty_of(inst.operands[0]);
        let last = xt.rank().saturating_sub(1);
        // (dim, keys, descending, how many positions are kept)
        let (dim, nk, descending, kept) = match inst.op {
            Opcode::Sort => {
                let dim = a.index("dim")?;
                (dim, a.index("num_keys")?, a.bool("descending")?, xt.shape[dim])
            }
            _ => (last, 1, true, a.index("k")? as u64),
        };
        let keys: Vec<Value> = inst.operands[..nk].to_vec();
        let n = xt.shape[dim];
        let v = inst.results[0];
        let (rank, k1) = self.temp_kernel(v, "rank_device", TensorType::new(DType::I64, xt.shape.clone()), |b, c| {
            let mut other = c.to_vec();
            other[dim] = b.push(Node::Coord(c.len()), DType::I64);
            let earlier = b.ix(IndexOp::Lt, other[dim], c[dim]);
            let mut before = b.flag(earlier);
            for &key in keys.iter().rev() {
                let (p, q) = (b.value(key, &other)?, b.value(key, c)?);
                let d = b.ty(key).dtype;
                let (lt, eq) = if descending { b.order(q, p, d) } else { b.order(p, q, d) };
                let tie = b.push(Node::Binary { op: BinaryOp::And, a: eq, b: before }, DType::Pred);
                before = b.push(Node::Binary { op: BinaryOp::Or, a: lt, b: tie }, DType::Pred);
            }
            let count = b.push(Node::Convert { x: before, to: DType::I64 }, DType::I64);
            Ok((count, Some(Reduction { shape: vec![n], kind: ReduceKind::Sum, acc: DType::I64 })))
        })?;
        let mut pshape = xt.shape.clone();
        pshape[dim] = kept;
        let xshape = xt.shape.clone();
        let (perm, k2) = self.temp_kernel(v, "perm_device", TensorType::new(DType::I64, pshape.clone()), |b, c| {
            let mut other = c.to_vec();
            let k = b.push(Node::Coord(c.len()), DType::I64);
            other[dim] = k;
            let lin = b.linear(&other, &xshape);
            let r = b.load_buffer(rank, DType::I64, lin);
            let hit = b.push(Node::Compare { dir: CmpDir::Eq, a: r, b: c[dim] }, DType::Pred);
            let zero = b.int(0);
            let pick = b.push(Node::Select { cond: hit, a: k, b: zero }, DType::I64);
            Ok((pick, Some(Reduction { shape: vec![n], kind: ReduceKind::Sum, acc: DType::I64 })))
        })?;
        // sort gathers every operand; top_k its one operand, plus the indices.
        let moved: Vec<Value> = if inst.op == Opcode::Sort { inst.operands.clone() } else { vec![inst.operands[0]] };
        let mut args: Vec<BufferArg> =
            moved.iter().zip(outputs).map(|(&x, &buffer)| BufferArg { buffer, dtype: bits_view(self.ty_of(x).dtype) }).collect();
        let index_ty = (inst.op == Opcode::TopK).then(|| self.ty_of(inst.results[1]).dtype);
        if let Some(dtype) = index_ty {
            args.push(BufferArg { buffer: outputs[1], dtype });
        }
        let sources: Vec<(usize, DType)> = moved.iter().map(|x| (self.buffer_of[x], bits_view(self.ty_of(*x).dtype))).collect();
        let name = self.kernel_name(v, "_device");
        let k3 = self.build_outputs(name, &pshape, args, &inst.results, |b, c| {
            let lin = b.linear(c, &pshape);
            let from = b.load_buffer(perm, DType::I64, lin);
            let mut src = c.to_vec();
            src[dim] = from;
            let slin = b.linear(&src, &xshape);
            let mut out: Vec<NodeId> = sources.iter().map(|&(buffer, dtype)| b.load_buffer(buffer, dtype, slin)).collect();
            if let Some(dtype) = index_ty {
                out.push(b.push(Node::Convert { x: from, to: dtype }, dtype));
            }
            Ok((out, None))
        })?;
        Ok(vec![k1, k2, k3])
    }
}

impl<'a> Body<'a> {
    /// Whether `p` sorts before `q` and whether they are equal (both pred),
    /// for values of storage dtype `d`, in section 11's ascending total order:
    /// numeric (so −0.0 equals +0.0), NaN after everything and equal to NaN,
    /// pred false < true.
    fn order(&mut self, p: NodeId, q: NodeId, d: DType) -> (NodeId, NodeId) {
        let lt = self.push(Node::Compare { dir: CmpDir::Lt, a: p, b: q }, DType::Pred);
        let eq = self.push(Node::Compare { dir: CmpDir::Eq, a: p, b: q }, DType::Pred);
        if !d.is_float() {
            return (lt, eq);
        }
        let pn = self.push(Node::Compare { dir: CmpDir::Ne, a: p, b: p }, DType::Pred);
        let qn = self.push(Node::Compare { dir: CmpDir::Ne, a: q, b: q }, DType::Pred);
        let p_num = self.push(Node::Unary { op: pjc_ir::UnaryOp::Not, x: pn }, DType::Pred);
        let before_nan = self.push(Node::Binary { op: BinaryOp::And, a: p_num, b: qn }, DType::Pred);
        let lt = self.push(Node::Binary { op: BinaryOp::Or, a: lt, b: before_nan }, DType::Pred);
        let both_nan = self.push(Node::Binary { op: BinaryOp::And, a: pn, b: qn }, DType::Pred);
        let eq = self.push(Node::Binary { op: BinaryOp::Or, a: eq, b: both_nan }, DType::Pred);
        (lt, eq)
    }
}
