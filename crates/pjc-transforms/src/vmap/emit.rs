//! Instruction-building helpers for the batching rules: moving and adding the
//! batch dimension, JAX's `_reshape_axis_into`/`_reshape_axis_out_of`, index
//! preparation, and the per-example `gather`/`scatter_add` used wherever
//! examples index with their own indices.
//!
//! Every instruction goes through [`Batcher::emit_multi`] (the `Builder`
//! drops attributes equal to their default), which turns a type-inference
//! failure into an internal [`crate::TransformError`] instead of a panic.

use super::{Batcher, Bv, R};
use pjc_ir::{AttrValue, DType, Literal, Number, Opcode, TensorType, Value, ValueDef};

/// An integer list attribute.
pub(crate) fn ints(v: &[usize]) -> AttrValue {
    AttrValue::int_list(&v.iter().map(|&x| x as i64).collect::<Vec<_>>())
}

/// `n` as a literal element of dtype `d`.
pub(crate) fn number(d: DType, n: i128) -> Number {
    if d.is_float() {
        Number::Float(n as f64)
    } else if d.is_pred() {
        Number::Bool(n != 0)
    } else {
        Number::Int(n)
    }
}

impl Batcher<'_, '_> {
    pub(crate) fn ty(&self, v: Value) -> TensorType {
        self.func.values[v].ty.clone()
    }

    /// A product of dimension sizes (shapes are user-controlled: no wrapping).
    pub(crate) fn mul_dims(&self, a: u64, b: u64) -> R<u64> {
        a.checked_mul(b).ok_or_else(|| self.internal(format!("a dimension of {a} x {b} elements does not fit in u64")))
    }

    /// Adds one single-result instruction.
    pub(crate) fn emit(
        &mut self,
        op: Opcode,
        operands: &[Value],
        attrs: Vec<(&str, AttrValue)>,
        written: Option<TensorType>,
        name: &str,
    ) -> R<Value> {
        let v = self.emit_multi(op, operands, attrs, &[], written.map(|t| vec![t]), name)?;
        v.first().copied().ok_or_else(|| self.internal(format!("'{op}' gave no result")))
    }

    /// Adds one instruction (the `Builder` drops attributes equal to their default).
    pub(crate) fn emit_multi(
        &mut self,
        op: Opcode,
        operands: &[Value],
        attrs: Vec<(&str, AttrValue)>,
        callees: &[String],
        written: Option<Vec<TensorType>>,
        name: &str,
    ) -> R<Vec<Value>> {
        self.builder()
            .try_build(op, operands, attrs, callees, written, name)
            .map_err(|e| self.internal(format!("built an invalid '{op}': {}", e.msg)))
    }

    /// `constant` filling `shape` with `n` (of dtype `d`).
    pub(crate) fn splat(&mut self, d: DType, shape: Vec<u64>, n: i128, name: &str) -> R<Value> {
        let v = self.emit(Opcode::Constant, &[], vec![], Some(TensorType::new(d, shape)), name)?;
        if let ValueDef::Result(id, _) = self.func.values[v].def {
            self.func.insts[id].literal = Some(Literal { shape: vec![], elems: vec![number(d, n)] });
        }
        Ok(v)
    }

    pub(crate) fn iota(&mut self, d: DType, shape: Vec<u64>, dim: usize, name: &str) -> R<Value> {
        self.emit(Opcode::Iota, &[], vec![("dim", AttrValue::Int(dim as i64))], Some(TensorType::new(d, shape)), name)
    }

    pub(crate) fn binary(&mut self, op: Opcode, a: Value, b: Value, name: &str) -> R<Value> {
        self.emit(op, &[a, b], vec![], None, name)
    }

    pub(crate) fn compare(&mut self, dir: &str, a: Value, b: Value, name: &str) -> R<Value> {
        self.emit(Opcode::Compare, &[a, b], vec![("dir", AttrValue::Ident(dir.into()))], None, name)
    }

    pub(crate) fn select(&mut self, p: Value, a: Value, b: Value, name: &str) -> R<Value> {
        self.emit(Opcode::Select, &[p, a, b], vec![], None, name)
    }

    pub(crate) fn convert(&mut self, v: Value, d: DType, name: &str) -> R<Value> {
        let t = self.ty(v);
        if t.dtype == d {
            return Ok(v);
        }
        self.emit(Opcode::Convert, &[v], vec![], Some(t.with_dtype(d)), name)
    }

