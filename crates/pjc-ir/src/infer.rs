//! Result-type inference and operand checking for every op.
//!
//! One function, [`infer`], serves the verifier (which reports its errors with
//! spans) and every pass that builds instructions (which must not guess types).
//! It assumes attribute *kinds* were already checked against the op table
//! (`pjc_front`'s verifier does that first) but re-checks every range itself.

use crate::module::{AttrValue, FuncKind, InstData};
use crate::types::{Mesh, Sharding, TensorType};
use pjc_dialects::{DType, Opcode, TypeRule};

/// What an inference error is about, so the verifier can point at it.
#[derive(Clone, Debug, PartialEq)]
pub enum Blame {
    Op,
    Operand(usize),
    Attr(&'static str),
    ResultType,
    /// The `k`th function the instruction names (a body of `while`, `scan`, `switch`).
    Callee(usize),
}

#[derive(Clone, Debug, PartialEq)]
pub struct InferError {
    pub msg: String,
    pub blame: Blame,
}

type R<T> = Result<T, InferError>;

fn err<T>(blame: Blame, msg: impl Into<String>) -> R<T> {
    Err(InferError { msg: msg.into(), blame })
}

/// A callee's signature as seen from a call site.
#[derive(Clone, Debug)]
pub struct CalleeSig {
    pub name: String,
    pub kind: FuncKind,
    pub params: Vec<(TensorType, Option<Sharding>)>,
    pub results: Vec<(TensorType, Option<Sharding>)>,
}

/// Everything inference needs besides the instruction itself.
pub struct InferCtx<'a> {
    pub mesh: &'a Mesh,
    /// The kind of the function containing the instruction.
    pub caller: FuncKind,
    /// The signatures of the named functions (`call`, `grad`, `vmap`: one;
    /// `while`: cond and body; `scan`: the step; `switch`: the branches).
    pub callees: Vec<&'a CalleeSig>,
}

/// Global type of a shard with sharding `s` (dims multiplied by their axes' sizes;
/// a dimension too large for u64 saturates, see [`checked_global_type`]).
pub fn global_type(local: &TensorType, s: Option<&Sharding>, mesh: &Mesh) -> TensorType {
    let mut t = local.clone();
    if let Some(s) = s {
        for (d, size) in t.shape.iter_mut().enumerate() {
            if d < s.dims.len() {
                *size = size.saturating_mul(mesh.group_size(s.dim_axes(d).iter().map(|a| a.as_str())));
            }
        }
    }
    t
}

/// [`global_type`], or `None` when a global dimension does not fit in u64.
pub fn checked_global_type(local: &TensorType, s: Option<&Sharding>, mesh: &Mesh) -> Option<TensorType> {
    let mut t = local.clone();
    if let Some(s) = s {
        for (d, size) in t.shape.iter_mut().enumerate() {
            if d < s.dims.len() {
                *size = size.checked_mul(mesh.group_size(s.dim_axes(d).iter().map(|a| a.as_str())))?;
            }
        }
    }
    Some(t)
}

/// A computed dimension, or an error when it does not fit in u64 (shapes are
/// user-controlled, so arithmetic on them must not wrap or panic).
fn dim_size(v: Option<u64>, blame: Blame, what: &str) -> R<u64> {
    v.map_or_else(|| err(blame, format!("{what}: the result dimension is larger than {}", u64::MAX)), Ok)
}

/// Whether two shapes have the same number of elements, computed exactly
/// (a product of u64 dimensions can exceed any fixed width).
fn same_element_count(a: &[u64], b: &[u64]) -> bool {
    fn count(shape: &[u64]) -> Vec<u64> {
        let mut limbs = vec![1u64];
        for &d in shape {
            let mut carry = 0u128;
            for l in limbs.iter_mut() {
                let p = *l as u128 * d as u128 + carry;
                *l = p as u64;
                carry = p >> 64;
            }
            if carry > 0 {
                limbs.push(carry as u64);
            }
        }
        while limbs.len() > 1 && limbs.last() == Some(&0) {
            limbs.pop();
        }
        limbs
    }
    count(a) == count(b)
}

/// Local (per-device) type of a global array with sharding `s`, when divisible.
pub fn local_type(global: &TensorType, s: Option<&Sharding>, mesh: &Mesh) -> Option<TensorType> {
    let mut t = global.clone();
    if let Some(s) = s {
        for (d, size) in t.shape.iter_mut().enumerate() {
            if d < s.dims.len() {
                let n = mesh.group_size(s.dim_axes(d).iter().map(|a| a.as_str()));
                if *size % n != 0 {
                    return None;
                }
                *size /= n;
            }
        }
    }
    Some(t)
}

struct Cx<'a> {
    inst: &'a InstData,
    ops: &'a [&'a TensorType],
    written: Option<&'a [TensorType]>,
    ctx: &'a InferCtx<'a>,
}

