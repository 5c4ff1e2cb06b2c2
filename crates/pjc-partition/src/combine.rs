//! The all-reduce combiner (XLA's `AllReduceCombiner`): several `all_reduce`s
//! of a per-device program with the same axes, kind and dtype become one
//! all-reduce of their operands flattened and concatenated, followed by
//! slices — one message instead of many (a training step's gradients are
//! reduced together). Element i of the combined reduction is computed exactly
//! as element i of its original all-reduce, so results are bitwise unchanged.
//!
//! A group forms in program order: an all-reduce joins an open group of its
//! kind unless its operand depends on one of the group's results. The combined
//! all-reduce goes where the group's last member was, and every instruction
//! between that depends on a member's result moves after it (XLA's combiner
//! makes the same trade: later use, one message). Groups are applied one at a
//! time, each found again on the rewritten program, so combining never creates
//! a cycle. Groups are capped at [`COMBINE_LIMIT_BYTES`].
//!
//! **Overlap.** A group also closes once enough compute follows its last
//! member to hide its message: when the products and convolutions between
//! that member and the next candidate would take at least as long as the
//! group's all-reduce ([`hides`], at the cost model's default CPU figures),
//! the group's all-reduce can run during them (the plan's scheduler starts it
//! there), so the candidate opens a new group instead of holding the first
//! one back until its own gradient is ready. A backward pass's gradients then
//! travel in buckets by readiness (as PyTorch DDP's do), each overlapping the
//! rest of the backward pass; small programs, whose messages cost latency
//! more than any compute could hide, still combine into one.

use pjc_ir::builder::{signatures, Builder};
use pjc_ir::{AttrValue, DType, FuncKind, Function, Inst, Mesh, Opcode, TensorType, Value};
use std::collections::{HashMap, HashSet};

/// The largest combined all-reduce (XLA's default threshold is 30 MiB).
pub const COMBINE_LIMIT_BYTES: u64 = 32 << 20;

/// What may share a message. The operands must also vary along the same mesh
/// axes (spec section 5's replication rule), so that every slice of the
/// combined result is as provably replicated as the all-reduce it replaces.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct Key {
    axes: Vec<String>,
    kind: String,
    dtype: DType,
    varying: pjc_ir::replication::Axes,
}

fn key_of(f: &Function, i: Inst, varying: &HashMap<Value, pjc_ir::replication::Axes>) -> Option<Key> {
    let d = &f.insts[i];
    if d.op != Opcode::AllReduce || d.results.len() != 1 {
        return None;
    }
    let axes = d.attr("axes").and_then(|a| a.as_idents())?;
    let kind = d.attr("kind").and_then(|a| a.as_ident()).unwrap_or("sum").to_string();
    let varying = varying.get(&d.operands[0]).cloned().unwrap_or_default();
    Some(Key { axes, kind, dtype: f.values[d.results[0]].ty.dtype, varying })
}

/// The most groups of one key open at a time.
const MAX_OPEN: usize = 16;

/// The device and link figures [`hides`] judges by: those of `pjc explain`'s
/// default CPU class.
const HIDE: pjc_dialects::ring::Machine = pjc_dialects::ring::Machine::CPU;

/// Arithmetic of a product or convolution (2 per multiply-add), else 0.
pub(crate) fn flops(f: &Function, d: &pjc_ir::InstData) -> f64 {
    let out = d.results.first().map_or(0.0, |&r| f.values[r].ty.num_elements() as f64);
    let shape = |k: usize| d.operands.get(k).map(|&o| f.values[o].ty.shape.clone()).unwrap_or_default();
    match d.op {
        Opcode::DotGeneral => {
            let lhs = shape(0);
            let contract: f64 = d.attr("lhs_contract").and_then(|a| a.as_ints()).unwrap_or_default().iter().map(|&k| lhs.get(k as usize).copied().unwrap_or(1) as f64).product();
            2.0 * out * contract
        }
        Opcode::Convolution => {
            // Each output element takes (kernel elements / output features) taps.
            let k = shape(1);
            let kernel: f64 = k.iter().map(|&x| x as f64).product();
            let out_features = k.iter().copied().max().unwrap_or(1).max(1) as f64;
            2.0 * out * kernel / out_features
        }
        _ => 0.0,
    }
}

/// Whether `flops` of compute take at least as long as an all-reduce of
/// `bytes` over `n` devices by the ring formulas.
pub(crate) fn hides(flops: f64, bytes: u64, n: u64) -> bool {
    let ar = pjc_dialects::CollectiveKind::AllReduce;
    let n = n.max(2);
    let t = ar.ring_messages(n) as f64 * HIDE.link_latency_us * 1e-6 + ar.ring_bytes(bytes, bytes, n) as f64 / (HIDE.link_gbps * 1e9);
    flops / (HIDE.gflops * 1e9) >= t
}

