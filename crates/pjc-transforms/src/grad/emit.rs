//! The state of one gradient generation and the small instruction-building
//! helpers every rule uses. Types always come from `pjc_ir::infer` (through
//! the `Builder`); attributes equal to their default are dropped on the way in,
//! so generated code is in the same canonical form the verifier produces.
//! [`exclusive_prod`] is here because both `reduce` prod's rule (`rules.rs`)
//! and the prod collectives' (`spmd.rs`) build on it.

use crate::TransformError;
use pjc_ir::builder::Builder;
use pjc_ir::attrs::resolved_attr;
use pjc_ir::replication::Axes;
use pjc_ir::{AttrValue, DType, Inst, InstData, Module, Number, Opcode, Span, TensorType, Value};
use std::collections::{HashMap, HashSet};

pub(super) type R<T> = Result<T, TransformError>;

/// One function being differentiated: the builder appending to the generated
/// function, and the analyses of its primal part.
pub(super) struct Gen<'a> {
    pub b: Builder<'a>,
    pub m: &'a Module,
    /// The `grad` instruction, for errors.
    pub span: Span,
    /// The function being differentiated, for messages.
    pub fname: String,
    /// Whether the generated function is a `spmd func` (per-device view).
    pub spmd: bool,
    /// Mesh axes along which each primal value may vary (spmd only).
    pub var: HashMap<Value, Axes>,
    /// Primal values that depend on a differentiated input through floats.
    pub active: HashSet<Value>,
    /// Accumulated cotangent of each primal value that has one.
    pub ct: HashMap<Value, Value>,
    /// Spmd callee name -> the name of its generated VJP function.
    pub helper_of: HashMap<String, String>,
    /// Name of the (first) result of the instruction being differentiated:
    /// temporaries are named after it.
    pub cur: String,
    /// How to run the backward of each primal `scan` and `switch` that
    /// `Cx::prepare_control` (`control.rs`) rewrote.
    pub control: HashMap<Inst, ControlVjp>,
}

/// How the backward pass runs one rewritten `scan` or `switch`.
#[derive(Clone, Debug)]
pub(super) struct ControlVjp {
    /// The backward bodies: one for `scan`, one per branch for `switch`.
    pub bwd: Vec<String>,
    /// The results whose cotangents the backward op takes, in order.
    pub ct_results: Vec<usize>,
    /// The residuals: the extra results of the rewritten primal op.
    pub saved: Vec<Value>,
    /// The bodies' parameter positions whose primal values the backward op
    /// takes again (`scan`: loop-invariant carries, then scanned operands).
    pub direct: Vec<usize>,
    /// The bodies' parameter positions that get cotangents, in the order of
    /// the backward op's results (for `scan`, after the carried-through
    /// invariant carries).
    pub wrt: Vec<usize>,
}

pub(super) fn ints(v: &[i64]) -> AttrValue {
    AttrValue::int_list(v)
}

pub(super) fn us(v: &[usize]) -> AttrValue {
    AttrValue::List(v.iter().map(|&i| AttrValue::Int(i as i64)).collect())
}

pub(super) fn pairs(v: &[(i64, i64)]) -> AttrValue {
    AttrValue::List(v.iter().map(|&(a, b)| AttrValue::int_list(&[a, b])).collect())
}

pub(super) fn ident(s: &str) -> AttrValue {
    AttrValue::Ident(s.to_string())
}

/// The number `x` as a literal element of dtype `d` (rounded to it).
pub(super) fn number(x: f64, d: DType) -> Number {
    if d.is_float() {
        Number::Float(d.round_f64(x))
    } else if d.is_pred() {
        Number::Bool(x != 0.0)
    } else {
        Number::Int(x as i128)
    }
}