impl<'a> Cx<'a> {
    fn attr(&self, name: &'static str) -> R<AttrValue> {
        crate::attrs::resolved_attr(self.inst, name, self.ops)
            .map_or_else(|| err(Blame::Attr(name), format!("missing attribute '{name}'")), Ok)
    }
    fn int(&self, name: &'static str) -> R<i64> {
        match self.attr(name)? {
            AttrValue::Int(i) => Ok(i),
            _ => err(Blame::Attr(name), format!("attribute '{name}' must be an integer")),
        }
    }
    fn ints(&self, name: &'static str) -> R<Vec<i64>> {
        self.attr(name)?
            .as_ints()
            .map_or_else(|| err(Blame::Attr(name), format!("attribute '{name}' must be a list of integers")), Ok)
    }
    /// A list of `len` integers, each >= `min`.
    fn ints_len(&self, name: &'static str, len: usize, min: i64) -> R<Vec<i64>> {
        let v = self.ints(name)?;
        if v.len() != len {
            return err(Blame::Attr(name), format!("'{name}' has {} entries, expected {len}", v.len()));
        }
        if let Some(x) = v.iter().find(|&&x| x < min) {
            return err(Blame::Attr(name), format!("'{name}' entry {x} must be at least {min}"));
        }
        Ok(v)
    }
    fn pairs_len(&self, name: &'static str, len: usize) -> R<Vec<(i64, i64)>> {
        let v = self.attr(name)?.as_pairs().map_or_else(
            || err(Blame::Attr(name), format!("'{name}' must be a list of [lo, hi] pairs")),
            Ok,
        )?;
        if v.len() != len {
            return err(Blame::Attr(name), format!("'{name}' has {} pairs, expected {len}", v.len()));
        }
        Ok(v)
    }
    /// A dimension index of a rank-`rank` array.
    fn dim(&self, name: &'static str, rank: usize) -> R<usize> {
        let d = self.int(name)?;
        if d < 0 || d as usize >= rank {
            return err(Blame::Attr(name), format!("'{name}' is {d}, out of range for rank {rank}"));
        }
        Ok(d as usize)
    }
    /// Distinct dimension indices of a rank-`rank` array.
    fn dims(&self, name: &'static str, rank: usize) -> R<Vec<usize>> {
        let v = self.ints(name)?;
        dims_check(&v, rank, name)
    }
    fn ident(&self, name: &'static str) -> R<String> {
        match self.attr(name)? {
            AttrValue::Ident(s) => Ok(s),
            _ => err(Blame::Attr(name), format!("attribute '{name}' must be an identifier")),
        }
    }
    fn written1(&self) -> Option<&'a TensorType> {
        self.written.and_then(|w| w.first())
    }
    fn need_written(&self) -> R<&'a TensorType> {
        self.written1().map_or_else(
            || err(Blame::Op, format!("'{}' needs its result type written (': TYPE')", self.inst.op)),
            Ok,
        )
    }
    fn axes(&self, name: &'static str) -> R<Vec<String>> {
        let v = self.attr(name)?.as_idents().map_or_else(
            || err(Blame::Attr(name), format!("'{name}' must be a list of mesh axis names")),
            Ok,
        )?;
        if v.is_empty() {
            return err(Blame::Attr(name), format!("'{name}' names no mesh axis"));
        }
        for (i, a) in v.iter().enumerate() {
            if self.ctx.mesh.axis(a).is_none() {
                return err(Blame::Attr(name), format!("unknown mesh axis '{a}'"));
            }
            if v[..i].contains(a) {
                return err(Blame::Attr(name), format!("mesh axis '{a}' appears twice"));
            }
        }
        Ok(v)
    }
    fn group(&self, axes: &[String]) -> u64 {
        self.ctx.mesh.group_size(axes.iter().map(|a| a.as_str()))
    }
}

fn dims_check(v: &[i64], rank: usize, name: &'static str) -> R<Vec<usize>> {
    let mut out = Vec::with_capacity(v.len());
    for &d in v {
        if d < 0 || d as usize >= rank {
            return err(Blame::Attr(name), format!("'{name}' entry {d} is out of range for rank {rank}"));
        }
        if out.contains(&(d as usize)) {
            return err(Blame::Attr(name), format!("'{name}' lists dimension {d} twice"));
        }
        out.push(d as usize);
    }
    Ok(out)
}

fn shape_str(s: &[u64]) -> String {
    format!("[{}]", s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(","))
}

/// Checks every operand's dtype against the op's declared class.
fn check_classes(cx: &Cx) -> R<()> {
    let def = cx.inst.op.def();
    let n = match def.rule {
        TypeRule::Elementwise | TypeRule::ElementwiseToPred => cx.ops.len(),
        _ => cx.ops.len().min(1),
    };
    for (i, t) in cx.ops.iter().enumerate().take(n) {
        if !def.operands.admits(t.dtype) {
            return err(
                Blame::Operand(i),
                format!("'{}' expects {}, got {}", cx.inst.op, def.operands.describe(), t.dtype),
            );
        }
    }
    Ok(())
}

fn same_types(cx: &Cx, idx: &[usize]) -> R<()> {
    let first = cx.ops[idx[0]];
    for &i in &idx[1..] {
        if cx.ops[i] != first {
            return err(
                Blame::Operand(i),
                format!(
                    "operands of '{}' must have identical types (no implicit broadcasting): {} vs {}",
                    cx.inst.op, first, cx.ops[i]
                ),
            );
        }
    }
    Ok(())
}

