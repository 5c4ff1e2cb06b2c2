//! Generated-kernel forms of the ops that are not one fused loop kernel:
//!
//! - **Several kernels** (`Fusion::MultiKernel`), on every backend:
//!   `argmax`/`argmin` (the extreme along the dimension, then the first index
//!   holding it) and `select_and_scatter_add` (each window's maximum, the
//!   operand position it selects, then per operand element the sum of the
//!   source elements whose window selected it). Their operands are stored, so
//!   every kernel reads bitwise the same values and the equality tests that
//!   find the extreme cannot miss.
//! - **Device kernels** of library steps (`dot_general`, `convolution`;
//!   scatters in `scatter.rs`, sort and top_k in `sort.rs`): the same
//!   computation as generated kernels, run where no library routine takes the
//!   step (see `pjc_host::device`). They are direct loops (a product or
//!   convolution as a sum over its contraction): correct and deterministic,
//!   not fast.
//!
//! Semantics are spec section 11's: floats compute in f32 (f16/bf16 too) or
//! f64 and accumulate in at least f32; NaN counts as the extreme; ties go to
//! the first index in row-major order; padding is never selected;
//! out-of-range scatter indices are dropped.

use super::{accumulator, Body, Built, PlanError, Planner};
use pjc_ir::{Attrs, BinaryOp, DType, InstData, Opcode, TensorType, Value};
use pjc_plan::kernel::{compute_type, BufferArg, CmpDir, IndexOp, Kernel, Node, NodeId, ReduceKind, Reduction};
use pjc_plan::{BufferKind, Step};

impl<'a> Planner<'a> {
    pub(super) fn ty_of(&self, v: Value) -> TensorType {
        self.f.values[v].ty.clone()
    }

