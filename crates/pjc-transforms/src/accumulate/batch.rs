//! Which values of a loss function carry the batch, and the function retyped
//! for one micro-batch (`--accumulate K`, `accumulate/mod.rs`).
//!
//! Every value gets a role, forward in program order from the batch
//! parameters (dimension 0 is the batch):
//! - **batched**: one dimension holds the batch as its major factor (size
//!   B·inner, inner 1 unless a reshape merged the batch with a minor
//!   dimension: `[B,T,D] -> [B*T,D]`);
//! - **additive**: a sum over the batch (a `reduce {kind=sum}` or a
//!   contraction over the batch dimension), and anything linear in such sums
//!   alone: adding two of them, scaling one by a batch-independent value,
//!   negating, reshaping;
//! - **free**: independent of the batch.
//!
//! The loss must be additive: then the micro-batches' losses (and, the
//! gradient being linear, their gradients) add up exactly, up to float
//! reassociation, to the full batch's. The function keeps its constants, so a
//! mean's division by the full batch size stays and the micro-batch results
//! are summed, not averaged. What would not add up is an error naming the
//! op: a max over the batch, a sum over it used non-linearly (batch
//! statistics), a batch-independent term added to the loss (counted K times),
//! an op whose rule this analysis does not have.
//!
//! A batch-independent operand of an elementwise op with a batched one (a
//! constant `[B,64]` of zeros, a broadcast to the batch's shape) is batched
//! too; the analysis marks it and runs again, so its definition (a splat
//! constant, an iota along another dimension, a broadcast) is retyped.

use crate::TransformError;
use pjc_ir::attrs::Attrs;
use pjc_ir::{Function, Inst, Opcode, ReduceKind, Value, ValueDef};
use std::collections::HashMap;

/// Where a batched value holds the batch: dimension `dim`, of size
/// B·`inner`, the batch index its major part.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct BatchDim {
    pub dim: usize,
    pub inner: u64,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Role {
    Batched(BatchDim),
    Additive,
    Free,
}

/// The analysis of one function for batch size `b` with batch parameters
/// `params` (positions).
struct Analysis<'f> {
    f: &'f Function,
    b: u64,
    roles: HashMap<Value, Role>,
    /// Free-looking values that must be batched (see the module doc).
    forced: HashMap<Value, BatchDim>,
    what: String,
}

/// What the analysis found out: a restart with more forced values, or an error.
enum Stop {
    Force(Value, BatchDim),
    Error(TransformError),
}

impl<'f> Analysis<'f> {
    fn err(&self, i: Inst, msg: String) -> Stop {
        let d = &self.f.insts[i];
        let name = d.results.first().map(|&r| format!("%{} = ", self.f.values[r].name)).unwrap_or_default();
        Stop::Error(TransformError { span: d.span, msg: format!("unsupported: {}: in @{}, {name}{} {msg}", self.what, self.f.name, d.op) })
    }

    fn role(&self, v: Value) -> Role {
        self.roles.get(&v).copied().unwrap_or(Role::Free)
    }

    fn run(&mut self, params: &[usize]) -> Result<(), Stop> {
        self.roles.clear();
        for &p in params {
            self.roles.insert(self.f.params[p], Role::Batched(BatchDim { dim: 0, inner: 1 }));
        }
        for &i in &self.f.body {
            let d = &self.f.insts[i];
            let roles = self.inst(i)?;
            for (&r, role) in d.results.iter().zip(roles) {
                self.roles.insert(r, role);
            }
        }
        Ok(())
    }