/// Infers the result types of `inst` from its operand types, attributes, the
/// written result types (which some ops require and some use to pick a dtype)
/// and the context. Written types are *not* compared with the inferred ones
/// here; the caller does that, so it can report where.
pub fn infer(
    inst: &InstData,
    operands: &[&TensorType],
    written: Option<&[TensorType]>,
    ctx: &InferCtx,
) -> Result<Vec<TensorType>, InferError> {
    use Opcode::*;
    let cx = Cx { inst, ops: operands, written, ctx };
    let def = inst.op.def();
    if inst.op.is_control() {
        // Control flow explains a missing operand itself (section 7.1).
        return infer_control(&cx);
    }
    // Operand count.
    let n = operands.len();
    match def.arity {
        pjc_dialects::Arity::Exactly(k) if n != k => {
            return err(Blame::Op, format!("'{}' takes {k} operand{}, got {n}", inst.op, if k == 1 { "" } else { "s" }))
        }
        pjc_dialects::Arity::AtLeast(k) if n < k => {
            return err(Blame::Op, format!("'{}' takes at least {k} operand{}, got {n}", inst.op, if k == 1 { "" } else { "s" }))
        }
        _ => {}
    }
    if def.rule == TypeRule::Callee {
        return infer_callee(&cx);
    }
    check_classes(&cx)?;
    let a = operands.first().copied();
    let one = |t: TensorType| Ok(vec![t]);
    match inst.op {
        _ if def.rule == TypeRule::Elementwise && def.elementwise && !matches!(inst.op, Clamp | Select | Convert | BitcastConvert) => {
            let all: Vec<usize> = (0..n).collect();
            same_types(&cx, &all)?;
            if a.unwrap().dtype.is_pred() && matches!(inst.op, Sub | Div | Rem | Pow | Neg | Abs | Sign) {
                return err(Blame::Operand(0), format!("'{}' is not defined on pred", inst.op));
            }
            one(a.unwrap().clone())
        }
        IsFinite | Compare => {
            let all: Vec<usize> = (0..n).collect();
            same_types(&cx, &all)?;
            if inst.op == Compare {
                cx.ident("dir")?;
            }
            one(a.unwrap().with_dtype(DType::Pred))
        }
        Clamp => {
            let (lo, x, hi) = (operands[0], operands[1], operands[2]);
            for (i, b) in [(0, lo), (2, hi)] {
                if b.dtype != x.dtype {
                    return err(Blame::Operand(i), format!("clamp bound has dtype {}, operand has {}", b.dtype, x.dtype));
                }
                if !b.is_scalar() && b.shape != x.shape {
                    return err(Blame::Operand(i), format!("clamp bound must be a scalar or of shape {}, got {}", shape_str(&x.shape), shape_str(&b.shape)));
                }
            }
            if x.dtype.is_pred() {
                return err(Blame::Operand(1), "'clamp' is not defined on pred");
            }
            one(x.clone())
        }
        Select => {
            let (p, x) = (operands[0], operands[1]);
            if !p.dtype.is_pred() {
                return err(Blame::Operand(0), format!("select's predicate must be pred, got {}", p.dtype));
            }
            if !p.is_scalar() && p.shape != x.shape {
                return err(Blame::Operand(0), format!("select's predicate must be a scalar or of shape {}, got {}", shape_str(&x.shape), shape_str(&p.shape)));
            }
            same_types(&cx, &[1, 2])?;
            one(x.clone())
        }
        Convert => {
            let w = cx.need_written()?;
            if w.shape != a.unwrap().shape {
                return err(Blame::ResultType, format!("convert keeps the shape: operand is {}, result type is {}", a.unwrap(), w));
            }
            one(w.clone())
        }
        BitcastConvert => {
            let w = cx.need_written()?;
            let a = a.unwrap();
            if w.shape != a.shape {
                return err(Blame::ResultType, format!("bitcast_convert keeps the shape: operand is {a}, result type is {w}"));
            }
            if w.dtype.bits() != a.dtype.bits() || w.dtype.is_pred() || a.dtype.is_pred() {
                return err(Blame::ResultType, format!("bitcast_convert needs two non-pred dtypes of the same width: {} is {} bits, {} is {} bits", a.dtype, a.dtype.bits(), w.dtype, w.dtype.bits()));
            }
            one(w.clone())
        }
        Constant => {
            let w = cx.need_written()?;
            one(w.clone())
        }
        Iota => {
            let w = cx.need_written()?;
            if w.dtype.is_pred() {
                return err(Blame::ResultType, "iota needs an integer or float dtype, not pred");
            }
            cx.dim("dim", w.rank())?;
            one(w.clone())
        }
        AxisIndex => {
            let w = cx.need_written()?;
            let axis = cx.ident("axis")?;
            if ctx.mesh.axis(&axis).is_none() {
                return err(Blame::Attr("axis"), format!("unknown mesh axis '{axis}'"));
            }
            if *w != TensorType::scalar(DType::I32) {
                return err(Blame::ResultType, format!("axis_index returns i32[], not {w}"));
            }
            one(w.clone())
        }
        Broadcast => {
            let w = cx.need_written()?;
            let a = a.unwrap();
            if w.dtype != a.dtype {
                return err(Blame::ResultType, format!("broadcast keeps the dtype: operand is {a}, result type is {w}"));
            }
            let dims = cx.ints("dims")?;
            if dims.len() != a.rank() {
                return err(Blame::Attr("dims"), format!("'dims' needs one entry per operand dimension ({}), got {}", a.rank(), dims.len()));
            }
            let dims = dims_check(&dims, w.rank(), "dims")?;
            for (i, &d) in dims.iter().enumerate() {
                if a.shape[i] != w.shape[d] && a.shape[i] != 1 {
                    return err(Blame::Attr("dims"), format!("operand dimension {i} (size {}) cannot broadcast to result dimension {d} (size {})", a.shape[i], w.shape[d]));
                }
            }
            one(w.clone())
        }
        Reshape => {
            let w = cx.need_written()?;
            let a = a.unwrap();
            if w.dtype != a.dtype || !same_element_count(&w.shape, &a.shape) {
                let count = |t: &TensorType| match t.shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d)) {
                    Some(n) => n.to_string(),
                    None => format!("more than {}", u64::MAX),
                };
                return err(Blame::ResultType, format!("reshape keeps the dtype and element count: {a} has {} elements, {w} has {}", count(a), count(w)));
            }
            one(w.clone())
        }
        Transpose => {
            let a = a.unwrap();
            let perm = cx.ints("perm")?;
            if perm.len() != a.rank() {
                return err(Blame::Attr("perm"), format!("'perm' must be a permutation of {} dimensions", a.rank()));
            }
            let perm = dims_check(&perm, a.rank(), "perm")?;
            one(TensorType::new(a.dtype, perm.iter().map(|&p| a.shape[p]).collect()))
        }
        Slice => {
            let a = a.unwrap();
            let r = a.rank();
            let start = cx.ints_len("start", r, 0)?;
            let limit = cx.ints_len("limit", r, 0)?;
            let stride = cx.ints_len("stride", r, 1)?;
            let mut shape = vec![];
            for d in 0..r {
                let (s, l) = (start[d] as u64, limit[d] as u64);
                if s > l || l > a.shape[d] {
                    return err(Blame::Attr("limit"), format!("slice of dimension {d} (size {}) needs 0 <= start <= limit <= size, got start {s}, limit {l}", a.shape[d]));
                }
                if s == l {
                    return err(Blame::Attr("limit"), format!("slice of dimension {d} is empty (start = limit = {s}); PIR arrays have positive dimensions"));
                }
                shape.push((l - s).div_ceil(stride[d] as u64));
            }
            one(TensorType::new(a.dtype, shape))
        }
        Concat => {
            let a = a.unwrap();
            let dim = cx.dim("dim", a.rank())?;
            let mut shape = a.shape.clone();
            for (i, t) in operands.iter().enumerate().skip(1) {
                let mismatch = t.dtype != a.dtype
                    || t.rank() != a.rank()
                    || (0..a.rank()).any(|d| d != dim && t.shape[d] != a.shape[d]);
                if mismatch {
                    return err(Blame::Operand(i), format!("concat operands must agree in dtype and in every dimension but {dim}: {a} vs {t}"));
                }
                shape[dim] = dim_size(shape[dim].checked_add(t.shape[dim]), Blame::Operand(i), "concat")?;
            }
            one(TensorType::new(a.dtype, shape))
        }
        DynamicSlice => {
            let a = a.unwrap();
            index_operands(&cx, 1, a.rank())?;
            let sizes = cx.ints_len("sizes", a.rank(), 1)?;
            for d in 0..a.rank() {
                if sizes[d] as u64 > a.shape[d] {
                    return err(Blame::Attr("sizes"), format!("slice size {} exceeds dimension {d} of size {}", sizes[d], a.shape[d]));
                }
            }
            one(TensorType::new(a.dtype, sizes.iter().map(|&s| s as u64).collect()))
        }
        DynamicUpdateSlice => {
            let a = a.unwrap();
            let u = operands[1];
            if u.dtype != a.dtype || u.rank() != a.rank() || (0..a.rank()).any(|d| u.shape[d] > a.shape[d]) {
                return err(Blame::Operand(1), format!("update {u} must have the operand's dtype and rank and fit inside {a}"));
            }
            index_operands(&cx, 2, a.rank())?;
            one(a.clone())
        }
        Pad => {
            let a = a.unwrap();
            let v = operands[1];
            if v.dtype != a.dtype || !v.is_scalar() {
                return err(Blame::Operand(1), format!("pad value must be a {}[] scalar, got {v}", a.dtype));
            }
            let r = a.rank();
            let low = cx.ints_len("low", r, i64::MIN)?;
            let high = cx.ints_len("high", r, i64::MIN)?;
            let interior = cx.ints_len("interior", r, 0)?;
            let mut shape = vec![];
            for d in 0..r {
                let n = a.shape[d] as i128;
                let size = low[d] as i128 + high[d] as i128 + n + (n - 1) * interior[d] as i128;
                if size <= 0 {
                    return err(Blame::Attr("low"), format!("padding dimension {d} gives size {size}; PIR arrays have positive dimensions"));
                }
                shape.push(dim_size(u64::try_from(size).ok(), Blame::Attr("high"), "pad")?);
            }
            one(TensorType::new(a.dtype, shape))
        }
        Reverse => {
            let a = a.unwrap();
            cx.dims("dims", a.rank())?;
            one(a.clone())
        }
        Reduce => {
            let a = a.unwrap();
            let dims = cx.dims("dims", a.rank())?;
            let kind = cx.ident("kind")?;
            if (kind == "and" || kind == "or") && a.dtype.is_float() {
                return err(Blame::Attr("kind"), format!("reduce kind '{kind}' needs an integer or pred operand, got {}", a.dtype));
            }
            let shape = (0..a.rank()).filter(|d| !dims.contains(d)).map(|d| a.shape[d]).collect();
            one(TensorType::new(a.dtype, shape))
        }
        Argmax | Argmin => {
            let a = a.unwrap();
            let dim = cx.dim("dim", a.rank())?;
            let dt = match cx.written1() {
                Some(w) if w.dtype == DType::I64 => DType::I64,
                Some(w) if w.dtype != DType::I32 => {
                    return err(Blame::ResultType, format!("'{}' returns i32 or i64, not {}", inst.op, w.dtype))
                }
                _ => DType::I32,
            };
            let shape = (0..a.rank()).filter(|&d| d != dim).map(|d| a.shape[d]).collect();
            one(TensorType::new(dt, shape))
        }
        DotGeneral => infer_dot(&cx),
        Convolution => infer_conv(&cx),
        ReduceWindow => {
            let a = a.unwrap();
            let shape = window_shape(&cx, a)?;
            cx.ident("kind")?;
            one(TensorType::new(a.dtype, shape))
        }
        SelectAndScatterAdd => {
            let (src, opnd) = (operands[0], operands[1]);
            if src.dtype != opnd.dtype {
                return err(Blame::Operand(0), format!("source dtype {} differs from operand dtype {}", src.dtype, opnd.dtype));
            }
            let shape = window_shape(&cx, opnd)?;
            if shape != src.shape {
                return err(Blame::Operand(0), format!("source shape {} must equal the window output shape {} of the operand", shape_str(&src.shape), shape_str(&shape)));
            }
            one(opnd.clone())
        }
        Gather => {
            let (t, idx) = (operands[0], operands[1]);
            let axis = cx.dim("axis", t.rank())?;
            if !idx.dtype.is_int() {
                return err(Blame::Operand(1), format!("gather indices must be integers, got {}", idx.dtype));
            }
            one(TensorType::new(t.dtype, gather_shape(t, idx, axis)))
        }
        ScatterAdd => {
            let (b, idx, upd) = (operands[0], operands[1], operands[2]);
            let axis = cx.dim("axis", b.rank())?;
            if !idx.dtype.is_int() {
                return err(Blame::Operand(1), format!("scatter_add indices must be integers, got {}", idx.dtype));
            }
            let want = gather_shape(b, idx, axis);
            if upd.dtype != b.dtype || upd.shape != want {
                return err(Blame::Operand(2), format!("updates must be {}{} (the matching gather's shape), got {upd}", b.dtype, shape_str(&want)));
            }
            one(b.clone())
        }
        Scatter => {
            let (b, idx, upd) = (operands[0], operands[1], operands[2]);
            let axis = cx.dim("axis", b.rank())?;
            cx.ident("kind")?;
            if !idx.dtype.is_int() {
                return err(Blame::Operand(1), format!("scatter indices must be integers, got {}", idx.dtype));
            }
            let want = gather_shape(b, idx, axis);
            if upd.dtype != b.dtype || upd.shape != want {
                return err(Blame::Operand(2), format!("updates must be {}{} (the matching gather's shape), got {upd}", b.dtype, shape_str(&want)));
            }
            one(b.clone())
        }
        Sort => {
            let a = a.unwrap();
            if a.rank() == 0 {
                return err(Blame::Operand(0), format!("sort needs operands of rank at least 1, got {a}"));
            }
            cx.dim("dim", a.rank())?;
            for (i, t) in operands.iter().enumerate().skip(1) {
                if t.shape != a.shape {
                    return err(Blame::Operand(i), format!("sort operands must all have the shape {}, operand {i} is {t}", shape_str(&a.shape)));
                }
            }
            let keys = cx.int("num_keys")?;
            if keys < 1 || keys as usize > n {
                return err(Blame::Attr("num_keys"), format!("'num_keys' must be between 1 and the number of operands ({n}), got {keys}"));
            }
            Ok(operands.iter().map(|t| (*t).clone()).collect())
        }
        TopK => {
            let a = a.unwrap();
            let Some(&last) = a.shape.last() else {
                return err(Blame::Operand(0), format!("top_k needs an operand of rank at least 1, got {a}"));
            };
            let k = cx.int("k")?;
            if k < 1 || k as u64 > last {
                return err(Blame::Attr("k"), format!("'k' must be between 1 and the last dimension's size {last}, got {k}"));
            }
            let mut shape = a.shape.clone();
            *shape.last_mut().unwrap() = k as u64;
            Ok(vec![TensorType::new(a.dtype, shape.clone()), TensorType::new(DType::I32, shape)])
        }
        AllReduce => {
            cx.axes("axes")?;
            cx.ident("kind")?;
            one(a.unwrap().clone())
        }
        AllGather => {
            let a = a.unwrap();
            let n = cx.group(&cx.axes("axes")?);
            let dim = cx.dim("dim", a.rank())?;
            let mut t = a.clone();
            t.shape[dim] = dim_size(t.shape[dim].checked_mul(n), Blame::Attr("axes"), "all_gather")?;
            one(t)
        }
        ReduceScatter => {
            let a = a.unwrap();
            let n = cx.group(&cx.axes("axes")?);
            let dim = cx.dim("dim", a.rank())?;
            cx.ident("kind")?;
            if a.shape[dim] % n != 0 {
                return err(Blame::Attr("dim"), format!("reduce_scatter: dimension {dim} of size {} is not divisible by the group size {n}", a.shape[dim]));
            }
            let mut t = a.clone();
            t.shape[dim] /= n;
            one(t)
        }
        AllToAll => {
            let a = a.unwrap();
            let n = cx.group(&cx.axes("axes")?);
            let sd = cx.dim("split_dim", a.rank())?;
            let cd = cx.dim("concat_dim", a.rank())?;
            if a.shape[sd] % n != 0 {
                return err(Blame::Attr("split_dim"), format!("all_to_all: split dimension {sd} of size {} is not divisible by the group size {n}", a.shape[sd]));
            }
            let mut t = a.clone();
            t.shape[sd] /= n;
            t.shape[cd] = dim_size(t.shape[cd].checked_mul(n), Blame::Attr("concat_dim"), "all_to_all")?;
            one(t)
        }
        CollectivePermute => {
            cx.axes("axes")?;
            cx.int("shift")?;
            one(a.unwrap().clone())
        }
        _ => err(Blame::Op, format!("no type rule for '{}'", inst.op)),
    }
}