    pub(super) fn attrs_of<'i>(&self, inst: &'i InstData) -> Attrs<'i> {
        let tys: Vec<&TensorType> = inst.operands.iter().map(|&o| &self.f.values[o].ty).collect();
        Attrs::new(inst, &tys)
    }

    /// The device kernels of library step `inst` writing `outputs` (one
    /// buffer per result), in order; none for an op without them.
    pub(super) fn device_kernels(&mut self, inst: &InstData, outputs: &[usize]) -> Result<Vec<Kernel>, PlanError> {
        let v = inst.results[0];
        let ty = self.ty_of(v);
        let out = BufferArg { buffer: outputs[0], dtype: ty.dtype };
        let name = self.kernel_name(v, "_device");
        let k = match inst.op {
            Opcode::DotGeneral => self.build(name, &ty.shape, out, v, |b, c| b.dot_general(inst, c))?,
            Opcode::Convolution => self.build(name, &ty.shape, out, v, |b, c| b.convolution(inst, c))?,
            Opcode::ScatterAdd | Opcode::Scatter => return self.scatter_device(inst, outputs[0]),
            Opcode::Sort | Opcode::TopK => return self.ranked_device(inst, outputs),
            _ => return Ok(vec![]),
        };
        Ok(vec![k])
    }

    /// A library step's instruction and input buffers. A `dot_general`
    /// operand whose free dimensions or contracting dimensions do not lie as
    /// one strided dimension (GEMM reads a matrix with one row and one column
    /// stride) is first copied by a transpose kernel into (batch, free,
    /// contracting) order for the lhs, (batch, contracting, free) for the rhs,
    /// and the step's dimension numbers name the copy's dimensions; the result
    /// is unchanged (batch, lhs free, rhs free, each in order). So every f32,
    /// f64, bf16 and f16 product runs as strided GEMM in place on the CPU and
    /// through cuBLAS on GPUs.
    pub(super) fn library_operands(&mut self, inst: &InstData) -> Result<(InstData, Vec<usize>), PlanError> {
        let mut inputs: Vec<usize> = inst.operands.iter().map(|o| self.buffer_of[o]).collect();
        let mut lib = inst.detached();
        if inst.op != Opcode::DotGeneral {
            return Ok((lib, inputs));
        }
        let v = inst.results[0];
        let a = self.attrs_of(inst);
        let (lb, rb, lc, rc) = (a.indices("lhs_batch")?, a.indices("rhs_batch")?, a.indices("lhs_contract")?, a.indices("rhs_contract")?);
        let mut names = [("lhs_batch", lb.clone()), ("rhs_batch", rb.clone()), ("lhs_contract", lc.clone()), ("rhs_contract", rc.clone())];
        for (side, batch, contract) in [(0usize, &lb, &lc), (1, &rb, &rc)] {
            let x = inst.operands[side];
            let t = self.ty_of(x);
            let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
            let free: Vec<usize> = (0..shape.len()).filter(|d| !batch.contains(d) && !contract.contains(d)).collect();
            let (rows, cols) = if side == 0 { (&free, contract) } else { (contract, &free) };
            let Some(perm) = pjc_tensor::gemm_order(&shape, batch, rows, cols) else { continue };
            let pty = TensorType::new(t.dtype, perm.iter().map(|&d| t.shape[d]).collect());
            let what = if side == 0 { "lhs_t" } else { "rhs_t" };
            inputs[side] = self.stage(v, what, pty, |b, c| {
                let mut ic = vec![0; perm.len()];
                for (i, &d) in perm.iter().enumerate() {
                    ic[d] = c[i];
                }
                Ok((b.value(x, &ic)?, None))
            })?;
            let (nb, nr, nc) = (batch.len(), rows.len(), cols.len());
            names[side].1 = (0..nb).collect();
            names[2 + side].1 = if side == 0 { (nb + nr..nb + nr + nc).collect() } else { (nb..nb + nr).collect() };
        }
        lib.attrs.retain(|at| !names.iter().any(|(n, _)| at.name == *n));
        for (n, dims) in names {
            if !dims.is_empty() {
                lib.set_attr(n, pjc_ir::AttrValue::int_list(&dims.iter().map(|&d| d as i64).collect::<Vec<_>>()));
            }
        }
        Ok((lib, inputs))
    }

    /// Pushes the kernels of a `Fusion::MultiKernel` op.
    pub(super) fn multi_kernel(&mut self, inst: &InstData) -> Result<(), PlanError> {
        match inst.op {
            Opcode::Argmax | Opcode::Argmin => self.arg_extreme(inst),
            Opcode::SelectAndScatterAdd => self.select_and_scatter_add(inst),
            op => Err(PlanError(format!("internal error: '{op}' has no multi-kernel form"))),
        }
    }

    /// A kernel writing a temporary of type `ty` (named after `v` and
    /// `what`), pushed as the next step.
    fn stage(
        &mut self,
        v: Value,
        what: &str,
        ty: TensorType,
        build: impl FnOnce(&mut Body, &[NodeId]) -> Result<Built, PlanError>,
    ) -> Result<usize, PlanError> {
        let (buffer, k) = self.temp_kernel(v, what, ty, build)?;
        self.steps.push(Step::Kernel(k));
        Ok(buffer)
    }

    /// A new temporary of type `ty` (named after `v` and `what`) and the
    /// kernel that writes it (for the caller to place: a step, or one of a
    /// library step's device kernels).
    pub(super) fn temp_kernel(
        &mut self,
        v: Value,
        what: &str,
        ty: TensorType,
        build: impl FnOnce(&mut Body, &[NodeId]) -> Result<Built, PlanError>,
    ) -> Result<(usize, Kernel), PlanError> {
        let name = format!("{}_{what}", self.f.values[v].name);
        let shape = ty.shape.clone();
        let dtype = ty.dtype;
        let buffer = self.temp_buffer(&name, ty, BufferKind::Temp);
        let k = self.build(self.kernel_name(v, &format!("_{what}")), &shape, BufferArg { buffer, dtype }, v, build)?;
        Ok((buffer, k))
    }

    /// `argmax`/`argmin`: kernel 1 reduces the operand to its extreme along
    /// `dim` (NaN propagates, so a NaN is the extreme); kernel 2 takes the
    /// smallest index whose element equals it (or is NaN when it is NaN).
    fn arg_extreme(&mut self, inst: &InstData) -> Result<(), PlanError> {
        let v = inst.results[0];
        let out = self.ty_of(v);
        let x = inst.operands[0];
        let xt = self.ty_of(x);
        let dim = self.attrs_of(inst).index("dim")?;
        let n = xt.shape[dim];
        if n == 0 {
            // No elements along dim: every index is 0, as the reference gives.
            return self.finish(v, |b, _| Ok((b.push(Node::ConstInt(0, out.dtype), out.dtype), None)));
        }
        let kind = if inst.op == Opcode::Argmax { ReduceKind::Max } else { ReduceKind::Min };
        let along = |b: &mut Body, c: &[NodeId]| -> Vec<NodeId> {
            let r = b.push(Node::Coord(c.len()), DType::I64);
            let mut xc = c.to_vec();
            xc.insert(dim, r);
            xc
        };
        let ext_ty = TensorType::new(xt.dtype, out.shape.clone());
        let ext = self.stage(v, "extreme", ext_ty, |b, c| {
            let xc = along(b, c);
            let xv = b.value(x, &xc)?;
            Ok((xv, Some(Reduction { shape: vec![n], kind, acc: accumulator(xt.dtype, kind) })))
        })?;
        let oshape = out.shape.clone();
        self.finish(v, |b, c| {
            let xc = along(b, c);
            let xv = b.value(x, &xc)?;
            let lin = b.linear(c, &oshape);
            let e = b.load_buffer(ext, xt.dtype, lin);
            let hit = b.same(xv, e, xt.dtype);
            let idx = b.push(Node::Convert { x: xc[dim], to: out.dtype }, out.dtype);
            let none = b.push(Node::ConstInt(n as i128, out.dtype), out.dtype);
            let pick = b.push(Node::Select { cond: hit, a: idx, b: none }, out.dtype);
            Ok((pick, Some(Reduction { shape: vec![n], kind: ReduceKind::Min, acc: out.dtype })))
        })
    }

    /// `select_and_scatter_add %source, %operand`: kernel 1 takes each
    /// window's maximum over its valid (unpadded) positions, kernel 2 the
    /// first valid position (row-major, so the smallest linear operand index)
    /// holding it, kernel 3 for each operand element the sum over the windows
    /// that contain it of the source elements whose window selected it.
    fn select_and_scatter_add(&mut self, inst: &InstData) -> Result<(), PlanError> {
        let v = inst.results[0];
        let (src, x) = (inst.operands[0], inst.operands[1]);
        let (st, xt) = (self.ty_of(src), self.ty_of(x));
        let a = self.attrs_of(inst);
        let (window, strides, padding) = (a.ints("window")?, a.ints("strides")?, a.pairs("padding")?);
        let rank = xt.rank();
        let wshape: Vec<u64> = window.iter().map(|&w| w as u64).collect();
        let d = xt.dtype;
        let ct = compute_type(d);
        if st.num_elements() == 0 || xt.num_elements() == 0 {
            return self.finish(v, |b, _| Ok((b.zero(ct), None)));
        }
        let geo = (xt.shape.clone(), strides.clone(), padding.clone());
        let max_ty = TensorType::new(d, st.shape.clone());
        let maxb = self.stage(v, "window_max", max_ty, |b, c| {
            let (pos, valid) = b.window_position(c, &geo.0, &geo.1, &geo.2);
            let xv = b.value(x, &pos)?;
            let idn = b.identity(ReduceKind::Max, d);
            let m = b.push(Node::Select { cond: valid, a: xv, b: idn }, ct);
            Ok((m, Some(Reduction { shape: wshape.clone(), kind: ReduceKind::Max, acc: accumulator(d, ReduceKind::Max) })))
        })?;
        let sel_ty = TensorType::new(DType::I64, st.shape.clone());
        let (sshape, xshape) = (st.shape.clone(), xt.shape.clone());
        let selb = self.stage(v, "selected", sel_ty, |b, c| {
            let (pos, valid) = b.window_position(c, &geo.0, &geo.1, &geo.2);
            let xv = b.value(x, &pos)?;
            let lin = b.linear(c, &sshape);
            let m = b.load_buffer(maxb, d, lin);
            let same = b.same(xv, m, d);
            let hit = b.push(Node::Binary { op: BinaryOp::And, a: valid, b: same }, DType::Pred);
            let at = b.linear(&pos, &xshape);
            let none = b.int(xt.num_elements() as i128);
            let pick = b.push(Node::Select { cond: hit, a: at, b: none }, DType::I64);
            Ok((pick, Some(Reduction { shape: wshape.clone(), kind: ReduceKind::Min, acc: DType::I64 })))
        })?;
        self.finish(v, |b, c| {
            // Tap t of window w reads operand position w * stride + t - lo, so
            // position p is tap t of window (p + lo - t) / stride when that
            // divides and lies in range.
            let mut wc = vec![];
            let mut ok: Option<NodeId> = None;
            for k in 0..rank {
                let t = b.push(Node::Coord(rank + k), DType::I64);
                let lo = b.int(padding[k].0 as i128);
                let q = b.ix(IndexOp::Add, c[k], lo);
                let q = b.ix(IndexOp::Sub, q, t);
                let s = b.int(strides[k] as i128);
                let w = b.ix(IndexOp::Div, q, s);
                let r = b.ix(IndexOp::Rem, q, s);
                let inside = b.in_range(w, sshape[k]);
                let one = b.int(1);
                let bad_r = b.ix(IndexOp::Min, r, one);
                let ok_r = b.ix(IndexOp::Sub, one, bad_r);
                let f = b.ix(IndexOp::Mul, inside, ok_r);
                ok = b.and_flag(ok, f);
                wc.push(b.clamp(w, 0, sshape[k] as i128 - 1));
            }
            let wl = b.linear(&wc, &sshape);
            let sel = b.load_buffer(selb, DType::I64, wl);
            let me = b.linear(c, &xshape);
            let mine = b.push(Node::Compare { dir: CmpDir::Eq, a: sel, b: me }, DType::Pred);
            let hit = match ok {
                None => mine,
                Some(f) => {
                    let valid = b.flag(f);
                    b.push(Node::Binary { op: BinaryOp::And, a: valid, b: mine }, DType::Pred)
                }
            };
            let sv = b.value(src, &wc)?;
            let zero = b.zero(ct);
            let val = b.push(Node::Select { cond: hit, a: sv, b: zero }, ct);
            Ok((val, Some(Reduction { shape: wshape.clone(), kind: ReduceKind::Sum, acc: accumulator(d, ReduceKind::Sum) })))
        })
    }
}

