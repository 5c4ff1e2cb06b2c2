//! One batching rule per op of spec sections 7–8 (and `call`): given an
//! instruction of the mapped function whose operands are batched (at least one
//! of them), emit ordinary PIR computing it for every example and say where the
//! result's batch dimension is.
//!
//! Conventions: `k` is an operand's batch dimension; a dimension attribute `d`
//! of the unbatched op becomes `shift(d, k)` = `d + (d >= k)` in the batched one.

use super::emit::{ints, with_axis};
use super::{attrs_of, batched_type, Batcher, Bv, R, UNROLL_LIMIT};
use pjc_ir::attrs::resolved_attr;
use pjc_ir::infer::parse_conv_labels;
use pjc_ir::{AttrValue, DType, FuncKind, Function, InstData, Opcode, TensorType, Value};

/// Dimension `d` of an unbatched array, in the array batched at `k`.
fn shift(d: usize, k: usize) -> usize {
    d + usize::from(d >= k)
}

/// Read-only view of the instruction being batched: its attributes with defaults
/// resolved against the original operand types.
struct Orig<'f> {
    f: &'f Function,
    inst: &'f InstData,
    types: Vec<&'f TensorType>,
}

impl Orig<'_> {
    fn attr(&self, cx: &Batcher, name: &str) -> R<AttrValue> {
        resolved_attr(self.inst, name, &self.types)
            .ok_or_else(|| cx.internal(format!("'{}' without attribute '{name}'", self.inst.op)))
    }
    fn int(&self, cx: &Batcher, name: &str) -> R<i64> {
        self.attr(cx, name)?.as_int().ok_or_else(|| cx.internal(format!("'{name}' is not an integer")))
    }
    fn ints(&self, cx: &Batcher, name: &str) -> R<Vec<i64>> {
        self.attr(cx, name)?.as_ints().ok_or_else(|| cx.internal(format!("'{name}' is not an integer list")))
    }
    fn dims(&self, cx: &Batcher, name: &str) -> R<Vec<usize>> {
        Ok(self.ints(cx, name)?.into_iter().map(|i| i as usize).collect())
    }
    fn pairs(&self, cx: &Batcher, name: &str) -> R<Vec<AttrValue>> {
        match self.attr(cx, name)? {
            AttrValue::List(l) => Ok(l),
            _ => Err(cx.internal(format!("'{name}' is not a list"))),
        }
    }
    /// The (single) result's type in the mapped function.
    fn out(&self) -> &TensorType {
        &self.f.values[self.inst.results[0]].ty
    }
    fn name(&self) -> &str {
        self.inst.results.first().map_or("v", |&r| self.f.values[r].name.as_str())
    }
}