/// Operands `first..` are `rank` integer scalars (dynamic slice starts).
fn index_operands(cx: &Cx, first: usize, rank: usize) -> R<()> {
    let got = cx.ops.len() - first;
    if got != rank {
        return err(Blame::Op, format!("'{}' needs {rank} start indices (one per dimension), got {got}", cx.inst.op));
    }
    for i in first..cx.ops.len() {
        let t = cx.ops[i];
        if !t.is_scalar() || !t.dtype.is_int() {
            return err(Blame::Operand(i), format!("start indices must be integer scalars, got {t}"));
        }
    }
    Ok(())
}

pub fn gather_shape(t: &TensorType, idx: &TensorType, axis: usize) -> Vec<u64> {
    let mut s = t.shape[..axis].to_vec();
    s.extend_from_slice(&idx.shape);
    s.extend_from_slice(&t.shape[axis + 1..]);
    s
}

fn window_shape(cx: &Cx, a: &TensorType) -> R<Vec<u64>> {
    let r = a.rank();
    let window = cx.ints_len("window", r, 1)?;
    let strides = cx.ints_len("strides", r, 1)?;
    let padding = cx.pairs_len("padding", r)?;
    let mut out = vec![];
    for d in 0..r {
        let padded = a.shape[d] as i128 + padding[d].0 as i128 + padding[d].1 as i128;
        let w = window[d] as i128;
        if padded < w {
            return err(Blame::Attr("window"), format!("window {w} does not fit dimension {d} of padded size {padded}"));
        }
        let size = (padded - w) / strides[d] as i128 + 1;
        out.push(dim_size(u64::try_from(size).ok(), Blame::Attr("padding"), "window")?);
    }
    Ok(out)
}