impl Gen<'_> {
    pub fn ty(&self, v: Value) -> TensorType {
        self.b.func.values[v].ty.clone()
    }

    pub fn vname(&self, v: Value) -> String {
        self.b.func.values[v].name.clone()
    }

    /// `{cur}.{tag}`: a temporary of the rule being applied.
    pub fn tmp(&self, tag: &str) -> String {
        format!("{}.{tag}", self.cur)
    }

    /// `{x}.ct`: a cotangent contribution for `x`.
    pub fn ctn(&self, x: Value) -> String {
        format!("{}.ct", self.vname(x))
    }

    pub fn internal(&self, msg: impl std::fmt::Display) -> TransformError {
        TransformError { span: self.span, msg: format!("internal error in grad of @{}: {msg}", self.fname) }
    }

    /// The error for an op (or a form of it) that has no gradient rule.
    pub fn unsupported(&self, op: Opcode, why: &str) -> TransformError {
        TransformError {
            span: self.span,
            msg: format!("unsupported: gradient of '{op}' (computing %{} in @{}): {why}", self.cur, self.fname),
        }
    }

    /// Appends one single-result instruction. `written` is the result type for
    /// ops that need it written (or pick their dtype from it).
    pub fn emit(
        &mut self,
        op: Opcode,
        operands: &[Value],
        attrs: Vec<(&str, AttrValue)>,
        written: Option<TensorType>,
        name: &str,
    ) -> R<Value> {
        match self.b.try_build(op, operands, attrs, &[], written.map(|t| vec![t]), name) {
            Ok(v) => Ok(v[0]),
            Err(e) => Err(self.internal(format!("built an invalid '{op}': {}", e.msg))),
        }
    }

    /// Appends one instruction with several results (`sort`).
    pub fn emit_multi(&mut self, op: Opcode, operands: &[Value], attrs: Vec<(&str, AttrValue)>, name: &str) -> R<Vec<Value>> {
        self.b
            .try_build(op, operands, attrs, &[], None, name)
            .map_err(|e| self.internal(format!("built an invalid '{op}': {}", e.msg)))
    }

    /// `constant x` filling `ty`.
    pub fn konst(&mut self, x: f64, ty: &TensorType, name: &str) -> R<Value> {
        Ok(self.b.splat(number(x, ty.dtype), ty.clone(), name))
    }

    pub fn zeros(&mut self, ty: &TensorType) -> R<Value> {
        self.konst(0.0, ty, "zero")
    }

    pub fn ones(&mut self, ty: &TensorType) -> R<Value> {
        self.konst(1.0, ty, "one")
    }

    pub fn un(&mut self, op: Opcode, a: Value, name: &str) -> R<Value> {
        self.emit(op, &[a], vec![], None, name)
    }

    pub fn bin(&mut self, op: Opcode, a: Value, b: Value, name: &str) -> R<Value> {
        self.emit(op, &[a, b], vec![], None, name)
    }

    pub fn mul(&mut self, a: Value, b: Value, name: &str) -> R<Value> {
        self.bin(Opcode::Mul, a, b, name)
    }

    pub fn cmp(&mut self, a: Value, b: Value, dir: &str, name: &str) -> R<Value> {
        self.emit(Opcode::Compare, &[a, b], vec![("dir", ident(dir))], None, name)
    }

    pub fn select(&mut self, p: Value, a: Value, b: Value, name: &str) -> R<Value> {
        self.emit(Opcode::Select, &[p, a, b], vec![], None, name)
    }

    pub fn convert(&mut self, a: Value, d: DType, name: &str) -> R<Value> {
        let t = self.ty(a);
        if t.dtype == d {
            return Ok(a);
        }
        self.emit(Opcode::Convert, &[a], vec![], Some(t.with_dtype(d)), name)
    }

    /// `broadcast a {dims}` to `ty` (nothing when it would be the identity).
    pub fn broadcast(&mut self, a: Value, dims: &[usize], ty: &TensorType, name: &str) -> R<Value> {
        let t = self.ty(a);
        if t == *ty && dims.iter().enumerate().all(|(i, &d)| i == d) {
            return Ok(a);
        }
        self.emit(Opcode::Broadcast, &[a], vec![("dims", us(dims))], Some(ty.clone()), name)
    }

    /// A scalar broadcast to `ty`.
    pub fn splat_scalar(&mut self, a: Value, ty: &TensorType, name: &str) -> R<Value> {
        self.broadcast(a, &[], ty, name)
    }

    pub fn reshape(&mut self, a: Value, shape: &[u64], name: &str) -> R<Value> {
        let t = self.ty(a);
        if t.shape == shape {
            return Ok(a);
        }
        self.emit(Opcode::Reshape, &[a], vec![], Some(TensorType::new(t.dtype, shape.to_vec())), name)
    }

    pub fn transpose(&mut self, a: Value, perm: &[usize], name: &str) -> R<Value> {
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok(a);
        }
        self.emit(Opcode::Transpose, &[a], vec![("perm", us(perm))], None, name)
    }

    pub fn reduce(&mut self, a: Value, dims: &[usize], kind: &str, name: &str) -> R<Value> {
        if dims.is_empty() {
            return Ok(a);
        }
        self.emit(Opcode::Reduce, &[a], vec![("dims", us(dims)), ("kind", ident(kind))], None, name)
    }

    /// Sum of every element (a scalar).
    pub fn sum_all(&mut self, a: Value, name: &str) -> R<Value> {
        let r = self.ty(a).rank();
        self.reduce(a, &(0..r).collect::<Vec<_>>(), "sum", name)
    }

    pub fn slice(&mut self, a: Value, start: &[i64], limit: &[i64], stride: &[i64], name: &str) -> R<Value> {
        let t = self.ty(a);
        let full = (0..t.rank()).all(|d| start[d] == 0 && limit[d] == t.shape[d] as i64 && stride[d] == 1);
        if full {
            return Ok(a);
        }
        self.emit(
            Opcode::Slice,
            &[a],
            vec![("start", ints(start)), ("limit", ints(limit)), ("stride", ints(stride))],
            None,
            name,
        )
    }

    pub fn pad(&mut self, a: Value, v: Value, low: &[i64], high: &[i64], interior: &[i64], name: &str) -> R<Value> {
        if low.iter().chain(high).chain(interior).all(|&x| x == 0) {
            return Ok(a);
        }
        self.emit(
            Opcode::Pad,
            &[a, v],
            vec![("low", ints(low)), ("high", ints(high)), ("interior", ints(interior))],
            None,
            name,
        )
    }

    pub fn reverse(&mut self, a: Value, dims: &[usize], name: &str) -> R<Value> {
        if dims.is_empty() {
            return Ok(a);
        }
        self.emit(Opcode::Reverse, &[a], vec![("dims", us(dims))], None, name)
    }

    /// `all_reduce` over `axes` listed in mesh order.
    pub fn all_reduce(&mut self, a: Value, axes: &Axes, kind: &str, name: &str) -> R<Value> {
        let mesh = self.b.mesh;
        let mut list: Vec<String> = axes.iter().cloned().collect();
        list.sort_by_key(|x| mesh.axis(x).unwrap_or(usize::MAX));
        let axes = AttrValue::List(list.into_iter().map(AttrValue::Ident).collect());
        self.emit(Opcode::AllReduce, &[a], vec![("axes", axes), ("kind", ident(kind))], None, name)
    }

    // ---- attributes of the primal instruction (defaults resolved) ----------

    pub fn attr(&self, inst: &InstData, name: &str) -> R<AttrValue> {
        let types: Vec<TensorType> = inst.operands.iter().map(|&v| self.ty(v)).collect();
        let refs: Vec<&TensorType> = types.iter().collect();
        resolved_attr(inst, name, &refs).ok_or_else(|| self.internal(format!("'{}' lacks attribute '{name}'", inst.op)))
    }

    pub fn a_ints(&self, inst: &InstData, name: &str) -> R<Vec<i64>> {
        self.attr(inst, name)?
            .as_ints()
            .ok_or_else(|| self.internal(format!("attribute '{name}' is not an integer list")))
    }

    pub fn a_usizes(&self, inst: &InstData, name: &str) -> R<Vec<usize>> {
        Ok(self.a_ints(inst, name)?.into_iter().map(|i| i as usize).collect())
    }

    pub fn a_int(&self, inst: &InstData, name: &str) -> R<i64> {
        self.attr(inst, name)?.as_int().ok_or_else(|| self.internal(format!("attribute '{name}' is not an integer")))
    }

    pub fn a_pairs(&self, inst: &InstData, name: &str) -> R<Vec<(i64, i64)>> {
        self.attr(inst, name)?.as_pairs().ok_or_else(|| self.internal(format!("attribute '{name}' is not a pair list")))
    }

    pub fn a_ident(&self, inst: &InstData, name: &str) -> R<String> {
        self.attr(inst, name)?
            .as_ident()
            .map(str::to_string)
            .ok_or_else(|| self.internal(format!("attribute '{name}' is not an identifier")))
    }

    pub fn a_idents(&self, inst: &InstData, name: &str) -> R<Vec<String>> {
        self.attr(inst, name)?
            .as_idents()
            .ok_or_else(|| self.internal(format!("attribute '{name}' is not an axis list")))
    }
}

