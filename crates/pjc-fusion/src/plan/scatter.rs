//! Device kernels of `scatter_add` and `scatter` (every kind), as, per
//! output (base) element, a reduction over the updates whose index names it:
//!
//! - `add`, `mul`, `max`, `min`: one reduction kernel over every update plus
//!   the base element (reduction point `|idx|`), combining with the kind's
//!   reduction (`or`/`and` on pred: section 11's `add`/`max` = or, `mul`/`min`
//!   = and); updates landing elsewhere contribute the identity. Floats
//!   accumulate in at least f32, integers wrap, max/min propagate NaN.
//! - `set`: kernel 1 takes, per base element, the largest row-major position
//!   in the index array of an update landing there (-1 for none), kernel 2
//!   writes that update, or the base element where none landed, bit for bit
//!   (floats move as unsigned integers of their width): the last duplicate
//!   wins, whatever the device or process count.
//!
//! Out-of-range indices match no base element, so their updates are dropped
//! (shapes are never empty, so there is always an update to reduce over).
//! Each output element reads every update: O(|base| · |idx|) work, correct
//! and deterministic, not fast.

use super::sort::bits_view;
use super::{accumulator, Body, Built, PlanError, Planner};
use pjc_ir::{DType, InstData, TensorType};
use pjc_plan::kernel::{compute_type, BufferArg, CmpDir, Kernel, Node, NodeId, ReduceKind, Reduction};

impl<'a> Planner<'a> {
    /// The device kernels of `scatter_add`/`scatter` writing `output`.
    pub(super) fn scatter_device(&mut self, inst: &InstData, output: usize) -> Result<Vec<Kernel>, PlanError> {
        let v = inst.results[0];
        let ty = self.ty_of(v);
        let out = BufferArg { buffer: output, dtype: ty.dtype };
        let name = self.kernel_name(v, "_device");
        let kind = self.attrs_of(inst).scatter_kind()?;
        let Some(combine) = kind.reduce_kind() else {
            // set: the winning update's position, then the update or the base.
            let ni = self.ty_of(inst.operands[1]).num_elements();
            let wty = TensorType::new(DType::I64, ty.shape.clone());
            let (winner, k1) = self.temp_kernel(v, "winner_device", wty, |b, c| {
                let (r, _, hit) = b.scatter_point(inst, c)?;
                let none = b.int(-1);
                let pick = b.push(Node::Select { cond: hit, a: r, b: none }, DType::I64);
                Ok((pick, Some(Reduction { shape: vec![ni], kind: ReduceKind::Max, acc: DType::I64 })))
            })?;
            // The element moves bit for bit: loads and the store view floats
            // as unsigned integers of their width.
            let view = bits_view(ty.dtype);
            let (shape, ushape) = (ty.shape.clone(), self.ty_of(inst.operands[2]).shape);
            let (base, upd) = (self.buffer_of[&inst.operands[0]], self.buffer_of[&inst.operands[2]]);
            let out = BufferArg { dtype: view, ..out };
            let k2 = self.build(name, &ty.shape, out, v, |b, c| {
                let lin = b.linear(c, &shape);
                let w = b.load_buffer(winner, DType::I64, lin);
                let uc = b.update_coords(inst, c, w)?;
                let ulin = b.linear(&uc, &ushape);
                let uv = b.load_buffer(upd, view, ulin);
                let basev = b.load_buffer(base, view, lin);
                let zero = b.int(0);
                let landed = b.push(Node::Compare { dir: CmpDir::Ge, a: w, b: zero }, DType::Pred);
                Ok((b.push(Node::Select { cond: landed, a: uv, b: basev }, view), None))
            })?;
            return Ok(vec![k1, k2]);
        };
        // Section 11: on pred, add/max are `or`, mul/min are `and`.
        let combine = match (ty.dtype.is_pred(), combine) {
            (true, ReduceKind::Sum | ReduceKind::Max) => ReduceKind::Or,
            (true, _) => ReduceKind::And,
            (false, k) => k,
        };
        Ok(vec![self.build(name, &ty.shape, out, v, |b, c| b.scatter_combine(inst, c, combine))?])
    }
}

impl<'a> Body<'a> {
    /// For output coordinates `out` of `scatter %base, %idx, %updates
    /// {axis}`, at reduction coordinate `out.len()` (the update's row-major
    /// position `r` in the index array, clamped into range): `r`, the
    /// coordinates of update `r` in `%updates` and whether it lands at `out`.
    fn scatter_point(&mut self, inst: &InstData, out: &[NodeId]) -> Result<(NodeId, Vec<NodeId>, NodeId), PlanError> {
        let (idx, it) = (inst.operands[1], self.ty(inst.operands[1]).clone());
        let axis = self.attrs(inst).index("axis")?;
        let r = self.push(Node::Coord(out.len()), DType::I64);
        let rc = self.clamp(r, 0, it.num_elements() as i128 - 1);
        let uc = self.updates_at(out, axis, rc, &it.shape);
        let raw = self.value(idx, &uc[axis..axis + it.rank()])?;
        let j = self.push(Node::Convert { x: raw, to: DType::I64 }, DType::I64);
        let hit = self.push(Node::Compare { dir: CmpDir::Eq, a: j, b: out[axis] }, DType::Pred);
        Ok((r, uc, hit))
    }

    /// The coordinates in `%updates` of update number `w` (row-major in the
    /// index array, clamped into range) landing at output coordinates `out`.
    fn update_coords(&mut self, inst: &InstData, out: &[NodeId], w: NodeId) -> Result<Vec<NodeId>, PlanError> {
        let it = self.ty(inst.operands[1]).clone();
        let axis = self.attrs(inst).index("axis")?;
        let wc = self.clamp(w, 0, it.num_elements() as i128 - 1);
        Ok(self.updates_at(out, axis, wc, &it.shape))
    }

    /// Coordinates in `%updates` of the update at (clamped) position `r` of
    /// the index array (of shape `ishape`) for output coordinates `out`.
    fn updates_at(&mut self, out: &[NodeId], axis: usize, r: NodeId, ishape: &[u64]) -> Vec<NodeId> {
        let ic = self.delinearize(r, ishape);
        let mut uc = out[..axis].to_vec();
        uc.extend_from_slice(&ic);
        uc.extend_from_slice(&out[axis + 1..]);
        uc
    }

    /// `scatter` of a combining kind as, per output element, the reduction
    /// `kind` over every update landing there and (reduction point `|idx|`)
    /// the base element.
    fn scatter_combine(&mut self, inst: &InstData, out: &[NodeId], kind: ReduceKind) -> Result<Built, PlanError> {
        let (base, upd) = (inst.operands[0], inst.operands[2]);
        let d = self.ty(base).dtype;
        let ni = self.ty(inst.operands[1]).num_elements();
        let basev = self.value(base, out)?;
        if ni == 0 {
            return Ok((basev, None));
        }
        let ct = compute_type(d);
        let (r, uc, hit) = self.scatter_point(inst, out)?;
        let uv = self.value(upd, &uc)?;
        let idn = self.identity(kind, d);
        let val = self.push(Node::Select { cond: hit, a: uv, b: idn }, ct);
        let last = self.int(ni as i128);
        let is_base = self.push(Node::Compare { dir: CmpDir::Eq, a: r, b: last }, DType::Pred);
        let body = self.push(Node::Select { cond: is_base, a: basev, b: val }, ct);
        Ok((body, Some(Reduction { shape: vec![ni + 1], kind, acc: accumulator(d, kind) })))
    }
}