impl<'a> Body<'a> {
    /// 0 of compute type `ct`.
    pub(super) fn zero(&mut self, ct: DType) -> NodeId {
        if ct.is_float() {
            self.push(Node::ConstFloat(0.0, ct), ct)
        } else {
            self.push(Node::ConstInt(0, ct), ct)
        }
    }

    /// An i64 0/1 flag as pred.
    pub(super) fn flag(&mut self, f: NodeId) -> NodeId {
        let one = self.int(1);
        self.push(Node::Compare { dir: CmpDir::Eq, a: f, b: one }, DType::Pred)
    }

    /// `x` is the extreme `e` (of storage dtype `d`): equal, or both NaN.
    fn same(&mut self, x: NodeId, e: NodeId, d: DType) -> NodeId {
        let eq = self.push(Node::Compare { dir: CmpDir::Eq, a: x, b: e }, DType::Pred);
        if !d.is_float() {
            return eq;
        }
        let xn = self.push(Node::Compare { dir: CmpDir::Ne, a: x, b: x }, DType::Pred);
        let en = self.push(Node::Compare { dir: CmpDir::Ne, a: e, b: e }, DType::Pred);
        let both = self.push(Node::Binary { op: BinaryOp::And, a: xn, b: en }, DType::Pred);
        self.push(Node::Binary { op: BinaryOp::Or, a: eq, b: both }, DType::Pred)
    }