/// Exclusive running product along dimension 0 (from the end when `rev`),
/// by doubling steps (Hillis–Steele): log2(n) pads and multiplies.
pub(super) fn exclusive_prod(g: &mut Gen, a: Value, rev: bool) -> R<Value> {
    let t = g.ty(a);
    let r = t.rank();
    let n = t.shape[0] as i64;
    let one_s = g.ones(&TensorType::scalar(t.dtype))?;
    let src = if rev { g.reverse(a, &[0], &g.tmp("rev"))? } else { a };
    let lim = |k: i64| -> Vec<i64> {
        let mut l: Vec<i64> = t.shape.iter().map(|&s| s as i64).collect();
        l[0] = k;
        l
    };
    let shift = |g: &mut Gen, p: Value, k: i64, name: &str| -> R<Value> {
        let s = g.slice(p, &vec![0; r], &lim(n - k), &vec![1; r], name)?;
        let mut low = vec![0; r];
        low[0] = k;
        g.pad(s, one_s, &low, &vec![0; r], &vec![0; r], name)
    };
    let mut p = src;
    let mut k = 1;
    while k < n {
        let sh = shift(g, p, k, &g.tmp("shift"))?;
        p = g.mul(p, sh, &g.tmp("scan"))?;
        k *= 2;
    }
    let ex = if n == 1 { g.ones(&t)? } else { shift(g, p, 1, &g.tmp("excl"))? };
    if rev {
        g.reverse(ex, &[0], &g.tmp("suffix"))
    } else {
        Ok(ex)
    }
}