impl Batcher<'_, '_> {
    /// Batches one instruction with at least one batched operand.
    pub(crate) fn rule(&mut self, f: &Function, inst: &InstData, ops: &[Bv]) -> R<Vec<Bv>> {
        use Opcode::*;
        let o = Orig { f, inst, types: inst.operands.iter().map(|&v| f.ty(v)).collect() };
        let name = o.name().to_string();
        let name = name.as_str();
        let def = inst.op.def();
        let one = |v: Value, bd: usize| Ok(vec![Bv { v, bd: Some(bd) }]);
        // The first batched operand's batch dimension: where results keep it.
        let k0 = ops.iter().find_map(|x| x.bd).unwrap_or(0);
        match inst.op {
            Call => self.call(f, inst, ops),
            Grad | Vmap => Err(self.unsupported(inst.op, "that was not expanded first")),
            Constant | Iota | AxisIndex => self.copy(f, inst, ops),
            Clamp | Select => {
                let v = self.with_scalars(&o, ops)?;
                Ok(vec![v])
            }
            _ if def.elementwise => {
                let mut vals = vec![];
                for &x in ops {
                    vals.push(self.materialize(x, k0, name)?);
                }
                let w = batched_type(o.out(), k0, self.size);
                let v = self.emit(inst.op, &vals, attrs_of(inst), Some(w), name)?;
                one(v, k0)
            }
            Broadcast => {
                let k = k0;
                let dims = o.dims(self, "dims")?;
                let nd: Vec<usize> =
                    (0..=dims.len()).map(|j| if j == k { 0 } else { dims[j - usize::from(j > k)] + 1 }).collect();
                let w = batched_type(o.out(), 0, self.size);
                let v = self.emit(Broadcast, &[ops[0].v], vec![("dims", ints(&nd))], Some(w), name)?;
                one(v, 0)
            }
            Reshape => {
                let x = self.moveaxis(ops[0].v, k0, 0, name)?;
                let w = batched_type(o.out(), 0, self.size);
                let v = self.reshape(x, w.shape, name)?;
                one(v, 0)
            }
            Transpose => {
                let k = k0;
                let mut perm = vec![k];
                perm.extend(o.dims(self, "perm")?.into_iter().map(|p| shift(p, k)));
                let v = self.transpose(ops[0].v, &perm, name)?;
                one(v, 0)
            }
            Slice => {
                let k = k0;
                let mut start = o.dims(self, "start")?;
                let mut limit = o.dims(self, "limit")?;
                let mut stride = o.dims(self, "stride")?;
                start.insert(k, 0);
                limit.insert(k, self.size as usize);
                stride.insert(k, 1);
                let attrs = vec![("start", ints(&start)), ("limit", ints(&limit)), ("stride", ints(&stride))];
                let v = self.emit(Slice, &[ops[0].v], attrs, None, name)?;
                one(v, k)
            }
            Concat => {
                let dim = shift(o.int(self, "dim")? as usize, k0);
                let mut vals = vec![];
                for &x in ops {
                    vals.push(self.materialize(x, k0, name)?);
                }
                let v = self.emit(Concat, &vals, vec![("dim", AttrValue::Int(dim as i64))], None, name)?;
                one(v, k0)
            }
            Reverse => {
                let dims: Vec<usize> = o.dims(self, "dims")?.into_iter().map(|d| shift(d, k0)).collect();
                let v = self.emit(Reverse, &[ops[0].v], vec![("dims", ints(&dims))], None, name)?;
                one(v, k0)
            }
            Pad => self.pad(&o, ops).map(|v| vec![v]),
            DynamicSlice => self.dynamic_slice(&o, ops).map(|v| vec![v]),
            DynamicUpdateSlice => self.dynamic_update_slice(&o, ops).map(|v| vec![v]),
            Reduce => {
                let k = k0;
                let dims: Vec<usize> = o.dims(self, "dims")?.into_iter().map(|d| shift(d, k)).collect();
                let kind = o.attr(self, "kind")?;
                let v = self.emit(Reduce, &[ops[0].v], vec![("dims", ints(&dims)), ("kind", kind)], None, name)?;
                one(v, k - dims.iter().filter(|&&d| d < k).count())
            }
            Argmax | Argmin => {
                let k = k0;
                let dim = shift(o.int(self, "dim")? as usize, k);
                let bd = k - usize::from(dim < k);
                let w = batched_type(o.out(), bd, self.size);
                let v = self.emit(inst.op, &[ops[0].v], vec![("dim", AttrValue::Int(dim as i64))], Some(w), name)?;
                one(v, bd)
            }
            DotGeneral => self.dot_general(&o, ops).map(|v| vec![v]),
            Convolution => self.convolution(&o, ops).map(|v| vec![v]),
            ReduceWindow | SelectAndScatterAdd => {
                let k = k0;
                let mut vals = vec![];
                for &x in ops {
                    vals.push(self.materialize(x, k, name)?);
                }
                let mut attrs = vec![];
                if inst.op == ReduceWindow {
                    attrs.push(("kind", o.attr(self, "kind")?));
                }
                let mut window = o.dims(self, "window")?;
                let mut strides = o.dims(self, "strides")?;
                let mut padding = o.pairs(self, "padding")?;
                window.insert(k, 1);
                strides.insert(k, 1);
                padding.insert(k, AttrValue::int_list(&[0, 0]));
                attrs.push(("window", ints(&window)));
                attrs.push(("strides", ints(&strides)));
                attrs.push(("padding", AttrValue::List(padding)));
                let v = self.emit(inst.op, &vals, attrs, None, name)?;
                one(v, k)
            }
            Gather => self.gather(&o, ops).map(|v| vec![v]),
            ScatterAdd | Scatter => self.scatter(&o, ops).map(|v| vec![v]),
            Sort => {
                let k = k0;
                let mut vals = vec![];
                for &x in ops {
                    vals.push(self.materialize(x, k, name)?);
                }
                let mut attrs = attrs_of(inst);
                for (n, v) in attrs.iter_mut() {
                    if *n == "dim" {
                        *v = AttrValue::Int(shift(o.int(self, "dim")? as usize, k) as i64);
                    }
                }
                let rs = self.emit_multi(Sort, &vals, attrs, &[], None, name)?;
                Ok(rs.into_iter().map(|v| Bv { v, bd: Some(k) }).collect())
            }
            TopK => {
                // Along the last dimension: the batch dimension must be another.
                let last = o.types[0].rank();
                let (x, k) = if k0 == last { (self.moveaxis(ops[0].v, k0, 0, name)?, 0) } else { (ops[0].v, k0) };
                let rs = self.emit_multi(TopK, &[x], attrs_of(inst), &[], None, name)?;
                Ok(rs.into_iter().map(|v| Bv { v, bd: Some(k) }).collect())
            }
            Scan => self.scan(f, inst, ops),
            Switch => self.switch(f, inst, ops),
            While => self.while_loop(f, inst, ops),
            AllReduce | CollectivePermute => {
                let v = self.emit(inst.op, &[ops[0].v], attrs_of(inst), None, name)?;
                one(v, k0)
            }
            AllGather | ReduceScatter | AllToAll => {
                let mut attrs = attrs_of(inst);
                for (n, v) in attrs.iter_mut() {
                    if matches!(*n, "dim" | "split_dim" | "concat_dim") {
                        let d = v.as_int().ok_or_else(|| self.internal(format!("'{n}' is not an integer")))?;
                        *v = AttrValue::Int(shift(d as usize, k0) as i64);
                    }
                }
                let v = self.emit(inst.op, &[ops[0].v], attrs, None, name)?;
                one(v, k0)
            }
            _ => Err(self.unsupported(inst.op, "has no batching rule")),
        }
    }