    /// The identity of reduction `kind` over values of dtype `d`.
    pub(super) fn identity(&mut self, kind: ReduceKind, d: DType) -> NodeId {
        let ct = compute_type(d);
        let n = match (kind, ct.is_float()) {
            _ if d.is_pred() => Node::ConstBool(matches!(kind, ReduceKind::Prod | ReduceKind::Min | ReduceKind::And)),
            (ReduceKind::Max, true) => Node::ConstFloat(f64::NEG_INFINITY, ct),
            (ReduceKind::Min, true) => Node::ConstFloat(f64::INFINITY, ct),
            (ReduceKind::Prod, true) => Node::ConstFloat(1.0, ct),
            (ReduceKind::Max, false) => Node::ConstInt(d.int_range().map_or(0, |r| r.0), ct),
            (ReduceKind::Min, false) => Node::ConstInt(d.int_range().map_or(0, |r| r.1), ct),
            (ReduceKind::Prod, false) => Node::ConstInt(1, ct),
            (ReduceKind::And, false) => Node::ConstInt(-1, ct),
            (_, true) => Node::ConstFloat(0.0, ct),
            _ => Node::ConstInt(0, ct),
        };
        self.push(n, ct)
    }

    /// The operand position window `out` reads at tap coordinates
    /// `out.len()..` (clamped into range), and whether it is a real element
    /// rather than padding (pred).
    pub(super) fn window_position(&mut self, out: &[NodeId], src: &[u64], strides: &[i64], padding: &[(i64, i64)]) -> (Vec<NodeId>, NodeId) {
        let rank = src.len();
        let mut c = vec![];
        let mut valid: Option<NodeId> = None;
        for d in 0..rank {
            let w = self.push(Node::Coord(rank + d), DType::I64);
            let s = self.int(strides[d] as i128);
            let base = self.ix(IndexOp::Mul, out[d], s);
            let lo = self.int(padding[d].0 as i128);
            let pos = self.ix(IndexOp::Add, base, w);
            let pos = self.ix(IndexOp::Sub, pos, lo);
            let ok = self.in_range(pos, src[d]);
            valid = self.and_flag(valid, ok);
            c.push(self.clamp(pos, 0, src[d] as i128 - 1));
        }
        let valid = match valid {
            Some(f) => self.flag(f),
            None => self.push(Node::ConstBool(true), DType::Pred),
        };
        (c, valid)
    }