    /// The result roles of instruction `i`.
    fn inst(&self, i: Inst) -> Result<Vec<Role>, Stop> {
        let f = self.f;
        let d = &f.insts[i];
        let n = d.results.len();
        let ops: Vec<Role> = d.operands.iter().map(|&o| self.role(o)).collect();
        let ty = |v: Value| &f.values[v].ty;
        if let Some(&bd) = d.results.first().and_then(|r| self.forced.get(r)) {
            // Retypable definitions only.
            let ok = match d.op {
                Opcode::Constant => d.literal.as_ref().is_some_and(|l| l.shape.is_empty()),
                Opcode::Iota => Attrs::new(d, &[]).index("dim").is_ok_and(|k| k != bd.dim),
                Opcode::Broadcast => {
                    let dims = Attrs::new(d, &[ty(d.operands[0])]).indices("dims").unwrap_or_default();
                    match dims.iter().position(|&x| x == bd.dim) {
                        None => ops[0] == Role::Free,
                        Some(k) => ops[0] == Role::Batched(BatchDim { dim: k, inner: bd.inner }),
                    }
                }
                _ => ops.iter().all(|r| *r == Role::Batched(bd)) && d.op.def().elementwise,
            };
            return if ok { Ok(vec![Role::Batched(bd); n]) } else { Err(self.err(i, "has the batch's shape but cannot be made one micro-batch's".into())) };
        }
        if ops.iter().all(|r| *r == Role::Free) {
            return Ok(vec![Role::Free; n]);
        }
        if !d.callees.is_empty() {
            return Err(self.err(i, format!("calls @{} with the batch: micro-batching sees through straight-line code only", d.callees.join(", @"))));
        }
        let additive = ops.contains(&Role::Additive);
        let batched: Vec<(usize, BatchDim)> = ops.iter().enumerate().filter_map(|(k, r)| if let Role::Batched(b) = r { Some((k, *b)) } else { None }).collect();
        if additive {
            let free = |k: usize| ops[k] == Role::Free;
            let ok = match d.op {
                Opcode::Add | Opcode::Sub if ops.iter().all(|r| *r == Role::Additive) => true,
                Opcode::Add | Opcode::Sub if batched.is_empty() => {
                    return Err(self.err(i, "adds a term that does not depend on the batch to a sum over it: K micro-batches would count it K times".into()))
                }
                Opcode::Mul => free(0) || free(1),
                Opcode::Div => free(1),
                Opcode::Neg | Opcode::Reshape | Opcode::Transpose | Opcode::Broadcast => true,
                Opcode::Convert => ty(d.operands[0]).dtype.is_float() && ty(d.results[0]).dtype.is_float(),
                _ => false,
            };
            if !ok {
                return Err(self.err(i, "uses a sum over the batch non-linearly: the micro-batches' results would not add up to the full batch's".into()));
            }
            return Ok(vec![Role::Additive; n]);
        }
        let bd = batched[0].1;
        let one = |b: BatchDim| Ok(vec![Role::Batched(b); n]);
        let attrs = Attrs::new(d, &d.operands.iter().map(|&o| ty(o)).collect::<Vec<_>>());
        let bad = |msg: &str| Err(self.err(i, msg.to_string()));
        match d.op {
            op if op.def().elementwise => {
                if batched.iter().any(|(_, b)| *b != bd) {
                    return bad("combines operands that hold the batch in different dimensions");
                }
                let shape = &ty(d.operands[batched[0].0]).shape;
                for (k, &o) in d.operands.iter().enumerate() {
                    if ops[k] == Role::Free && &ty(o).shape == shape {
                        return Err(Stop::Force(o, bd));
                    }
                }
                one(bd)
            }
            Opcode::Broadcast => match attrs.indices("dims") {
                Ok(dims) => one(BatchDim { dim: dims[bd.dim], inner: bd.inner }),
                Err(_) => bad("has no dims"),
            },
            Opcode::Transpose => match attrs.indices("perm") {
                Ok(perm) => one(BatchDim { dim: perm.iter().position(|&p| p == bd.dim).unwrap_or(0), inner: bd.inner }),
                Err(_) => bad("has no perm"),
            },
            Opcode::Reshape => match reshaped(&ty(d.operands[0]).shape, &ty(d.results[0]).shape, bd, self.b) {
                Some(b) => one(b),
                None => bad("splits the batch dimension or mixes it with the dimensions before it"),
            },
            Opcode::Reduce => {
                let dims = attrs.indices("dims").unwrap_or_default();
                if dims.contains(&bd.dim) {
                    if attrs.reduce_kind().ok() != Some(ReduceKind::Sum) {
                        return bad("reduces over the batch with another kind than sum: the micro-batches' results would not add up to the full batch's");
                    }
                    return Ok(vec![Role::Additive; n]);
                }
                one(BatchDim { dim: bd.dim - dims.iter().filter(|&&x| x < bd.dim).count(), inner: bd.inner })
            }
            Opcode::DotGeneral => self.dot(i, &attrs, &ops),
            Opcode::Gather if batched.len() == 1 && batched[0].0 == 1 => match attrs.index("axis") {
                Ok(axis) => one(BatchDim { dim: axis + bd.dim, inner: bd.inner }),
                Err(_) => bad("has no axis"),
            },
            Opcode::Slice => {
                let (start, limit, stride) = (attrs.indices("start"), attrs.indices("limit"), attrs.indices("stride"));
                let full = ty(d.operands[0]).shape[bd.dim] as usize;
                match (start, limit, stride) {
                    (Ok(s), Ok(l), Ok(t)) if s[bd.dim] == 0 && l[bd.dim] == full && t[bd.dim] == 1 => one(bd),
                    _ => bad("slices the batch dimension"),
                }
            }
            Opcode::Pad if batched.len() == 1 && batched[0].0 == 0 => {
                let zero = |a: &str| attrs.ints(a).is_ok_and(|v| v[bd.dim] == 0);
                if zero("low") && zero("high") && zero("interior") { one(bd) } else { bad("pads the batch dimension") }
            }
            Opcode::Concat if attrs.index("dim").is_ok_and(|k| k != bd.dim) => {
                for (k, &o) in d.operands.iter().enumerate() {
                    if ops[k] == Role::Free {
                        return Err(Stop::Force(o, bd));
                    }
                }
                if batched.iter().any(|(_, b)| *b != bd) { bad("joins operands that hold the batch in different dimensions") } else { one(bd) }
            }
            Opcode::Reverse if !attrs.indices("dims").unwrap_or_default().contains(&bd.dim) => one(bd),
            Opcode::Argmax | Opcode::Argmin => match attrs.index("dim") {
                Ok(k) if k != bd.dim => one(BatchDim { dim: bd.dim - usize::from(k < bd.dim), inner: bd.inner }),
                _ => bad("looks along the batch dimension"),
            },
            _ => bad("has no micro-batching rule for operands that hold the batch"),
        }
    }