    /// `clamp` and `select`, whose bounds / predicate may be scalars while the
    /// data operands are arrays: an unbatched scalar stays a scalar, a batched
    /// one (a `[B]` vector) is broadcast to the batched data shape.
    fn with_scalars(&mut self, o: &Orig, ops: &[Bv]) -> R<Bv> {
        let name = o.name();
        let out = o.out().clone();
        let full = |i: usize| o.types[i].shape == out.shape;
        let k = ops.iter().enumerate().find_map(|(i, x)| if full(i) { x.bd } else { None }).unwrap_or(0);
        let w = batched_type(&out, k, self.size);
        let mut vals = vec![];
        for (i, &x) in ops.iter().enumerate() {
            vals.push(if full(i) {
                self.materialize(x, k, name)?
            } else {
                match x.bd {
                    None => x.v,
                    Some(_) => self.broadcast(x.v, &[k], w.shape.clone(), name)?,
                }
            });
        }
        let v = self.emit(o.inst.op, &vals, vec![], Some(w), name)?;
        Ok(Bv { v, bd: Some(k) })
    }

    /// `pad`. A batched padding value (one per example) is applied with a mask:
    /// pad with zero, then `select` the example's value where the mask (the
    /// same padding of `true` with `false`) is false.
    fn pad(&mut self, o: &Orig, ops: &[Bv]) -> R<Bv> {
        let name = o.name();
        let (x, pv) = (ops[0], ops[1]);
        let low = o.ints(self, "low")?;
        let high = o.ints(self, "high")?;
        let interior = o.ints(self, "interior")?;
        let cfg = |k: Option<usize>| {
            let (mut l, mut h, mut i) = (low.clone(), high.clone(), interior.clone());
            if let Some(k) = k {
                l.insert(k, 0);
                h.insert(k, 0);
                i.insert(k, 0);
            }
            vec![("low", AttrValue::int_list(&l)), ("high", AttrValue::int_list(&h)), ("interior", AttrValue::int_list(&i))]
        };
        if pv.bd.is_none() {
            let k = x.bd.unwrap_or(0);
            let v = self.emit(Opcode::Pad, &[x.v, pv.v], cfg(Some(k)), None, name)?;
            return Ok(Bv { v, bd: Some(k) });
        }
        let d = o.types[0].dtype;
        let k = x.bd.unwrap_or(0);
        let zero = self.splat(d, vec![], 0, name)?;
        let padded = match x.bd {
            Some(k) => self.emit(Opcode::Pad, &[x.v, zero], cfg(Some(k)), None, name)?,
            None => {
                let p = self.emit(Opcode::Pad, &[x.v, zero], cfg(None), None, name)?;
                self.add_batch(p, k, name)?
            }
        };
        let t = self.splat(DType::Pred, o.types[0].shape.clone(), 1, name)?;
        let f = self.splat(DType::Pred, vec![], 0, name)?;
        let mask = self.emit(Opcode::Pad, &[t, f], cfg(None), None, name)?;
        let mask = self.add_batch(mask, k, name)?;
        let w = batched_type(o.out(), k, self.size);
        let fill = self.broadcast(pv.v, &[k], w.shape, name)?;
        let v = self.select(mask, padded, fill, name)?;
        Ok(Bv { v, bd: Some(k) })
    }