/// May a contraction over `from` operands produce `to` (equal, or wider of the same kind)?
fn widens(from: DType, to: DType) -> bool {
    if from == to {
        return true;
    }
    let fl = |d: DType| match d {
        DType::F16 | DType::BF16 => 1,
        DType::F32 => 2,
        DType::F64 => 3,
        _ => 0,
    };
    if from.is_float() && to.is_float() {
        return fl(to) > fl(from);
    }
    (from.is_signed_int() && to.is_signed_int() || from.is_unsigned_int() && to.is_unsigned_int())
        && to.bits() > from.bits()
}

fn result_dtype(cx: &Cx, operand: DType) -> R<DType> {
    match cx.written1() {
        Some(w) if widens(operand, w.dtype) => Ok(w.dtype),
        Some(w) => err(Blame::ResultType, format!("'{}' of {operand} operands cannot produce {}: the result dtype must equal the operands' or be wider of the same kind", cx.inst.op, w.dtype)),
        None => Ok(operand),
    }
}

fn infer_dot(cx: &Cx) -> R<Vec<TensorType>> {
    let (l, r) = (cx.ops[0], cx.ops[1]);
    if l.dtype != r.dtype {
        return err(Blame::Operand(1), format!("dot_general operand dtypes must match: {} vs {}", l.dtype, r.dtype));
    }
    let lb = cx.dims("lhs_batch", l.rank())?;
    let rb = cx.dims("rhs_batch", r.rank())?;
    let lc = cx.dims("lhs_contract", l.rank())?;
    let rc = cx.dims("rhs_contract", r.rank())?;
    if lb.len() != rb.len() {
        return err(Blame::Attr("rhs_batch"), format!("lhs_batch has {} dims, rhs_batch {}", lb.len(), rb.len()));
    }
    if lc.len() != rc.len() {
        return err(Blame::Attr("rhs_contract"), format!("lhs_contract has {} dims, rhs_contract {}", lc.len(), rc.len()));
    }
    for (name, a, b) in [("lhs_batch", &lb, &rb), ("lhs_contract", &lc, &rc)] {
        for (&x, &y) in a.iter().zip(b.iter()) {
            if l.shape[x] != r.shape[y] {
                return err(Blame::Attr(if name == "lhs_batch" { "lhs_batch" } else { "lhs_contract" }), format!("{name}: lhs dimension {x} (size {}) does not match rhs dimension {y} (size {})", l.shape[x], r.shape[y]));
            }
        }
    }
    if let Some(d) = lb.iter().find(|d| lc.contains(d)) {
        return err(Blame::Attr("lhs_contract"), format!("lhs dimension {d} is both batch and contracting"));
    }
    if let Some(d) = rb.iter().find(|d| rc.contains(d)) {
        return err(Blame::Attr("rhs_contract"), format!("rhs dimension {d} is both batch and contracting"));
    }
    let mut shape: Vec<u64> = lb.iter().map(|&d| l.shape[d]).collect();
    shape.extend((0..l.rank()).filter(|d| !lb.contains(d) && !lc.contains(d)).map(|d| l.shape[d]));
    shape.extend((0..r.rank()).filter(|d| !rb.contains(d) && !rc.contains(d)).map(|d| r.shape[d]));
    Ok(vec![TensorType::new(result_dtype(cx, l.dtype)?, shape)])
}