    fn dot(&self, i: Inst, attrs: &Attrs, ops: &[Role]) -> Result<Vec<Role>, Stop> {
        let f = self.f;
        let d = &f.insts[i];
        let get = |n: &str| attrs.indices(n).unwrap_or_default();
        let (lb, rb, lc, rc) = (get("lhs_batch"), get("rhs_batch"), get("lhs_contract"), get("rhs_contract"));
        let rank = |k: usize| f.values[d.operands[k]].ty.shape.len();
        let free = |r: usize, batch: &[usize], contract: &[usize]| (0..r).filter(|x| !batch.contains(x) && !contract.contains(x)).collect::<Vec<_>>();
        let (lf, rf) = (free(rank(0), &lb, &lc), free(rank(1), &rb, &rc));
        let bd = |k: usize| if let Role::Batched(b) = ops[k] { Some(b) } else { None };
        let out = match (bd(0), bd(1)) {
            (Some(l), Some(r)) => {
                let pair = |xs: &[usize], ys: &[usize]| xs.iter().position(|&x| x == l.dim).is_some_and(|j| ys[j] == r.dim) && l.inner == r.inner;
                if pair(&lc, &rc) {
                    return Ok(vec![Role::Additive]);
                }
                if pair(&lb, &rb) {
                    Some(BatchDim { dim: lb.iter().position(|&x| x == l.dim).unwrap(), inner: l.inner })
                } else {
                    None
                }
            }
            (Some(l), None) => lf.iter().position(|&x| x == l.dim).map(|j| BatchDim { dim: lb.len() + j, inner: l.inner }),
            (None, Some(r)) => rf.iter().position(|&x| x == r.dim).map(|j| BatchDim { dim: lb.len() + lf.len() + j, inner: r.inner }),
            (None, None) => unreachable!("a batched operand"),
        };
        match out {
            Some(b) => Ok(vec![Role::Batched(b)]),
            None => Err(self.err(i, "pairs the batch dimension with one that does not hold the batch".into())),
        }
    }
}

/// Where a reshape from `from` to `to` puts the batch of `bd` (batch size
/// `b`): the result dimension whose leading elements and trailing elements
/// match the batch factor's, if there is one.
fn reshaped(from: &[u64], to: &[u64], bd: BatchDim, b: u64) -> Option<BatchDim> {
    let before: u64 = from[..bd.dim].iter().product();
    let after: u64 = bd.inner * from[bd.dim + 1..].iter().product::<u64>();
    (0..to.len()).find_map(|k| {
        let pre: u64 = to[..k].iter().product();
        let post: u64 = to[k + 1..].iter().product();
        (pre == before && to[k] % b == 0 && (to[k] / b) * post == after).then_some(BatchDim { dim: k, inner: to[k] / b })
    })
}