    /// `v` at `coords`, converted to compute type `ct`.
    fn value_as(&mut self, v: Value, coords: &[NodeId], ct: DType) -> Result<NodeId, PlanError> {
        let x = self.value(v, coords)?;
        Ok(if compute_type(self.ty(v).dtype) == ct { x } else { self.push(Node::Convert { x, to: ct }, ct) })
    }

    /// `dot_general` as a sum over the contracting dimensions. Result
    /// coordinates are batch, lhs free, rhs free (spec section 7).
    fn dot_general(&mut self, inst: &InstData, out: &[NodeId]) -> Result<Built, PlanError> {
        let (l, r) = (inst.operands[0], inst.operands[1]);
        let (lt, rt) = (self.ty(l).clone(), self.ty(r).clone());
        let res = self.ty(inst.results[0]).clone();
        let a = self.attrs(inst);
        let (lb, rb, lc, rc) = (a.indices("lhs_batch")?, a.indices("rhs_batch")?, a.indices("lhs_contract")?, a.indices("rhs_contract")?);
        let nb = lb.len();
        let lfree: Vec<usize> = (0..lt.rank()).filter(|d| !lb.contains(d) && !lc.contains(d)).collect();
        let rfree: Vec<usize> = (0..rt.rank()).filter(|d| !rb.contains(d) && !rc.contains(d)).collect();
        let kc: Vec<NodeId> = (0..lc.len()).map(|j| self.push(Node::Coord(out.len() + j), DType::I64)).collect();
        let mut lcs = vec![0; lt.rank()];
        let mut rcs = vec![0; rt.rank()];
        for (i, (&x, &y)) in lb.iter().zip(&rb).enumerate() {
            lcs[x] = out[i];
            rcs[y] = out[i];
        }
        for (j, (&x, &y)) in lc.iter().zip(&rc).enumerate() {
            lcs[x] = kc[j];
            rcs[y] = kc[j];
        }
        for (k, &x) in lfree.iter().enumerate() {
            lcs[x] = out[nb + k];
        }
        for (k, &y) in rfree.iter().enumerate() {
            rcs[y] = out[nb + lfree.len() + k];
        }
        let ct = compute_type(res.dtype);
        let av = self.value_as(l, &lcs, ct)?;
        let bv = self.value_as(r, &rcs, ct)?;
        let prod = self.push(Node::Binary { op: BinaryOp::Mul, a: av, b: bv }, ct);
        if lc.is_empty() {
            return Ok((prod, None));
        }
        let shape = lc.iter().map(|&d| lt.shape[d]).collect();
        Ok((prod, Some(Reduction { shape, kind: ReduceKind::Sum, acc: accumulator(res.dtype, ReduceKind::Sum) })))
    }