/// Parsed convolution dimension labels, e.g. `b01f_01io->b01f`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvLabels {
    pub in_batch: usize,
    pub in_feature: usize,
    pub in_spatial: Vec<usize>,
    pub k_in: usize,
    pub k_out: usize,
    pub k_spatial: Vec<usize>,
    pub out_batch: usize,
    pub out_feature: usize,
    pub out_spatial: Vec<usize>,
}

/// Parses XLA's dimension-label string for a convolution of rank-`rank` operands.
pub fn parse_conv_labels(s: &str, rank: usize) -> Result<ConvLabels, String> {
    let (ins, out) = s.split_once("->").ok_or_else(|| format!("convolution dims \"{s}\" must look like \"b01f_01io->b01f\""))?;
    let (lhs, rhs) = ins.split_once('_').ok_or_else(|| format!("convolution dims \"{s}\" must look like \"b01f_01io->b01f\""))?;
    let ns = rank.saturating_sub(2);
    let part = |p: &str, what: &str, a: char, b: char| -> Result<(usize, usize, Vec<usize>), String> {
        let chars: Vec<char> = p.chars().collect();
        if chars.len() != rank {
            return Err(format!("convolution {what} labels \"{p}\" have {} entries, the operands have rank {rank}", chars.len()));
        }
        let find = |c: char| -> Result<usize, String> {
            let n = chars.iter().filter(|&&x| x == c).count();
            if n != 1 {
                return Err(format!("convolution {what} labels \"{p}\" must contain '{c}' exactly once"));
            }
            Ok(chars.iter().position(|&x| x == c).unwrap())
        };
        let (ia, ib) = (find(a)?, find(b)?);
        let mut sp = vec![];
        for k in 0..ns {
            let c = char::from_digit(k as u32, 10).filter(|_| k < 10).ok_or("too many spatial dimensions")?;
            sp.push(find(c)?);
        }
        Ok((ia, ib, sp))
    };
    let (in_batch, in_feature, in_spatial) = part(lhs, "input", 'b', 'f')?;
    let (k_in, k_out, k_spatial) = part(rhs, "kernel", 'i', 'o')?;
    let (out_batch, out_feature, out_spatial) = part(out, "output", 'b', 'f')?;
    Ok(ConvLabels { in_batch, in_feature, in_spatial, k_in, k_out, k_spatial, out_batch, out_feature, out_spatial })
}

fn infer_conv(cx: &Cx) -> R<Vec<TensorType>> {
    let (x, k) = (cx.ops[0], cx.ops[1]);
    if x.dtype != k.dtype {
        return err(Blame::Operand(1), format!("convolution operand dtypes must match: {} vs {}", x.dtype, k.dtype));
    }
    if x.rank() != k.rank() || x.rank() < 2 {
        return err(Blame::Operand(1), format!("convolution input and kernel must have the same rank (at least 2): {x} vs {k}"));
    }
    let labels = match cx.attr("dims")? {
        AttrValue::Str(s) => parse_conv_labels(&s, x.rank()).or_else(|m| err(Blame::Attr("dims"), m))?,
        _ => return err(Blame::Attr("dims"), "'dims' must be a string like \"b01f_01io->b01f\""),
    };
    let ns = x.rank() - 2;
    let strides = cx.ints_len("window_strides", ns, 1)?;
    let padding = cx.pairs_len("padding", ns)?;
    let lhs_dil = cx.ints_len("lhs_dilation", ns, 1)?;
    let rhs_dil = cx.ints_len("rhs_dilation", ns, 1)?;
    let fgc = cx.int("feature_group_count")?;
    let bgc = cx.int("batch_group_count")?;
    if fgc < 1 {
        return err(Blame::Attr("feature_group_count"), "feature_group_count must be at least 1");
    }
    if bgc < 1 {
        return err(Blame::Attr("batch_group_count"), "batch_group_count must be at least 1");
    }
    if fgc > 1 && bgc > 1 {
        return err(Blame::Attr("batch_group_count"), "feature_group_count and batch_group_count cannot both exceed 1");
    }
    let (fgc, bgc) = (fgc as u64, bgc as u64);
    let batch = x.shape[labels.in_batch];
    let in_f = x.shape[labels.in_feature];
    let k_in = k.shape[labels.k_in];
    let k_out = k.shape[labels.k_out];
    if in_f as u128 != k_in as u128 * fgc as u128 {
        return err(Blame::Operand(1), format!("convolution: input feature dimension {in_f} is not kernel input feature {k_in} × feature_group_count {fgc}"));
    }
    if k_out % fgc != 0 {
        return err(Blame::Operand(1), format!("convolution: kernel output feature {k_out} is not divisible by feature_group_count {fgc}"));
    }
    if batch % bgc != 0 {
        return err(Blame::Operand(0), format!("convolution: batch {batch} is not divisible by batch_group_count {bgc}"));
    }
    if k_out % bgc != 0 {
        return err(Blame::Operand(1), format!("convolution: kernel output feature {k_out} is not divisible by batch_group_count {bgc}"));
    }
    let mut shape = vec![0u64; x.rank()];
    shape[labels.out_batch] = batch / bgc;
    shape[labels.out_feature] = k_out;
    for s in 0..ns {
        let n = x.shape[labels.in_spatial[s]] as i128;
        let padded = (n - 1) * lhs_dil[s] as i128 + 1 + padding[s].0 as i128 + padding[s].1 as i128;
        let w = (k.shape[labels.k_spatial[s]] as i128 - 1) * rhs_dil[s] as i128 + 1;
        if padded < w {
            return err(Blame::Attr("padding"), format!("convolution: spatial dimension {s} has padded size {padded}, smaller than the dilated window {w}"));
        }
        let size = (padded - w) / strides[s] as i128 + 1;
        shape[labels.out_spatial[s]] = dim_size(u64::try_from(size).ok(), Blame::Attr("padding"), "convolution")?;
    }
    Ok(vec![TensorType::new(result_dtype(cx, x.dtype)?, shape)])
}