    /// Start index operand `x` (an integer scalar, or `[B]` when batched) as
    /// i64 `[B]`, clamped into `[0, hi]`.
    fn start_vector(&mut self, x: Bv, hi: u64, name: &str) -> R<Value> {
        let v = match x.bd {
            Some(_) => x.v,
            None => self.add_batch(x.v, 0, name)?,
        };
        self.clamp_index(v, hi, name)
    }

    /// `dynamic_slice`. Unbatched starts: one more (zero) start for the batch
    /// dimension. Batched starts: per example, a gather of the clamped start plus
    /// `0..size` along each such dimension ([`Batcher::batched_take`]); the
    /// remaining dimensions are then sliced as before.
    fn dynamic_slice(&mut self, o: &Orig, ops: &[Bv]) -> R<Bv> {
        let name = o.name();
        let sizes = o.dims(self, "sizes")?;
        let x = ops[0];
        let starts = &ops[1..];
        if starts.iter().all(|s| s.bd.is_none()) {
            let k = x.bd.unwrap_or(0);
            let mut idx: Vec<Value> = starts.iter().map(|s| s.v).collect();
            idx.insert(k, self.splat(DType::I32, vec![], 0, name)?);
            let mut sz = sizes.clone();
            sz.insert(k, self.size as usize);
            let mut operands = vec![x.v];
            operands.extend(idx);
            let v = self.emit(Opcode::DynamicSlice, &operands, vec![("sizes", ints(&sz))], None, name)?;
            return Ok(Bv { v, bd: Some(k) });
        }
        let shape = o.types[0].shape.clone();
        let mut cur = x;
        let zero = self.splat(DType::I32, vec![], 0, name)?;
        let mut rest: Vec<Value> = vec![zero];
        for (d, s) in starts.iter().enumerate() {
            let (n, size) = (shape[d], sizes[d] as u64);
            if n == size {
                // The start is clamped to 0 whatever it is.
                rest.push(zero);
                continue;
            }
            if s.bd.is_none() {
                rest.push(s.v);
                continue;
            }
            let start = self.start_vector(*s, n - size, name)?;
            let pos = self.broadcast(start, &[0], vec![self.size, size], name)?;
            let ramp = self.iota(DType::I64, vec![self.size, size], 1, name)?;
            let pos = self.binary(Opcode::Add, pos, ramp, name)?;
            cur = Bv { v: self.take_along(cur, d, pos, name)?, bd: Some(0) };
            // Already cut to its size: the start below is clamped to 0.
            rest.push(zero);
        }
        let mut cur = self.materialize(cur, 0, name)?;
        let mut sz = vec![self.size as usize];
        sz.extend(&sizes);
        if self.ty(cur).shape.iter().map(|&d| d as usize).collect::<Vec<_>>() != sz {
            let mut operands = vec![cur];
            operands.extend(rest);
            cur = self.emit(Opcode::DynamicSlice, &operands, vec![("sizes", ints(&sz))], None, name)?;
        }
        Ok(Bv { v: cur, bd: Some(0) })
    }