    /// `convolution` as a sum over (kernel input feature, kernel taps), with
    /// padding and input-dilation holes as zeros that still meet the kernel
    /// (so an infinite kernel value gives NaN, as the reference does).
    fn convolution(&mut self, inst: &InstData, out: &[NodeId]) -> Result<Built, PlanError> {
        let (x, k) = (inst.operands[0], inst.operands[1]);
        let (xt, kt) = (self.ty(x).clone(), self.ty(k).clone());
        let res = self.ty(inst.results[0]).clone();
        let a = self.attrs(inst);
        let dims = pjc_tensor::parse_conv_dims(&a.string("dims")?, xt.rank()).map_err(PlanError)?;
        let us = |t: &TensorType| t.shape.iter().map(|&d| d as usize).collect::<Vec<_>>();
        let g = pjc_tensor::conv_geometry(
            &us(&xt),
            &us(&kt),
            &dims,
            &a.indices("window_strides")?,
            &a.pairs("padding")?,
            &a.indices("lhs_dilation")?,
            &a.indices("rhs_dilation")?,
            a.index("feature_group_count")?,
            a.index("batch_group_count")?,
        )
        .map_err(PlanError)?;
        let n = g.in_sp.len();
        let ci = self.push(Node::Coord(out.len()), DType::I64);
        let taps: Vec<NodeId> = (0..n).map(|d| self.push(Node::Coord(out.len() + 1 + d), DType::I64)).collect();
        let (ob, o) = (out[dims.output_batch], out[dims.output_feature]);
        let og = (g.cout / (g.fgc * g.bgc)).max(1);
        let ogn = self.int(og as i128);
        let gi = self.ix(IndexOp::Div, o, ogn);
        let ib = if g.bgc > 1 {
            let nb = self.int(g.out_batch as i128);
            let base = self.ix(IndexOp::Mul, gi, nb);
            self.ix(IndexOp::Add, base, ob)
        } else {
            ob
        };
        let ch = if g.fgc > 1 {
            let c = self.int(g.cin_k as i128);
            let base = self.ix(IndexOp::Mul, gi, c);
            self.ix(IndexOp::Add, base, ci)
        } else {
            ci
        };
        let mut xc = vec![0; n + 2];
        xc[dims.input_batch] = ib;
        xc[dims.input_feature] = ch;
        let mut ok: Option<NodeId> = None;
        for d in 0..n {
            // Position in the padded, dilated input, then in the input.
            let s = self.int(g.strides[d] as i128);
            let base = self.ix(IndexOp::Mul, out[dims.output_spatial[d]], s);
            let rd = self.int(g.rhs_dil[d] as i128);
            let off = self.ix(IndexOp::Mul, taps[d], rd);
            let q = self.ix(IndexOp::Add, base, off);
            let lo = self.int(g.padding[d].0 as i128);
            let q = self.ix(IndexOp::Sub, q, lo);
            let ld = self.int(g.lhs_dil[d] as i128);
            let p = self.ix(IndexOp::Div, q, ld);
            let r = self.ix(IndexOp::Rem, q, ld);
            let inside = self.in_range(p, g.in_sp[d] as u64);
            let one = self.int(1);
            let bad_r = self.ix(IndexOp::Min, r, one);
            let ok_r = self.ix(IndexOp::Sub, one, bad_r);
            let f = self.ix(IndexOp::Mul, inside, ok_r);
            ok = self.and_flag(ok, f);
            xc[dims.input_spatial[d]] = self.clamp(p, 0, g.in_sp[d] as i128 - 1);
        }
        let ct = compute_type(res.dtype);
        let zero = self.zero(ct);
        let xv = if xt.num_elements() == 0 {
            zero
        } else {
            let xv = self.value_as(x, &xc, ct)?;
            match ok {
                None => xv,
                Some(f) => {
                    let valid = self.flag(f);
                    self.push(Node::Select { cond: valid, a: xv, b: zero }, ct)
                }
            }
        };
        let mut kc = vec![0; n + 2];
        kc[dims.kernel_input_feature] = ci;
        kc[dims.kernel_output_feature] = o;
        for d in 0..n {
            kc[dims.kernel_spatial[d]] = taps[d];
        }
        let kv = self.value_as(k, &kc, ct)?;
        let prod = self.push(Node::Binary { op: BinaryOp::Mul, a: xv, b: kv }, ct);
        let mut shape = vec![g.cin_k as u64];
        shape.extend(g.k_sp.iter().map(|&s| s as u64));
        Ok((prod, Some(Reduction { shape, kind: ReduceKind::Sum, acc: accumulator(res.dtype, ReduceKind::Sum) })))
    }
}