/// The batched values of `f` (batch size `b`, batch parameters `params`) and
/// where each holds the batch, after checking that the returned loss adds up
/// over micro-batches. `what` names the option in errors.
pub(crate) fn batched_values(f: &Function, params: &[usize], b: u64, what: &str) -> Result<HashMap<Value, BatchDim>, TransformError> {
    let a = analyse(f, params, b, what)?;
    match a.role(f.ret[0]) {
        Role::Additive => {}
        _ => {
            return Err(TransformError {
                span: f.ret_spans.first().copied().unwrap_or(f.span),
                msg: format!("unsupported: {what}: the loss @{} returns is not a sum over the batch (of per-example terms, or a mean: a sum divided by a constant), so micro-batches would not add up to it", f.name),
            })
        }
    }
    batched_of(a, f, b, what)
}

/// The batched values of `f` (batch size `b`, batch parameters `params`)
/// and where each holds the batch, whatever `f` returns: for a function
/// applied to each micro-batch on its own (a pipeline stage's layer,
/// `pipeline/`), not summed over them.
pub(crate) fn batched_anywhere(f: &Function, params: &[usize], b: u64, what: &str) -> Result<HashMap<Value, BatchDim>, TransformError> {
    let a = analyse(f, params, b, what)?;
    batched_of(a, f, b, what)
}

/// The analysis run to its fixed point (forced values retyped).
fn analyse<'f>(f: &'f Function, params: &[usize], b: u64, what: &str) -> Result<Analysis<'f>, TransformError> {
    let mut a = Analysis { f, b, roles: HashMap::new(), forced: HashMap::new(), what: what.to_string() };
    loop {
        match a.run(params) {
            Ok(()) => break,
            Err(Stop::Force(v, bd)) => {
                if a.forced.insert(v, bd).is_some() {
                    // Forced once already, another way.
                    return Err(TransformError { span: f.span, msg: format!("unsupported: {what}: %{} of @{} would hold the batch in two dimensions", f.values[v].name, f.name) });
                }
                if let ValueDef::Param(k) = f.values[v].def {
                    return Err(TransformError {
                        span: f.span,
                        msg: format!("unsupported: {what}: parameter %{} of @{} has the batch's shape but is not a batch parameter", f.param_name(k), f.name),
                    });
                }
            }
            Err(Stop::Error(e)) => return Err(e),
        }
    }
    Ok(a)
}

/// The batched values the analysis found, checked to hold the whole batch.
fn batched_of(a: Analysis, f: &Function, b: u64, what: &str) -> Result<HashMap<Value, BatchDim>, TransformError> {
    let batched: HashMap<Value, BatchDim> = a.roles.into_iter().filter_map(|(v, r)| if let Role::Batched(b) = r { Some((v, b)) } else { None }).collect();
    for (&v, bd) in &batched {
        let size = f.values[v].ty.shape[bd.dim];
        if size != b * bd.inner {
            return Err(TransformError { span: f.span, msg: format!("unsupported: {what}: %{} of @{} holds the batch in a dimension of size {size}, not {}", f.values[v].name, f.name, b * bd.inner) });
        }
    }
    Ok(batched)
}

/// `f` retyped for micro-batches of `b / k` rows: every batched value's batch
/// dimension shrinks, and slices that keep the whole batch keep the whole
/// micro-batch.
pub(crate) fn retyped(f: &Function, batched: &HashMap<Value, BatchDim>, b: u64, k: u64, name: &str) -> Function {
    let mut g = f.clone();
    g.name = name.to_string();
    g.comments = Default::default();
    for (&v, bd) in batched {
        g.values[v].ty.shape[bd.dim] = (b / k) * bd.inner;
    }
    for &i in &g.body.clone() {
        let d = &g.insts[i];
        if d.op == Opcode::Slice {
            if let Some(bd) = batched.get(&d.operands[0]) {
                let mut limit = d.attr("limit").and_then(|a| a.as_ints()).unwrap_or_default();
                limit[bd.dim] = ((b / k) * bd.inner) as i64;
                g.insts[i].set_attr("limit", pjc_ir::AttrValue::int_list(&limit));
            }
        }
    }
    g
}
