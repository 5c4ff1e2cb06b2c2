//! All-reduce code motion out of loops (XLA's `WhileLoopAllReduceCodeMotion`):
//! a gradient-accumulation loop — a `scan` over micro-batches whose carry `c`
//! becomes `c + all_reduce(x)` each iteration — reduces once after the loop
//! instead of once per micro-batch. The carry accumulates the local partial
//! sums `x`, starting at zero, and one `all_reduce` with the same axes after
//! the loop, added to the initial value, gives the total:
//!
//! `c0 + Σₖ allreduce(xₖ)` = `c0 + allreduce(Σₖ xₖ)`
//!
//! which holds exactly in real arithmetic, so floats change only by
//! reassociation (spec section 11). It holds for `sum` only; `prod`, `max`
//! and `min` all-reduces are left in the loop. A `pmean` comes out of JAX as
//! a sum all-reduce followed by a division by the axis size (spec section
//! 8), and a mean loss as a sum divided by the batch size: the division (or
//! a multiplication by a constant, a negation, a reshape or a transpose)
//! between the all-reduce and the `add` is linear, commutes with the sum
//! over devices, and is kept in the body, applied to the local partial sum.
//!
//! The pattern, for carry `k` of a `scan` or `while` in a `spmd func`:
//! the body's parameter `k` is used once, by an `add` whose result is the
//! body's result `k` and nothing else; the `add`'s other operand is
//! `all_reduce {kind=sum}` reached through single-use linear ops only (so
//! nothing else in the body reads the reduced value); a `while`'s condition
//! does not read the carry; the body's signature writes no `on` for it.
//! Several carries of one loop move together, and the combiner run later on
//! the per-device program (`combine.rs`) merges their all-reduces after the
//! loop into one message, as it merges any all-reduces of one kind.
//!
//! A body that another loop names too is copied first (`@b.acc`), so the
//! other loop keeps its meaning (the transforms' rule: never rewrite a shared
//! body in place). The pass runs to a fixed point, so an all-reduce moved out
//! of an inner loop into an outer loop's body can move out of that one too.

use crate::Partitioned;
use pjc_ir::builder::{signatures, Builder};
use pjc_ir::{AttrValue, FuncId, FuncKind, Function, Inst, Module, Number, Opcode, Value, ValueDef};
use std::collections::HashMap;

/// One all-reduce moved out of a loop.
#[derive(Clone, Debug, PartialEq)]
pub struct Moved {
    /// The function holding the loop.
    pub func: String,
    /// The loop, as `explain` names it: `scan %g1`.
    pub loop_op: String,
    /// The body the loop named before the move (where the all-reduce was).
    pub body_before: String,
    /// The body it names now (the same unless the body was shared and copied).
    pub body: String,
    /// The removed all-reduce's result in the body.
    pub inner: String,
    /// The all-reduce after the loop, in `func`.
    pub outer: String,
    /// Its reason, as `--emit spmd`'s comment and `explain` give it.
    pub reason: String,
}

/// Moves the sum all-reduces of accumulating carries out of the loops of
/// `p`'s per-device program and updates the record of inserted collectives
/// (a moved one now sits after its loop and runs once per step). Returns
/// what moved.
pub fn hoist_all_reduces(p: &mut Partitioned) -> Vec<Moved> {
    let moved = hoist_module(&mut p.module);
    for mv in &moved {
        let Some(k) = p.collectives.iter().position(|c| c.func == mv.body_before && c.value == mv.inner) else {
            continue;
        };
        let mut c = p.collectives[k].clone();
        c.func = mv.func.clone();
        c.value = mv.outer.clone();
        c.reason = mv.reason.clone();
        if mv.body == mv.body_before {
            p.collectives[k] = c;
        } else {
            // The shared body keeps its all-reduce for the other loops.
            p.collectives.push(c);
        }
    }
    moved
}

/// The pass on a module of `spmd func`s (see the module doc).
pub fn hoist_module(m: &mut Module) -> Vec<Moved> {
    let mut moved = vec![];
    while let Some((f, i, found)) = find(m) {
        moved.extend(rewrite(m, f, i, &found));
    }
    moved
}

/// How often each value is read in `f` (operands and returns).
fn uses(f: &Function) -> HashMap<Value, usize> {
    let mut n: HashMap<Value, usize> = HashMap::new();
    for &i in &f.body {
        for &o in &f.insts[i].operands {
            *n.entry(o).or_default() += 1;
        }
    }
    for &o in &f.ret {
        *n.entry(o).or_default() += 1;
    }
    n
}