    /// `dynamic_update_slice`. Unbatched starts: one more (zero) start for the
    /// batch dimension. Batched starts: the update is spread to the operand's
    /// shape per example by a gather along each dimension (position `p` takes
    /// update element `p - start`), and `select`ed in where `0 <= p - start <
    /// update size` in every dimension.
    fn dynamic_update_slice(&mut self, o: &Orig, ops: &[Bv]) -> R<Bv> {
        let name = o.name();
        let (x, u) = (ops[0], ops[1]);
        let starts = &ops[2..];
        if starts.iter().all(|s| s.bd.is_none()) {
            let k = x.bd.or(u.bd).unwrap_or(0);
            let xv = self.materialize(x, k, name)?;
            let uv = self.materialize(u, k, name)?;
            let mut operands = vec![xv, uv];
            operands.extend(starts.iter().map(|s| s.v));
            let z = self.splat(DType::I32, vec![], 0, name)?;
            operands.insert(2 + k, z);
            let v = self.emit(Opcode::DynamicUpdateSlice, &operands, vec![], None, name)?;
            return Ok(Bv { v, bd: Some(k) });
        }
        let xs = o.types[0].shape.clone();
        let us = o.types[1].shape.clone();
        let b = self.size;
        let xv = self.materialize(x, 0, name)?;
        let mut spread = u;
        let mut full_shape = vec![b];
        full_shape.extend(&xs);
        let mut mask: Option<Value> = None;
        for (d, s) in starts.iter().enumerate() {
            let (n, m) = (xs[d], us[d]);
            if n == m {
                continue;
            }
            let start = self.start_vector(*s, n - m, name)?;
            let start = self.broadcast(start, &[0], vec![b, n], name)?;
            let p = self.iota(DType::I64, vec![b, n], 1, name)?;
            let rel = self.binary(Opcode::Sub, p, start, name)?;
            let zero = self.splat(DType::I64, vec![b, n], 0, name)?;
            let size = self.splat(DType::I64, vec![b, n], m as i128, name)?;
            let ge = self.compare("ge", rel, zero, name)?;
            let lt = self.compare("lt", rel, size, name)?;
            let inside = self.binary(Opcode::And, ge, lt, name)?;
            let lo = self.splat(DType::I64, vec![], 0, name)?;
            let hi = self.splat(DType::I64, vec![], m as i128 - 1, name)?;
            let pos = self.emit(Opcode::Clamp, &[lo, rel, hi], vec![], None, name)?;
            spread = Bv { v: self.take_along(spread, d, pos, name)?, bd: Some(0) };
            let inside = self.broadcast(inside, &[0, d + 1], full_shape.clone(), name)?;
            mask = Some(match mask {
                Some(mk) => self.binary(Opcode::And, mk, inside, name)?,
                None => inside,
            });
        }
        let spread = self.materialize(spread, 0, name)?;
        let v = match mask {
            Some(mk) => self.select(mk, spread, xv, name)?,
            None => spread,
        };
        Ok(Bv { v, bd: Some(0) })
    }

    /// `dot_general`: both batched → a new batch dimension pair (result dim 0);
    /// one batched → its batch dimension is a free dimension, found in place
    /// among the result's free dimensions.
    fn dot_general(&mut self, o: &Orig, ops: &[Bv]) -> R<Bv> {
        let name = o.name();
        let (l, r) = (ops[0], ops[1]);
        let mut lb = o.dims(self, "lhs_batch")?;
        let mut rb = o.dims(self, "rhs_batch")?;
        let mut lc = o.dims(self, "lhs_contract")?;
        let mut rc = o.dims(self, "rhs_contract")?;
        let (lrank, rrank) = (o.types[0].rank(), o.types[1].rank());
        let shift_all = |v: &mut Vec<usize>, k: usize| v.iter_mut().for_each(|d| *d = shift(*d, k));
        if let Some(k) = l.bd {
            shift_all(&mut lb, k);
            shift_all(&mut lc, k);
        }
        if let Some(k) = r.bd {
            shift_all(&mut rb, k);
            shift_all(&mut rc, k);
        }
        let nb = lb.len();
        let bd = match (l.bd, r.bd) {
            (Some(kl), Some(kr)) => {
                lb.insert(0, kl);
                rb.insert(0, kr);
                0
            }
            (Some(kl), None) => {
                let free = (0..=lrank).filter(|d| !lb.contains(d) && !lc.contains(d));
                nb + free.take_while(|&d| d != kl).count()
            }
            (None, Some(kr)) => {
                let lfree = lrank - nb - lc.len();
                let free = (0..=rrank).filter(|d| !rb.contains(d) && !rc.contains(d));
                nb + lfree + free.take_while(|&d| d != kr).count()
            }
            (None, None) => return Err(self.internal("dot_general without a batched operand".into())),
        };
        let attrs = vec![
            ("lhs_batch", ints(&lb)),
            ("rhs_batch", ints(&rb)),
            ("lhs_contract", ints(&lc)),
            ("rhs_contract", ints(&rc)),
        ];
        let w = batched_type(o.out(), bd, self.size);
        let v = self.emit(Opcode::DotGeneral, &[l.v, r.v], attrs, Some(w), name)?;
        Ok(Bv { v, bd: Some(bd) })
    }