/// The first group of two or more all-reduces that can share a message
/// (`varying`: the mesh axes each value varies along).
fn find_group(f: &Function, mesh: &Mesh, varying: &HashMap<Value, pjc_ir::replication::Axes>) -> Option<Vec<Inst>> {
    struct Open {
        key: Key,
        members: Vec<Inst>,
        /// Values depending on the members' results.
        dependents: HashSet<Value>,
        bytes: u64,
        /// The compute done (FLOPs, in program order) at its last member.
        at: f64,
    }
    let mut open: Vec<Open> = vec![];
    let mut done = 0.0f64;
    for &i in &f.body {
        let d = &f.insts[i];
        done += flops(f, d);
        if let Some(key) = key_of(f, i, varying) {
            // Saturating: a type past 2^64 bytes is never combined.
            let size = f.values[d.results[0]].ty.bytes();
            let operand = d.operands[0];
            let n = mesh.group_size(key.axes.iter().map(String::as_str));
            match open.iter_mut().find(|g| {
                g.key == key && !g.dependents.contains(&operand) && g.bytes.saturating_add(size) <= COMBINE_LIMIT_BYTES && !hides(done - g.at, g.bytes, n)
            }) {
                Some(g) => {
                    g.members.push(i);
                    g.bytes += size;
                    g.at = done;
                    g.dependents.insert(d.results[0]);
                }
                None => {
                    // A group that has waited through MAX_OPEN newer ones of its
                    // key alone closes; it could only have joined all-reduces
                    // far away. Bounding the open groups keeps the scan linear
                    // in the program (a chain of dependent all-reduces, as in a
                    // layer stack, opens one group per layer).
                    if open.iter().filter(|h| h.key == key).count() >= MAX_OPEN {
                        if let Some(g) = open.iter().position(|g| g.key == key && g.members.len() == 1) {
                            open.remove(g);
                        }
                    }
                    open.push(Open { key, members: vec![i], dependents: HashSet::from([d.results[0]]), bytes: size, at: done })
                }
            }
        }
        for g in &mut open {
            if d.operands.iter().any(|o| g.dependents.contains(o)) {
                g.dependents.extend(d.results.iter().copied());
            }
        }
    }
    open.into_iter().map(|g| g.members).find(|m| m.len() > 1)
}

fn ints(v: &[u64]) -> AttrValue {
    AttrValue::List(v.iter().map(|&x| AttrValue::Int(x as i64)).collect())
}

/// Combines the all-reduces of the per-device function `f` (a `spmd func`
/// without calls); returns how many all-reduces were merged away.
pub fn combine_all_reduces(f: &mut Function, mesh: &Mesh) -> usize {
    combine_all_reduces_in(f, mesh, &pjc_ir::Module::default(), None)
}