/// The type an argument must have at a call site for a callee parameter.
fn call_site_type(cx: &Cx, t: &TensorType, s: Option<&Sharding>, callee: FuncKind) -> R<TensorType> {
    if cx.ctx.caller == FuncKind::Global && callee == FuncKind::Spmd {
        checked_global_type(t, s, cx.ctx.mesh).map_or_else(
            || err(Blame::Op, format!("the global view of {t} is too large: a dimension times its mesh axes' sizes exceeds {}", u64::MAX)),
            Ok,
        )
    } else {
        Ok(t.clone())
    }
}

fn type_list(ts: &[TensorType]) -> String {
    format!("({})", ts.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", "))
}

/// `while`, `scan` and `switch` (section 7.1): the bodies' signatures against
/// the carried and scanned operands. A mismatch blames the body's name in the
/// statement ([`Blame::Callee`]) and names the parameter or result by position.
fn infer_control(cx: &Cx) -> R<Vec<TensorType>> {
    let op = cx.inst.op;
    let sigs = &cx.ctx.callees;
    let want = match op {
        Opcode::While => 2,
        Opcode::Scan => 1,
        _ => cx.inst.callees.len().max(1),
    };
    if sigs.len() != want || cx.inst.callees.len() != want {
        return err(Blame::Op, match op {
            Opcode::While => "'while' names a condition and a body: while @cond, @body(...)".to_string(),
            Opcode::Scan => "'scan' names one step function: scan @step(...)".to_string(),
            _ => "'switch' names one or more branches: switch %i, @b0, @b1(...)".to_string(),
        });
    }
    for (k, s) in sigs.iter().enumerate() {
        if s.kind != cx.ctx.caller {
            let (want, got, hint) = match cx.ctx.caller {
                FuncKind::Global => ("a func", "a spmd func", " (call the spmd func from inside a func body instead)"),
                FuncKind::Spmd => ("a spmd func", "a func", " (inside a spmd func, bodies are written in the per-device view)"),
            };
            return err(Blame::Callee(k), format!("the body @{} of '{op}' must be {want} like the function it is in, it is {got}{hint}", s.name));
        }
    }
    let args: Vec<TensorType> = cx.ops.iter().map(|t| (*t).clone()).collect();
    if args.is_empty() && op != Opcode::Switch {
        return err(Blame::Op, format!("'{op}' needs at least one operand (a body sees only its parameters: loop-invariant values ride as carries it returns unchanged)"));
    }
    let body = |k: usize| Body { k, op, sig: sigs[k] };
    match op {
        Opcode::While => {
            let carried = |i: usize| format!("carried value {i}");
            let (cond, step) = (body(0), body(1));
            cond.takes(&args, "the carried values", &carried)?;
            cond.returns(&[TensorType::scalar(DType::Pred)], "the predicate", &|_| "the predicate".to_string())?;
            step.takes(&args, "the carried values", &carried)?;
            step.returns(&args, "the carried values back", &carried)?;
            Ok(args)
        }
        Opcode::Scan => {
            let length = cx.int("length")?;
            if length < 1 {
                return err(Blame::Attr("length"), format!("'length' must be at least 1, got {length}"));
            }
            let carries = cx.int("carries")?;
            if carries < 0 || carries as usize > args.len() {
                return err(Blame::Attr("carries"), format!("'carries' must be between 0 and the number of operands ({}), got {carries}", args.len()));
            }
            let c = carries as usize;
            let mut step_params: Vec<TensorType> = args[..c].to_vec();
            for (i, t) in args.iter().enumerate().skip(c) {
                if t.rank() == 0 || t.shape[0] != length as u64 {
                    let has = if t.rank() == 0 { "is a scalar".to_string() } else { format!("has size {}", t.shape[0]) };
                    return err(Blame::Operand(i), format!("scanned operand {i} ({t}) must have dimension 0 of size length={length}, it {has}"));
                }
                let mut sl = t.clone();
                sl.shape.remove(0);
                step_params.push(sl);
            }
            let step = body(0);
            let what = |i: usize| if i < c { format!("carry {i}") } else { format!("a slice of scanned operand {i} ({} without dimension 0)", args[i]) };
            step.takes(&step_params, "the carries and one slice of each scanned operand", &what)?;
            let res: Vec<TensorType> = step.sig.results.iter().map(|(t, _)| t.clone()).collect();
            if res.len() < c {
                return err(step.blame(), format!("@{} returns {} result{}, but 'scan' needs the {c} carr{} {} first, then one slice of each output", step.sig.name, res.len(), plural(res.len()), if c == 1 { "y" } else { "ies" }, type_list(&args[..c])));
            }
            step.returns_prefix(&args[..c], &|i| format!("carry {i}"))?;
            let mut out = res[..c].to_vec();
            for t in &res[c..] {
                let mut st = t.clone();
                st.shape.insert(0, length as u64);
                out.push(st);
            }
            Ok(out)
        }
        _ => {
            let Some(idx) = args.first() else {
                return err(Blame::Op, "'switch' needs an index operand");
            };
            if !idx.is_scalar() || !idx.dtype.is_int() {
                return err(Blame::Operand(0), format!("the switch index must be an integer scalar, got {idx}"));
            }
            let rest = &args[1..];
            let first = body(0);
            let r0: Vec<TensorType> = first.sig.results.iter().map(|(t, _)| t.clone()).collect();
            for k in 0..sigs.len() {
                let b = body(k);
                b.takes(rest, "the switch arguments", &|i| format!("argument {i}"))?;
                if k > 0 {
                    b.returns(&r0, &format!("branch @{}'s results", first.sig.name), &|i| format!("branch @{}'s result {i}", first.sig.name))?;
                }
            }
            Ok(r0)
        }
    }
}

/// Body `k` of a control-flow op, for checking its signature.
struct Body<'a> {
    k: usize,
    op: Opcode,
    sig: &'a CalleeSig,
}