    /// `convolution`, as JAX's `_conv_general_dilated_batch_rule`: the batch is
    /// folded into an existing dimension so the dimension labels stay the same.
    /// Input only: into the input batch (respecting `batch_group_count`'s
    /// blocks). Kernel only: into the kernel output features (respecting the
    /// group blocks). Both: into input features and kernel output features with
    /// `feature_group_count` multiplied by the batch size (or into the input
    /// batch with `batch_group_count` multiplied, when that is > 1).
    fn convolution(&mut self, o: &Orig, ops: &[Bv]) -> R<Bv> {
        let name = o.name();
        let labels = match o.attr(self, "dims")? {
            AttrValue::Str(s) => parse_conv_labels(&s, o.types[0].rank()).map_err(|e| self.internal(e))?,
            _ => return Err(self.internal("convolution 'dims' is not a string".into())),
        };
        let (in_b, in_f) = (labels.in_batch, labels.in_feature);
        let k_out = labels.k_out;
        let (out_b, out_f) = (labels.out_batch, labels.out_feature);
        let mut fgc = o.int(self, "feature_group_count")? as u64;
        let mut bgc = o.int(self, "batch_group_count")? as u64;
        let b = self.size;
        let (lhs, rhs) = (ops[0], ops[1]);
        let conv = |cx: &mut Self, x: Value, k: Value, fgc: u64, bgc: u64| -> R<Value> {
            let mut attrs: Vec<(&str, AttrValue)> = attrs_of(o.inst)
                .into_iter()
                .filter(|(n, _)| !matches!(*n, "feature_group_count" | "batch_group_count"))
                .collect();
            attrs.push(("feature_group_count", AttrValue::Int(fgc as i64)));
            attrs.push(("batch_group_count", AttrValue::Int(bgc as i64)));
            // Only the result dtype of `written` matters to inference here.
            let w = TensorType::new(o.out().dtype, vec![]);
            cx.emit(Opcode::Convolution, &[x, k], attrs, Some(w), name)
        };
        let (v, bd) = match (lhs.bd, rhs.bd) {
            (Some(lb), Some(rb)) => {
                let new_lhs = if bgc > 1 {
                    let v = self.reshape_axis_into(lhs.v, lb, in_b, name)?;
                    bgc *= b;
                    v
                } else {
                    let v = self.reshape_axis_into(lhs.v, lb, in_f, name)?;
                    fgc *= b;
                    v
                };
                let new_rhs = self.reshape_axis_into(rhs.v, rb, k_out, name)?;
                let out = conv(self, new_lhs, new_rhs, fgc, bgc)?;
                (self.reshape_axis_out_of(out, out_f, b, name)?, out_f)
            }
            (Some(lb), None) => {
                let new_lhs = if bgc == 1 {
                    self.reshape_axis_into(lhs.v, lb, in_b, name)?
                } else {
                    let x = self.reshape_axis_out_of(lhs.v, in_b + usize::from(lb <= in_b), bgc, name)?;
                    let x = self.reshape_axis_into(x, lb + usize::from(in_b < lb), in_b + 1, name)?;
                    self.reshape_axis_into(x, in_b, in_b, name)?
                };
                let out = conv(self, new_lhs, rhs.v, fgc, bgc)?;
                (self.reshape_axis_out_of(out, out_b, b, name)?, out_b)
            }
            (None, Some(rb)) => {
                if fgc == 1 && bgc == 1 {
                    let new_rhs = self.reshape_axis_into(rhs.v, rb, k_out, name)?;
                    let out = conv(self, lhs.v, new_rhs, fgc, bgc)?;
                    (self.reshape_axis_out_of(out, out_f, b, name)?, out_f)
                } else {
                    let groups = if fgc > 1 { fgc } else { bgc };
                    let k = self.reshape_axis_out_of(rhs.v, k_out + usize::from(rb <= k_out), groups, name)?;
                    let k = self.reshape_axis_into(k, rb + usize::from(k_out < rb), k_out + 1, name)?;
                    let new_rhs = self.reshape_axis_into(k, k_out, k_out, name)?;
                    let out = conv(self, lhs.v, new_rhs, fgc, bgc)?;
                    let out = self.reshape_axis_out_of(out, out_f, groups, name)?;
                    let out = self.reshape_axis_out_of(out, out_f + 1, b, name)?;
                    (self.reshape_axis_into(out, out_f, out_f + 1, name)?, out_f)
                }
            }
            (None, None) => return Err(self.internal("convolution without a batched operand".into())),
        };
        Ok(Bv { v, bd: Some(bd) })
    }