    pub(crate) fn transpose(&mut self, v: Value, perm: &[usize], name: &str) -> R<Value> {
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok(v);
        }
        self.emit(Opcode::Transpose, &[v], vec![("perm", ints(perm))], None, name)
    }

    /// Moves dimension `from` of `v` to position `to`.
    pub(crate) fn moveaxis(&mut self, v: Value, from: usize, to: usize, name: &str) -> R<Value> {
        if from == to {
            return Ok(v);
        }
        let mut perm: Vec<usize> = (0..self.ty(v).rank()).filter(|&i| i != from).collect();
        perm.insert(to, from);
        self.transpose(v, &perm, name)
    }

    pub(crate) fn reshape(&mut self, v: Value, shape: Vec<u64>, name: &str) -> R<Value> {
        let t = self.ty(v);
        if t.shape == shape {
            return Ok(v);
        }
        self.emit(Opcode::Reshape, &[v], vec![], Some(TensorType::new(t.dtype, shape)), name)
    }

    pub(crate) fn broadcast(&mut self, v: Value, dims: &[usize], shape: Vec<u64>, name: &str) -> R<Value> {
        let d = self.ty(v).dtype;
        self.emit(Opcode::Broadcast, &[v], vec![("dims", ints(dims))], Some(TensorType::new(d, shape)), name)
    }

    /// An unbatched value repeated along a new batch dimension at `at`.
    pub(crate) fn add_batch(&mut self, v: Value, at: usize, name: &str) -> R<Value> {
        let t = self.ty(v);
        let mut shape = t.shape.clone();
        shape.insert(at, self.size);
        let dims: Vec<usize> = (0..t.rank()).map(|i| i + usize::from(i >= at)).collect();
        self.broadcast(v, &dims, shape, name)
    }

    /// `x` with its batch dimension at `at` (moved there, or made by broadcasting).
    pub(crate) fn materialize(&mut self, x: Bv, at: usize, name: &str) -> R<Value> {
        match x.bd {
            Some(k) => self.moveaxis(x.v, k, at, name),
            None => self.add_batch(x.v, at, name),
        }
    }

    /// JAX's `_reshape_axis_into`: dimension `src` of `x` is merged into
    /// dimension `dst` (numbered after `src` is removed) as its major part.
    pub(crate) fn reshape_axis_into(&mut self, x: Value, src: usize, dst: usize, name: &str) -> R<Value> {
        let t = self.ty(x);
        let mut perm: Vec<usize> = (0..t.rank()).filter(|&i| i != src).collect();
        perm.insert(dst, src);
        let y = self.transpose(x, &perm, name)?;
        let mut shape = t.shape.clone();
        let n = shape.remove(src);
        shape[dst] = self.mul_dims(shape[dst], n)?;
        self.reshape(y, shape, name)
    }

    /// JAX's `_reshape_axis_out_of`: dimension `src` of `x` is split into
    /// `[size1, rest]` (`size1` major).
    pub(crate) fn reshape_axis_out_of(&mut self, x: Value, src: usize, size1: u64, name: &str) -> R<Value> {
        let mut shape = self.ty(x).shape;
        let n = shape[src];
        if size1 == 0 || !n.is_multiple_of(size1) {
            return Err(self.internal(format!("cannot split a dimension of {n} into {size1} parts")));
        }
        shape.splice(src..=src, [size1, n / size1]);
        self.reshape(x, shape, name)
    }

    /// Integer indices clamped into `[0, hi]` in their own dtype, then converted
    /// to i64 (exact, since they are then in range).
    pub(crate) fn clamp_index(&mut self, v: Value, hi: u64, name: &str) -> R<Value> {
        let d = self.ty(v).dtype;
        let max = d.int_range().map_or(i128::MAX, |r| r.1);
        let lo = self.splat(d, vec![], 0, name)?;
        let hi = self.splat(d, vec![], (hi as i128).min(max), name)?;
        let c = self.emit(Opcode::Clamp, &[lo, v, hi], vec![], None, name)?;
        self.convert(c, DType::I64, name)
    }

    /// Where integer indices `v` lie in `[0, n)` (pred of `v`'s shape), computed
    /// in their own dtype; `None` when every value of the dtype does.
    pub(crate) fn in_range(&mut self, v: Value, n: u64, name: &str) -> R<Option<Value>> {
        let t = self.ty(v);
        let mut mask = None;
        if t.dtype.is_signed_int() {
            let z = self.splat(t.dtype, t.shape.clone(), 0, name)?;
            mask = Some(self.compare("ge", v, z, name)?);
        }
        let max = t.dtype.int_range().map_or(i128::MAX, |r| r.1);
        if (n as i128) <= max {
            let c = self.splat(t.dtype, t.shape.clone(), n as i128, name)?;
            let lt = self.compare("lt", v, c, name)?;
            mask = Some(match mask {
                Some(m) => self.binary(Opcode::And, m, lt, name)?,
                None => lt,
            });
        }
        Ok(mask)
    }

    /// The batch (dimension 0 of `x`) folded into dimension `d` as its major
    /// part, moved to the front: `[B*n, rest..]`, with the indices `pos` (i64
    /// `[B, K]`, values in `[0, n)`) offset by `b*n` into example `b`'s block.
    /// Returns the folded array, the offset indices, and the permutation that
    /// put `d` second (to undo with [`inverse`]).
    fn fold_batch_into(&mut self, x: Value, d: usize, pos: Value, name: &str) -> R<(Value, Value, Vec<usize>)> {
        let t = self.ty(x);
        let n = t.shape[d];
        let shape = vec![self.size, self.ty(pos).shape[1]];
        let mut perm = vec![0, d];
        perm.extend((1..t.rank()).filter(|&i| i != d));
        let xt = self.transpose(x, &perm, name)?;
        let mut flat_shape = vec![self.mul_dims(self.size, n)?];
        flat_shape.extend(perm[2..].iter().map(|&i| t.shape[i]));
        let flat = self.reshape(xt, flat_shape, name)?;
        let b = self.iota(DType::I64, shape.clone(), 0, name)?;
        let nn = self.splat(DType::I64, shape, n as i128, name)?;
        let off = self.binary(Opcode::Mul, b, nn, name)?;
        let idx = self.binary(Opcode::Add, off, pos, name)?;
        Ok((flat, idx, perm))
    }

    /// Per-example take: `x` is batched at 0, `pos` is i64 `[B, K]` with values
    /// in `[0, n)` (`n` = size of dimension `d >= 1` of `x`); the result is `x`
    /// with dimension `d` replaced by `K`, element `[b, .., k, ..]` being
    /// `x[b, .., pos[b, k], ..]`. One `gather` on `x` with the batch folded into
    /// dimension `d`.
    pub(crate) fn batched_take(&mut self, x: Value, d: usize, pos: Value, name: &str) -> R<Value> {
        let (flat, idx, perm) = self.fold_batch_into(x, d, pos, name)?;
        let got = self.emit(Opcode::Gather, &[flat, idx], vec![("axis", AttrValue::Int(0))], None, name)?;
        self.transpose(got, &inverse(&perm), name)
    }

    /// [`Batcher::batched_take`] along dimension `d` of the *unbatched* shape
    /// of `x`, result batched at 0. An unbatched `x` is not broadcast first: a
    /// plain `gather` with the `[B, K]` positions does it.
    pub(crate) fn take_along(&mut self, x: Bv, d: usize, pos: Value, name: &str) -> R<Value> {
        match x.bd {
            None => {
                let g = self.emit(Opcode::Gather, &[x.v, pos], vec![("axis", AttrValue::Int(d as i64))], None, name)?;
                self.moveaxis(g, d, 0, name)
            }
            Some(_) => {
                let v = self.materialize(x, 0, name)?;
                self.batched_take(v, d + 1, pos, name)
            }
        }
    }

    /// Per-example `scatter_add` or `scatter` (`like`'s op and kind): `base` is
    /// batched at 0, `pos` is i64 `[B, K]`, `valid` (pred `[B, K]`, or `None`
    /// for all) says which updates to keep, `upd` is `base` with dimension `d`
    /// replaced by `K`. Example `b`'s update slice `k` is combined into
    /// `base[b, .., pos[b, k], ..]`. Examples' indices never meet, and each
    /// example's updates keep their order (which `set` picks the last of).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn batched_scatter(
        &mut self,
        like: &pjc_ir::InstData,
        base: Value,
        d: usize,
        pos: Value,
        valid: Option<Value>,
        upd: Value,
        name: &str,
    ) -> R<Value> {
        let (flat, mut idx, perm) = self.fold_batch_into(base, d, pos, name)?;
        if let Some(valid) = valid {
            // A negative index is out of range for every block: the update is dropped.
            let shape = self.ty(idx).shape;
            let drop = self.splat(DType::I64, shape, -1, name)?;
            idx = self.select(valid, idx, drop, name)?;
        }
        let ut = self.transpose(upd, &perm, name)?;
        let s = self.emit(like.op, &[flat, idx, ut], with_axis(like, 0), None, name)?;
        // Back to [B, n, rest..], then to base's dimension order.
        let mut shape = self.ty(base).shape;
        let n = shape.remove(d);
        shape.insert(1, n);
        let s = self.reshape(s, shape, name)?;
        self.transpose(s, &inverse(&perm), name)
    }
}

/// `inst`'s attributes with `axis` set to `a`.
pub(crate) fn with_axis(inst: &pjc_ir::InstData, a: usize) -> Vec<(&str, AttrValue)> {
    let mut attrs = super::attrs_of(inst);
    for (n, v) in attrs.iter_mut() {
        if *n == "axis" {
            *v = AttrValue::Int(a as i64);
        }
    }
    attrs
}

/// The inverse of a permutation.
pub(crate) fn inverse(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    inv
}