fn def_inst(f: &Function, v: Value) -> Option<Inst> {
    match f.values[v].def {
        ValueDef::Result(i, _) => Some(i),
        ValueDef::Param(_) => None,
    }
}

/// A value that is the same on every device and every iteration: a
/// constant, or a broadcast or reshape of one.
fn is_constant(f: &Function, v: Value) -> bool {
    match def_inst(f, v).map(|i| &f.insts[i]) {
        Some(d) if d.op == Opcode::Constant => true,
        Some(d) if matches!(d.op, Opcode::Broadcast | Opcode::Reshape) => is_constant(f, d.operands[0]),
        _ => false,
    }
}

/// `+0` (or integer 0) everywhere.
fn is_zero(f: &Function, v: Value) -> bool {
    let Some(d) = def_inst(f, v).map(|i| &f.insts[i]) else { return false };
    d.op == Opcode::Constant
        && d.literal.as_ref().is_some_and(|l| {
            l.elems.iter().all(|e| match e {
                Number::Float(x) => x.to_bits() == 0,
                Number::Int(x) => *x == 0,
                Number::Bool(_) => false,
            })
        })
}

/// The sum all-reduce whose value carry `k` of body `b` accumulates, if the
/// carry has the module doc's pattern.
fn accumulated(b: &Function, k: usize, n: &HashMap<Value, usize>) -> Option<Inst> {
    let used = |v: Value| n.get(&v).copied().unwrap_or(0);
    let p = *b.params.get(k)?;
    let r = *b.ret.get(k)?;
    if b.values[p].sharding.is_some() || b.results[k].sharding.is_some() || used(p) != 1 || used(r) != 1 {
        return None;
    }
    if b.values[r].ty.dtype == pjc_ir::DType::Pred {
        return None;
    }
    let add = &b.insts[def_inst(b, r)?];
    if add.op != Opcode::Add {
        return None;
    }
    let mut v = match (add.operands[0] == p, add.operands[1] == p) {
        (true, false) => add.operands[1],
        (false, true) => add.operands[0],
        _ => return None,
    };
    loop {
        if used(v) != 1 {
            return None;
        }
        let i = def_inst(b, v)?;
        let d = &b.insts[i];
        v = match d.op {
            Opcode::AllReduce => {
                let sum = d.attr("kind").and_then(AttrValue::as_ident) == Some("sum");
                return sum.then_some(i);
            }
            Opcode::Reshape | Opcode::Transpose | Opcode::Neg => d.operands[0],
            Opcode::Mul if is_constant(b, d.operands[1]) => d.operands[0],
            Opcode::Mul if is_constant(b, d.operands[0]) => d.operands[1],
            Opcode::Div if is_constant(b, d.operands[1]) => d.operands[0],
            _ => return None,
        };
    }
}

/// A loop with accumulating carries: (function, loop instruction, the
/// carries with the all-reduce each accumulates).
type Found = (FuncId, Inst, Vec<(usize, Inst)>);

fn find(m: &Module) -> Option<Found> {
    for (fid, f) in m.funcs.iter() {
        if f.kind != FuncKind::Spmd {
            continue;
        }
        for &i in &f.body {
            let d = &f.insts[i];
            let (body, cond, carries) = match (d.op, d.callees.as_slice()) {
                (Opcode::Scan, [b]) => (b, None, d.attr("carries").and_then(AttrValue::as_int).unwrap_or(0).max(0) as usize),
                (Opcode::While, [c, b]) => (b, Some(c), d.operands.len()),
                _ => continue,
            };
            let Some(b) = m.func_by_name(body).map(|id| &m.funcs[id]).filter(|b| b.kind == FuncKind::Spmd) else { continue };
            let cond_uses = cond.and_then(|c| m.func_by_name(c)).map(|c| uses(&m.funcs[c]));
            let cond_params = cond.and_then(|c| m.func_by_name(c)).map(|c| m.funcs[c].params.clone());
            let n = uses(b);
            let found: Vec<(usize, Inst)> = (0..carries)
                .filter(|&k| match (&cond_uses, &cond_params) {
                    (Some(u), Some(ps)) => ps.get(k).is_some_and(|p| !u.contains_key(p)),
                    _ => true,
                })
                .filter_map(|k| accumulated(b, k, &n).map(|ar| (k, ar)))
                .collect();
            if !found.is_empty() {
                return Some((fid, i, found));
            }
        }
    }
    None
}

/// Whether any instruction of `m` names `f` (then `f` is some loop's body,
/// branch or callee, not the entry).
fn named(m: &Module, f: &str) -> usize {
    m.funcs.values().flat_map(|g| g.body.iter().map(move |&i| &g.insts[i])).map(|d| d.callees.iter().filter(|c| *c == f).count()).sum()
}