    /// `gather` (numpy `take`). Table only batched, or indices only: the same
    /// gather, the batch dimension lands where `take`'s shape rule puts it.
    /// Both: per-example take ([`Batcher::batched_take`]) on clamped indices.
    fn gather(&mut self, o: &Orig, ops: &[Bv]) -> R<Bv> {
        let name = o.name();
        let axis = o.int(self, "axis")? as usize;
        let (t, idx) = (ops[0], ops[1]);
        let irank = o.types[1].rank();
        match (t.bd, idx.bd) {
            (None, Some(k)) => {
                let v = self.emit(Opcode::Gather, &[t.v, idx.v], vec![("axis", AttrValue::Int(axis as i64))], None, name)?;
                Ok(Bv { v, bd: Some(axis + k) })
            }
            (Some(k), None) => {
                let a = shift(axis, k);
                let bd = if k < a { k } else { k - 1 + irank };
                let v = self.emit(Opcode::Gather, &[t.v, idx.v], vec![("axis", AttrValue::Int(a as i64))], None, name)?;
                Ok(Bv { v, bd: Some(bd) })
            }
            _ => {
                let table = self.materialize(t, 0, name)?;
                let iv = self.materialize(idx, 0, name)?;
                let ishape = o.types[1].shape.clone();
                let kk: u64 = ishape.iter().product();
                let iv = self.reshape(iv, vec![self.size, kk], name)?;
                let n = o.types[0].shape[axis];
                let pos = self.clamp_index(iv, n - 1, name)?;
                let got = self.batched_take(table, axis + 1, pos, name)?;
                let w = batched_type(o.out(), 0, self.size);
                let v = self.reshape(got, w.shape, name)?;
                Ok(Bv { v, bd: Some(0) })
            }
        }
    }

    /// `scatter_add` and `scatter` (every kind). Unbatched indices: base and
    /// updates get the batch dimension at matching places and one scatter
    /// serves all examples. Batched indices: per-example scatter
    /// ([`Batcher::batched_scatter`]); out-of-range indices stay dropped.
    fn scatter(&mut self, o: &Orig, ops: &[Bv]) -> R<Bv> {
        let name = o.name();
        let axis = o.int(self, "axis")? as usize;
        let (base, idx, upd) = (ops[0], ops[1], ops[2]);
        let irank = o.types[1].rank();
        if idx.bd.is_none() {
            let k = base.bd.unwrap_or(0);
            let a = shift(axis, k);
            let uk = if k < a { k } else { k - 1 + irank };
            let bv = self.materialize(base, k, name)?;
            let uv = self.materialize(upd, uk, name)?;
            let v = self.emit(o.inst.op, &[bv, idx.v, uv], with_axis(o.inst, a), None, name)?;
            return Ok(Bv { v, bd: Some(k) });
        }
        let b = self.size;
        let bshape = o.types[0].shape.clone();
        let kk: u64 = o.types[1].shape.iter().product();
        let n = bshape[axis];
        let bv = self.materialize(base, 0, name)?;
        let iv = self.materialize(idx, 0, name)?;
        let iv = self.reshape(iv, vec![b, kk], name)?;
        let uv = self.materialize(upd, 0, name)?;
        let mut ushape = vec![b];
        ushape.extend(&bshape[..axis]);
        ushape.push(kk);
        ushape.extend(&bshape[axis + 1..]);
        let uv = self.reshape(uv, ushape, name)?;
        let valid = self.in_range(iv, n, name)?;
        let pos = self.clamp_index(iv, n - 1, name)?;
        let v = self.batched_scatter(o.inst, bv, axis + 1, pos, valid, uv, name)?;
        Ok(Bv { v, bd: Some(0) })
    }