/// [`combine_all_reduces`], with the bodies of `f`'s control flow looked up
/// in `bodies`, and, when `f` is itself a body, its parameters varying along
/// `params` (as the statement that runs it passes them; else as their `on`
/// says): then a loop's results vary as its body makes them, not as the
/// union of its operands, and all-reduces of values that vary along
/// different axes (tensor-parallel weight gradients and replicated ones) are
/// not merged into one that would vary along both.
pub fn combine_all_reduces_in(f: &mut Function, mesh: &Mesh, bodies: &pjc_ir::Module, params: Option<&[pjc_ir::replication::Axes]>) -> usize {
    if f.kind != FuncKind::Spmd {
        return 0;
    }
    let mut removed = 0;
    let sigs = signatures(&pjc_ir::Module::default());
    // Computed once: a combination's new values vary as the values they
    // stand for (below), and no other value changes.
    let mut varying = match params {
        Some(p) => pjc_ir::replication::Replication::new(bodies).values(f, p),
        None => pjc_ir::replication::varying_axes(f, bodies),
    };
    while let Some(g) = find_group(f, mesh, &varying) {
        let last = *g.last().expect("groups have members");
        let first_member = &f.insts[g[0]];
        let attrs: Vec<(String, AttrValue)> = first_member.attrs.iter().map(|a| (a.name.clone(), a.value.clone())).collect();
        let operands: Vec<Value> = g.iter().map(|&i| f.insts[i].operands[0]).collect();
        let results: Vec<Value> = g.iter().map(|&i| f.insts[i].results[0]).collect();
        let types: Vec<TensorType> = results.iter().map(|&r| f.values[r].ty.clone()).collect();
        let names: Vec<String> = results.iter().map(|&r| f.values[r].name.clone()).collect();
        let dtype = types[0].dtype;
        let before = f.body.len();
        let mut replace: HashMap<Value, Value> = HashMap::new();
        {
            let mut b = Builder::new(f, mesh, &sigs);
            let flat: Vec<Value> = operands
                .iter()
                .zip(&types)
                .zip(&names)
                .map(|((&o, t), n)| b.build_typed(Opcode::Reshape, &[o], vec![], TensorType::new(dtype, vec![t.num_elements()]), &format!("{n}.flat")))
                .collect();
            for (&v, o) in flat.iter().zip(&operands) {
                let a = varying.get(o).cloned().unwrap_or_default();
                varying.insert(v, a);
            }
            let total: u64 = types.iter().map(|t| t.num_elements()).sum();
            let cat = b.build_typed(Opcode::Concat, &flat, vec![("dim", AttrValue::Int(0))], TensorType::new(dtype, vec![total]), "combined");
            let attr_refs: Vec<(&str, AttrValue)> = attrs.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
            let red = b.build(Opcode::AllReduce, &[cat], attr_refs, "combined.ar");
            let of = |v: &Value| varying.get(v).cloned().unwrap_or_default();
            let (in_axes, out_axes) = (of(&operands[0]), of(&results[0]));
            varying.insert(cat, in_axes);
            varying.insert(red, out_axes);
            let mut at = 0u64;
            for ((&r, t), n) in results.iter().zip(&types).zip(&names) {
                let len = t.num_elements();
                let piece = b.build(Opcode::Slice, &[red], vec![("start", ints(&[at])), ("limit", ints(&[at + len]))], &format!("{n}.piece"));
                let back = b.build_typed(Opcode::Reshape, &[piece], vec![], t.clone(), &format!("{n}.c"));
                let a = varying.get(&r).cloned().unwrap_or_default();
                varying.insert(piece, a.clone());
                varying.insert(back, a);
                replace.insert(r, back);
                at += len;
            }
        }
        // The new instructions go where the last member was; what depended on
        // a member's result and came before that point moves after them.
        let new: Vec<Inst> = f.body.split_off(before);
        let mut dependents: HashSet<Value> = results.iter().copied().collect();
        let (mut out, mut deferred, mut after) = (vec![], vec![], false);
        for &i in &f.body.clone() {
            let d = &f.insts[i];
            let depends = d.operands.iter().any(|o| dependents.contains(o));
            if depends {
                dependents.extend(d.results.iter().copied());
            }
            if i == last {
                out.extend(&new);
                out.append(&mut deferred);
                after = true;
            } else if g.contains(&i) {
            } else if depends && !after {
                deferred.push(i);
            } else {
                out.push(i);
            }
        }
        f.body = out;
        for &i in &f.body {
            for o in &mut f.insts[i].operands {
                if let Some(&v) = replace.get(o) {
                    *o = v;
                }
            }
        }
        for o in &mut f.ret {
            if let Some(&v) = replace.get(o) {
                *o = v;
            }
        }
        removed += g.len() - 1;
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gradients_share_one_message_and_values_stay_bitwise() {
        let src = "mesh [data=4]

spmd func @main(%a: f32[2,3], %b: f32[4], %c: i32[2], %d: f32[5]) -> (ra: f32[2,3], rb: f32[4], rc: i32[2], u: f32[4], rd: f32[5], re: f32[4]) {
  %ra = all_reduce %a {axes=[data], kind=sum}
  %rc = all_reduce %c {axes=[data], kind=sum}
  %x = exp %b
  %rb = all_reduce %x {axes=[data], kind=sum}
  %u = mul %rb, %rb
  %re = all_reduce %u {axes=[data], kind=sum}
  %rd = all_reduce %d {axes=[data], kind=sum}
  return %ra, %rb, %rc, %u, %rd, %re
}
";
        let m = pjc_front::load(src).unwrap();
        let mut f = m.funcs[m.func_by_name("main").unwrap()].clone();
        let mesh = m.mesh_or_single();
        // %ra, %rb and %rd share one message (%u, which uses %rb, moves after
        // it); %rc is i32; %re reduces a value computed from %rb, so it cannot
        // join them.
        assert_eq!(combine_all_reduces(&mut f, &mesh), 2);
        let mut out = m.clone();
        let id = out.func_by_name("main").unwrap();
        out.funcs[id] = f;
        let text = pjc_front::print_module(&out);
        let again = pjc_front::load(&text).unwrap_or_else(|d| panic!("{}", pjc_front::render("<combined>", &text, &d)));
        assert_eq!(text.matches("all_reduce").count(), 3, "{text}");
        // The same values, bit for bit, on every device of a simulated run.
        let args: Vec<pjc_tensor::Tensor> = vec![
            pjc_tensor::Tensor::new(vec![2, 3], pjc_tensor::Buf::F32(vec![0.1, -2.5, 3.25, 1e-3, 7.0, -0.0])),
            pjc_tensor::Tensor::new(vec![4], pjc_tensor::Buf::F32(vec![0.5, 1.5, -1.0, 2.0])),
            pjc_tensor::Tensor::new(vec![2], pjc_tensor::Buf::I32(vec![3, -4])),
            pjc_tensor::Tensor::new(vec![5], pjc_tensor::Buf::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0])),
        ];
        let want = pjc_interp::eval(&m, m.func_by_name("main").unwrap(), args.clone()).unwrap();
        let got = pjc_interp::eval(&again, again.func_by_name("main").unwrap(), args).unwrap();
        for (w, g) in want.iter().zip(&got) {
            assert_eq!(pjc_tensor::buf_to_le_bytes(&w.data), pjc_tensor::buf_to_le_bytes(&g.data));
        }
    }
}