impl Body<'_> {
    fn blame(&self) -> Blame {
        Blame::Callee(self.k)
    }
    /// Its parameters are `want`; `what(i)` says what the op passes at position i.
    fn takes(&self, want: &[TensorType], all: &str, what: &dyn Fn(usize) -> String) -> R<()> {
        let got: Vec<&TensorType> = self.sig.params.iter().map(|(t, _)| t).collect();
        if got.len() != want.len() {
            return err(self.blame(), format!("@{} takes {} parameter{}, but '{}' passes it {}: {all} {}", self.sig.name, got.len(), plural(got.len()), self.op, want.len(), type_list(want)));
        }
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            if *g != w {
                return err(self.blame(), format!("parameter {i} of @{} is {g}, but '{}' passes it {}: {w}", self.sig.name, self.op, what(i)));
            }
        }
        Ok(())
    }
    /// Its results are `want`; `what(i)` says what result i must be.
    fn returns(&self, want: &[TensorType], all: &str, what: &dyn Fn(usize) -> String) -> R<()> {
        let n = self.sig.results.len();
        if n != want.len() {
            return err(self.blame(), format!("@{} returns {n} result{}, but '{}' needs {}: {all} {}", self.sig.name, plural(n), self.op, want.len(), type_list(want)));
        }
        self.returns_prefix(want, what)
    }
    /// Its first `want.len()` results are `want` (the caller checked there are as many).
    fn returns_prefix(&self, want: &[TensorType], what: &dyn Fn(usize) -> String) -> R<()> {
        for (i, ((g, _), w)) in self.sig.results.iter().zip(want).enumerate() {
            if g != w {
                return err(self.blame(), format!("result {i} of @{} is {g}, but it must be {}: {w}", self.sig.name, what(i)));
            }
        }
        Ok(())
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn infer_callee(cx: &Cx) -> R<Vec<TensorType>> {
    let Some(sig) = cx.ctx.callees.first().copied() else {
        return err(Blame::Op, "unknown function");
    };
    let op = cx.inst.op;
    let params: Vec<TensorType> =
        sig.params.iter().map(|(t, s)| call_site_type(cx, t, s.as_ref(), sig.kind)).collect::<R<_>>()?;
    let results: Vec<TensorType> =
        sig.results.iter().map(|(t, s)| call_site_type(cx, t, s.as_ref(), sig.kind)).collect::<R<_>>()?;
    if cx.ops.len() != params.len() {
        return err(Blame::Op, format!("@{} takes {} argument{}, got {}", sig.name, params.len(), if params.len() == 1 { "" } else { "s" }, cx.ops.len()));
    }
    if op == Opcode::Vmap {
        return infer_vmap(cx, sig, &params, &results);
    }
    for (i, (p, a)) in params.iter().zip(cx.ops).enumerate() {
        if p != *a {
            return err(Blame::Operand(i), format!("argument {i} of @{} must be {p}, got {a}", sig.name));
        }
    }
    if op == Opcode::Call {
        return Ok(results);
    }
    // grad
    if results.len() != 1 || !results[0].is_scalar() || !results[0].dtype.is_float() {
        let got = results.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
        return err(Blame::Op, format!("grad needs @{} to return one float scalar, it returns ({got})", sig.name));
    }
    let wrt = cx.ints("wrt")?;
    if wrt.is_empty() {
        return err(Blame::Attr("wrt"), "'wrt' names no operand");
    }
    let mut out = vec![results[0].clone()];
    for (k, &w) in wrt.iter().enumerate() {
        if w < 0 || w as usize >= cx.ops.len() {
            return err(Blame::Attr("wrt"), format!("'wrt' entry {w} is out of range: @{} has {} parameters", sig.name, cx.ops.len()));
        }
        if wrt[..k].contains(&w) {
            return err(Blame::Attr("wrt"), format!("'wrt' lists operand {w} twice"));
        }
        let t = cx.ops[w as usize];
        if !t.dtype.is_float() {
            return err(Blame::Attr("wrt"), format!("cannot differentiate with respect to operand {w} of dtype {}: only float values have gradients", t.dtype));
        }
        out.push(t.clone());
    }
    Ok(out)
}

fn infer_vmap(cx: &Cx, sig: &CalleeSig, params: &[TensorType], results: &[TensorType]) -> R<Vec<TensorType>> {
    let in_dims: Vec<Option<i64>> = match cx.attr("in_dims")? {
        AttrValue::List(l) => l
            .iter()
            .map(|v| match v {
                AttrValue::Int(i) => Ok(Some(*i)),
                AttrValue::Ident(s) if s == "none" => Ok(None),
                _ => err(Blame::Attr("in_dims"), "'in_dims' entries are integers or none"),
            })
            .collect::<R<_>>()?,
        _ => return err(Blame::Attr("in_dims"), "'in_dims' must be a list"),
    };
    if in_dims.len() != cx.ops.len() {
        return err(Blame::Attr("in_dims"), format!("'in_dims' needs one entry per operand ({}), got {}", cx.ops.len(), in_dims.len()));
    }
    let out_dims = cx.ints("out_dims")?;
    if out_dims.len() != results.len() {
        return err(Blame::Attr("out_dims"), format!("'out_dims' has {} entries, @{} has {} results", out_dims.len(), sig.name, results.len()));
    }
    let mut batch: Option<u64> = None;
    for (i, (a, d)) in cx.ops.iter().zip(&in_dims).enumerate() {
        let expect = match d {
            None => (*a).clone(),
            Some(d) => {
                if *d < 0 || *d as usize >= a.rank() {
                    return err(Blame::Attr("in_dims"), format!("in_dims entry {d} is out of range for operand {i} of rank {}", a.rank()));
                }
                let n = a.shape[*d as usize];
                if let Some(b) = batch {
                    if b != n {
                        return err(Blame::Operand(i), format!("vmap: operand {i} has mapped size {n}, but an earlier mapped operand has {b}"));
                    }
                }
                batch = Some(n);
                let mut t = (*a).clone();
                t.shape.remove(*d as usize);
                t
            }
        };
        if expect != params[i] {
            return err(Blame::Operand(i), format!("vmap: operand {i} without its mapped dimension is {expect}, @{} expects {}", sig.name, params[i]));
        }
    }
    let Some(b) = batch else {
        return err(Blame::Attr("in_dims"), "vmap needs at least one mapped operand (an integer in in_dims)");
    };
    let mut out = vec![];
    for (r, &d) in results.iter().zip(&out_dims) {
        if d < 0 || d as usize > r.rank() {
            return err(Blame::Attr("out_dims"), format!("out_dims entry {d} is out of range for a result of rank {}", r.rank()));
        }
        let mut t = r.clone();
        t.shape.insert(d as usize, b);
        out.push(t);
    }
    Ok(out)
}