    /// `call`: the callee is inlined and batched, except a `spmd func` called
    /// from a `func` (`shard_map`), which is unrolled over the examples.
    fn call(&mut self, f: &Function, inst: &InstData, ops: &[Bv]) -> R<Vec<Bv>> {
        let callee = inst
            .callee()
            .and_then(|c| self.sh.m.func_by_name(c))
            .ok_or_else(|| self.internal(format!("call of unknown function in @{}", f.name)))?;
        let g = &self.sh.m.funcs[callee];
        if !(g.kind == FuncKind::Spmd && self.func.kind == FuncKind::Global) {
            return self.inline(g, ops);
        }
        if self.size > UNROLL_LIMIT {
            return Err(self.unsupported(
                Opcode::Call,
                &format!(
                    "of spmd func @{} from a func with batched arguments over {} examples: such calls are unrolled, up to {UNROLL_LIMIT} examples",
                    g.name, self.size
                ),
            ));
        }
        let name = f.values[inst.results[0]].name.clone();
        let written: Vec<TensorType> = inst.results.iter().map(|&r| f.values[r].ty.clone()).collect();
        let mut per_example: Vec<Vec<Value>> = vec![];
        for e in 0..self.size {
            let mut args = vec![];
            for (i, x) in ops.iter().enumerate() {
                args.push(match x.bd {
                    None => x.v,
                    Some(k) => {
                        let t = self.ty(x.v);
                        let mut start = vec![0; t.rank()];
                        let mut limit: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
                        start[k] = e as usize;
                        limit[k] = e as usize + 1;
                        let attrs = vec![("start", ints(&start)), ("limit", ints(&limit)), ("stride", ints(&vec![1; t.rank()]))];
                        let s = self.emit(Opcode::Slice, &[x.v], attrs, None, &name)?;
                        self.reshape(s, o_shape(f, inst, i), &name)?
                    }
                });
            }
            per_example.push(self.emit_multi(Opcode::Call, &args, vec![], std::slice::from_ref(&g.name), Some(written.clone()), &name)?);
        }
        let mut outs = vec![];
        for (j, t) in written.iter().enumerate() {
            let mut parts = vec![];
            for res in &per_example {
                parts.push(self.reshape(res[j], batched_type(t, 0, 1).shape, &name)?);
            }
            let v = self.emit(Opcode::Concat, &parts, vec![("dim", AttrValue::Int(0))], None, &name)?;
            outs.push(Bv { v, bd: Some(0) });
        }
        Ok(outs)
    }
}

impl Batcher<'_, '_> {
    /// `g` applied to `ops`, inlined and batched. Its signature shardings
    /// (constraints where written) stay as constraints on its arguments and
    /// results.
    pub(crate) fn inline(&mut self, g: &Function, ops: &[Bv]) -> R<Vec<Bv>> {
        let mut args = vec![];
        for (&x, &p) in ops.iter().zip(&g.params) {
            args.push(match &g.values[p].sharding {
                Some(s) => self.constrain(x, s, usize::MAX, &g.values[p].name)?,
                None => x,
            });
        }
        let first_new = self.func.values.len();
        let mut outs = self.run(g, args)?;
        for (o, r) in outs.iter_mut().zip(&g.results) {
            if let Some(s) = &r.sharding {
                *o = self.constrain(*o, s, first_new, &format!("{}.r", g.name))?;
            }
        }
        Ok(outs)
    }
}

/// The unbatched shape of operand `i` of `inst`.
fn o_shape(f: &Function, inst: &InstData, i: usize) -> Vec<u64> {
    f.ty(inst.operands[i]).shape.clone()
}