/// The reason of an all-reduce moved out of `loop_op` (whose body is
/// `body`), from the partitioner's per-iteration one ("in the step @b of
/// scan %x, per iteration: WHY") or a comment the program wrote.
fn moved_reason(old: Option<&str>, loop_op: &str, role: &str, body: &str, once: &str) -> String {
    let why = old.map(str::trim).filter(|s| !s.is_empty()).map(|s| match s.strip_prefix("in ").and_then(|s| s.split_once(", per iteration: ")) {
        Some((_, why)) => why.to_string(),
        None => s.to_string(),
    });
    let head = format!("after {loop_op}, {once}, not per iteration (moved out of the {role} @{body}, which adds up the local partial sums)");
    match why {
        Some(w) => format!("{head}: {w}"),
        None => head,
    }
}

fn rewrite(m: &mut Module, fid: FuncId, s: Inst, found: &[(usize, Inst)]) -> Vec<Moved> {
    let sigs = signatures(m);
    let mesh = m.mesh_or_single();
    let (op, slot) = {
        let d = &m.funcs[fid].insts[s];
        (d.op, if d.op == Opcode::Scan { 0 } else { 1 })
    };
    let body_before = m.funcs[fid].insts[s].callees[slot].clone();
    let caller = m.funcs[fid].name.clone();
    let loop_op = format!("{} %{}", op, m.funcs[fid].values[m.funcs[fid].insts[s].results[0]].name);
    let role = if op == Opcode::Scan { "step" } else { "body" };
    let once = if named(m, &caller) == 0 { "once per step".to_string() } else { format!("once per run of @{caller}") };
    // The body to change: the loop's own, or a copy when others name it too.
    let bid = m.func_by_name(&body_before).expect("found a body");
    let bid = if named(m, &body_before) == 1 {
        bid
    } else {
        let mut copy = m.funcs[bid].clone();
        let mut name = format!("{body_before}.acc");
        let mut k = 0;
        while m.func_by_name(&name).is_some() {
            k += 1;
            name = format!("{body_before}.acc.{k}");
        }
        copy.name = name.clone();
        m.funcs[fid].insts[s].callees[slot] = name;
        m.funcs.push(copy)
    };
    let body = m.funcs[bid].name.clone();
    // In the body: each carry adds its local partial sum (the all-reduce's
    // operand) in place of the reduced value.
    let mut moved_ars = vec![];
    {
        let b = &mut m.funcs[bid];
        for &(k, ar) in found {
            let (x, r) = (b.insts[ar].operands[0], b.insts[ar].results[0]);
            for &i in &b.body.clone() {
                for o in &mut b.insts[i].operands {
                    if *o == r {
                        *o = x;
                    }
                }
            }
            for o in &mut b.ret {
                if *o == r {
                    *o = x;
                }
            }
            b.body.retain(|&i| i != ar);
            let d = &b.insts[ar];
            let attrs: Vec<(String, AttrValue)> = d.attrs.iter().map(|a| (a.name.clone(), a.value.clone())).collect();
            moved_ars.push((k, b.values[r].name.clone(), attrs, d.comments.eol.clone()));
        }
    }
    // In the caller: the carries start at zero; after the loop, one
    // all-reduce each, plus the initial value.
    let f = &mut m.funcs[fid];
    let before = f.body.len();
    let mut zeros: Vec<(usize, Value)> = vec![];
    let mut finals: Vec<(Value, Value)> = vec![];
    let mut out = vec![];
    {
        let mut bld = Builder::new(f, &mesh, &sigs);
        for (k, _, _, _) in &moved_ars {
            let init = bld.func.insts[s].operands[*k];
            if !is_zero(bld.func, init) {
                let ty = bld.func.values[init].ty.clone();
                let zero = if ty.dtype.is_float() { Number::Float(0.0) } else { Number::Int(0) };
                let name = format!("{}.zero", bld.func.values[init].name);
                zeros.push((*k, bld.splat(zero, ty, &name)));
            }
        }
    }
    let n_zero = f.body.len() - before;
    {
        let mut bld = Builder::new(f, &mesh, &sigs);
        for (k, inner, attrs, eol) in &moved_ars {
            let r = bld.func.insts[s].results[*k];
            let init = bld.func.insts[s].operands[*k];
            let rname = bld.func.values[r].name.clone();
            let attr_refs: Vec<(&str, AttrValue)> = attrs.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
            let ar = bld.build(Opcode::AllReduce, &[r], attr_refs, &format!("{rname}.ar"));
            let reason = moved_reason(eol.as_deref(), &loop_op, role, &body, &once);
            let ValueDef::Result(ai, _) = bld.func.values[ar].def else { unreachable!() };
            bld.func.insts[ai].comments.eol = Some(format!(" {reason}"));
            let total = if zeros.iter().any(|z| z.0 == *k) { bld.build(Opcode::Add, &[init, ar], vec![], &format!("{rname}.total")) } else { ar };
            finals.push((r, total));
            out.push(Moved {
                func: caller.clone(),
                loop_op: loop_op.clone(),
                body_before: body_before.clone(),
                body: body.clone(),
                inner: inner.clone(),
                outer: bld.func.values[ar].name.clone(),
                reason,
            });
        }
    }
    for &(k, z) in &zeros {
        f.insts[s].operands[k] = z;
    }
    // Order: the zeros just before the loop, the reductions just after it;
    // later readers of a carried result read its total.
    let mut new = f.body.split_off(before);
    let posts = new.split_off(n_zero);
    let at = f.body.iter().position(|&i| i == s).expect("the loop is in its function");
    let tail = f.body.split_off(at + 1);
    f.body.pop();
    f.body.extend(new);
    f.body.push(s);
    f.body.extend(posts);
    f.body.extend(tail.iter().copied());
    let map: HashMap<Value, Value> = finals.into_iter().collect();
    for &i in &tail {
        for o in &mut f.insts[i].operands {
            if let Some(&v) = map.get(o) {
                *o = v;
            }
        }
    }
    for o in &mut f.ret {
        if let Some(&v) = map.get(o) {
            *o = v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &str) -> (Module, Module, Vec<Moved>) {
        let m = pjc_front::load(src).unwrap_or_else(|d| panic!("{}", pjc_front::render("<test>", src, &d)));
        let mut h = m.clone();
        let moved = hoist_module(&mut h);
        let text = pjc_front::print_module(&h);
        let again = pjc_front::load(&text).unwrap_or_else(|d| panic!("{}", pjc_front::render("<hoisted>", &text, &d)));
        (m, again, moved)
    }

    fn count_in(m: &Module, f: &str, op: Opcode) -> usize {
        let f = &m.funcs[m.func_by_name(f).unwrap()];
        f.body.iter().filter(|&&i| f.insts[i].op == op).count()
    }

    /// The moved program computes the original's results (spec section 11's
    /// reassociation tolerance; integers exactly).
    fn agree(m: &Module, h: &Module, args: &[pjc_tensor::Tensor]) {
        let eval = |m: &Module| pjc_interp::eval(m, m.func_by_name("main").unwrap(), args.to_vec()).unwrap();
        for (k, (w, g)) in eval(m).iter().zip(&eval(h)).enumerate() {
            pjc_tensor::compare::assert_close(w, g, pjc_tensor::compare::Tolerance::spec(w.dtype()), &format!("result {k}"));
        }
    }

    fn f32s(shape: Vec<usize>, seed: u32) -> pjc_tensor::Tensor {
        let n: usize = shape.iter().product();
        let v = (0..n).map(|i| ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 250.0 - 2.0).collect();
        pjc_tensor::Tensor::new(shape, pjc_tensor::Buf::F32(v))
    }

    const SCAN: &str = "mesh [data=4]

spmd func @step(%c: f32[4], %m: f32[], %n: i32[2], %keep: f32[4], %x: f32[4]) -> (f32[4], f32[], i32[2], f32[4]) {
  %e = exp %x
  %r = all_reduce %e {axes=[data], kind=sum}
  %c2 = add %c, %r
  %s = reduce %x {dims=[0], kind=sum} : f32[]
  %sr = all_reduce %s {axes=[data], kind=sum}
  %k = constant 8.0 : f32[]
  %mean = div %sr, %k
  %m2 = add %mean, %m
  %i = constant [1, 2] : i32[2]
  %ir = all_reduce %i {axes=[data], kind=sum}
  %n2 = add %n, %ir
  %mx = all_reduce %x {axes=[data], kind=max}
  %keep2 = add %keep, %mx
  return %c2, %m2, %n2, %keep2
}

spmd func @main(%c0: f32[4], %xs: f32[3,4] on [_, data]) -> (c: f32[4], m: f32[], n: i32[2], keep: f32[4]) {
  %z = constant 0.0 : f32[]
  %zi = constant 0 : i32[2]
  %zk = constant 0.0 : f32[4]
  %c, %m, %n, %keep = scan @step(%c0, %z, %zi, %zk, %xs) {length=3, carries=4} : (f32[4], f32[], i32[2], f32[4])
  %twice = add %c, %c
  return %twice, %m, %n, %keep
}
";

    #[test]
    fn sums_move_out_of_the_scan_and_values_agree() {
        let (m, h, moved) = run(SCAN);
        // The sum (with a nonzero initial value), the mean (a division by a
        // constant) and the integer sum move; the max stays per iteration.
        assert_eq!(moved.len(), 3, "{moved:?}");
        assert_eq!(count_in(&h, "step", Opcode::AllReduce), 1);
        assert_eq!(count_in(&h, "main", Opcode::AllReduce), 3);
        assert!(moved.iter().all(|mv| mv.reason.starts_with("after scan %c, once per step")), "{moved:?}");
        // The device-varying inputs of a simulated run: every device its own xs.
        let args = [f32s(vec![4], 1), f32s(vec![3, 16], 7)];
        agree(&m, &h, &args);
    }

    #[test]
    fn shared_bodies_are_copied_and_reads_of_the_carry_block_the_move() {
        let src = "mesh [data=2]

spmd func @acc(%c: f32[2], %x: f32[2]) -> (f32[2]) {
  %r = all_reduce %x {axes=[data], kind=sum}
  %c2 = add %c, %r
  return %c2
}

spmd func @reads(%c: f32[2], %x: f32[2]) -> (f32[2], f32[2]) {
  %r = all_reduce %x {axes=[data], kind=sum}
  %c2 = add %c, %r
  %y = mul %c, %x
  return %c2, %y
}

spmd func @main(%a: f32[2], %b: f32[2], %xs: f32[4,2]) -> (a: f32[2], b: f32[2], d: f32[2], ys: f32[4,2]) {
  %a2 = scan @acc(%a, %xs) {length=4, carries=1} : f32[2]
  %b2 = scan @acc(%b, %xs) {length=4, carries=1} : f32[2]
  %d, %ys = scan @reads(%a, %xs) {length=4, carries=1} : (f32[2], f32[4,2])
  return %a2, %b2, %d, %ys
}
";
        let (m, h, moved) = run(src);
        assert_eq!(moved.len(), 2, "{moved:?}");
        // The first loop got a copy; the second, then the only one naming
        // @acc, changed it in place; @reads keeps its all-reduce.
        assert_eq!(moved[0].body, "acc.acc");
        assert_eq!(moved[1].body, "acc");
        assert_eq!(count_in(&h, "reads", Opcode::AllReduce), 1);
        assert_eq!(count_in(&h, "main", Opcode::AllReduce), 2);
        let args = [f32s(vec![2], 3), f32s(vec![2], 5), f32s(vec![4, 2], 9)];
        agree(&m, &h, &args);
    }

    #[test]
    fn out_of_a_while_and_out_of_nested_loops() {
        let src = "mesh [data=2]

spmd func @cond(%i: i32[], %c: f32[2]) -> (pred[]) {
  %n = constant 3 : i32[]
  %p = compare %i, %n {dir=lt}
  return %p
}

spmd func @inner(%c: f32[2], %x: f32[2]) -> (f32[2]) {
  %r = all_reduce %x {axes=[data], kind=sum}
  %c2 = add %c, %r
  return %c2
}

spmd func @body(%i: i32[], %c: f32[2]) -> (i32[], f32[2]) {
  %one = constant 1 : i32[]
  %i2 = add %i, %one
  %xs = iota {dim=0} : f32[5,2]
  %z = constant 0.0 : f32[2]
  %s = scan @inner(%z, %xs) {length=5, carries=1} : f32[2]
  %c2 = add %c, %s
  return %i2, %c2
}

spmd func @main(%c: f32[2]) -> (i: i32[], c: f32[2]) {
  %i0 = constant 0 : i32[]
  %i, %c2 = while @cond, @body(%i0, %c) : (i32[], f32[2])
  return %i, %c2
}
";
        let (m, h, moved) = run(src);
        // Out of the scan into the while's body, then out of the while.
        assert_eq!(moved.len(), 2, "{moved:?}");
        assert!(moved[0].reason.contains("once per run of @body"), "{}", moved[0].reason);
        assert!(moved[1].reason.starts_with("after while %i, once per step"), "{}", moved[1].reason);
        assert_eq!(count_in(&h, "inner", Opcode::AllReduce) + count_in(&h, "body", Opcode::AllReduce), 0);
        assert_eq!(count_in(&h, "main", Opcode::AllReduce), 1);
        let args = [f32s(vec![2], 11)];
        agree(&m, &h, &args);
    }
}
