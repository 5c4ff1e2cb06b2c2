//! Collective decomposition: an all-reduce of a product's result that no
//! later compute can hide (the last gradient of a backward pass, typically
//! the first layer's weight gradient, which is also the largest) is split,
//! with its product, into chunks along a free dimension of the product's
//! left operand. Chunk k's all-reduce then runs while chunk k+1's product is
//! computed (the plan's scheduler starts each one as soon as its chunk is
//! written), so only the last chunk's message is exposed instead of the
//! whole gradient's — what XLA does for asynchronous collectives by
//! decomposing them (and what pipelined gradient bucketing does in
//! PyTorch/Horovod). The chunks' results are concatenated back, along the
//! same dimension, where the all-reduce's result was.
//!
//! Each element of a chunk's product is the same sum over the same
//! contracted elements as in the whole product, so the values are those of
//! the undecomposed program (bitwise, as long as the product routine sums an
//! element's terms in an order independent of the free dimensions' sizes,
//! which pjc's CPU GEMM does).
//!
//! The choice is made with the cost model's CPU figures
//! ([`pjc_dialects::ring::Machine::CPU`], the ring formulas), as the
//! combiner's buckets are: an all-reduce is decomposed only when the compute
//! after it (that does not need its result) is too short to hide it, and
//! into the most chunks (at most [`MAX_CHUNKS`], each at least
//! [`MIN_CHUNK`] wide) for which one chunk's product still hides one
//! chunk's all-reduce. Small programs, whose messages are latency, are left
//! alone. `PJC_OVERLAP=0` (the blocking comparison) turns it off.

use crate::combine::{flops, hides};
use pjc_ir::builder::{signatures, Builder};
use pjc_ir::{AttrValue, FuncKind, Function, Inst, Mesh, Opcode, Value};
use std::collections::{HashMap, HashSet};

/// The most chunks one all-reduce is split into.
pub const MAX_CHUNKS: u64 = 8;

/// The narrowest chunk (elements along the split dimension): narrower
/// products run below the GEMM's efficiency.
pub const MIN_CHUNK: u64 = 32;

fn ints(v: &[u64]) -> AttrValue {
    AttrValue::List(v.iter().map(|&x| AttrValue::Int(x as i64)).collect())
}

/// A decomposition found: the all-reduce, its product, the product's left
/// operand's split dimension, the result's, and the chunk count.
struct Split {
    ar: Inst,
    dot: Inst,
    lhs_dim: usize,
    out_dim: usize,
    chunks: u64,
}

/// Decomposes the all-reduces of the per-device function `f` (module doc);
/// returns how many were split.
pub fn decompose_all_reduces(f: &mut Function, mesh: &Mesh) -> usize {
    if f.kind != FuncKind::Spmd || std::env::var("PJC_OVERLAP").is_ok_and(|v| v == "0") {
        return 0;
    }
    let mut done = 0;
    let mut tried: HashSet<Inst> = HashSet::new();
    while let Some(s) = find(f, mesh, &mut tried) {
        // The chunks' all-reduces are not split again.
        tried.extend(apply(f, mesh, s));
        done += 1;
    }
    done
}

/// The next all-reduce to split (none of those in `tried`).
fn find(f: &Function, mesh: &Mesh, tried: &mut HashSet<Inst>) -> Option<Split> {
    let mut uses: HashMap<Value, usize> = HashMap::new();
    for &i in &f.body {
        for &o in &f.insts[i].operands {
            *uses.entry(o).or_default() += 1;
        }
    }
    for &o in &f.ret {
        *uses.entry(o).or_default() += 1;
    }
    let def: HashMap<Value, Inst> = f.body.iter().flat_map(|&i| f.insts[i].results.iter().map(move |&r| (r, i))).collect();
    for (p, &i) in f.body.iter().enumerate() {
        let d = &f.insts[i];
        if d.op != Opcode::AllReduce || d.results.len() != 1 || tried.contains(&i) {
            continue;
        }
        tried.insert(i);
        let o = d.operands[0];
        let Some(&dot) = def.get(&o) else { continue };
        let dd = &f.insts[dot];
        if dd.op != Opcode::DotGeneral || uses.get(&o) != Some(&1) {
            continue;
        }
        let axes = d.attr("axes").and_then(|a| a.as_idents()).unwrap_or_default();
        let n = mesh.group_size(axes.iter().map(String::as_str));
        if n < 2 {
            continue;
        }
        let bytes = f.values[d.results[0]].ty.bytes();
        // The compute after the all-reduce that does not need its result.
        let mut dependents: HashSet<Value> = HashSet::from([d.results[0]]);
        let mut after = 0.0;
        for &j in &f.body[p + 1..] {
            let e = &f.insts[j];
            if e.operands.iter().any(|x| dependents.contains(x)) {
                dependents.extend(e.results.iter().copied());
            } else {
                after += flops(f, e);
            }
        }
        if hides(after, bytes, n) {
            continue;
        }
        // The left operand's first free dimension.
        let lhs = &f.values[dd.operands[0]].ty;
        let contract = dd.attr("lhs_contract").and_then(|a| a.as_ints()).unwrap_or_default();
        let batch = dd.attr("lhs_batch").and_then(|a| a.as_ints()).unwrap_or_default();
        let Some(lhs_dim) = (0..lhs.rank()).find(|&k| !contract.contains(&(k as i64)) && !batch.contains(&(k as i64))) else { continue };
        let width = lhs.shape[lhs_dim];
        let total = flops(f, dd);
        let most = std::env::var("PJC_CHUNKS").ok().and_then(|v| v.parse().ok()).unwrap_or(MAX_CHUNKS);
        let chunks = (2..=most).rev().find(|&k| width / k >= MIN_CHUNK && hides(total / k as f64, bytes / k, n));
        let Some(chunks) = chunks else { continue };
        // The result's dimensions: batch, then the left operand's free ones.
        return Some(Split { ar: i, dot, lhs_dim, out_dim: batch.len(), chunks });
    }
    None
}

/// Returns the chunks' all-reduces.
fn apply(f: &mut Function, mesh: &Mesh, s: Split) -> Vec<Inst> {
    let sigs = signatures(&pjc_ir::Module::default());
    let ar = f.insts[s.ar].clone();
    let dot = f.insts[s.dot].clone();
    let (lhs, rhs) = (dot.operands[0], dot.operands[1]);
    let lhs_ty = f.values[lhs].ty.clone();
    let out_ty = f.values[dot.results[0]].ty.clone();
    let result = ar.results[0];
    let name = f.values[result].name.clone();
    let dot_attrs: Vec<(String, AttrValue)> = dot.attrs.iter().map(|a| (a.name.clone(), a.value.clone())).collect();
    let ar_attrs: Vec<(String, AttrValue)> = ar.attrs.iter().map(|a| (a.name.clone(), a.value.clone())).collect();
    let width = lhs_ty.shape[s.lhs_dim];
    let before = f.body.len();
    let cat = {
        let mut b = Builder::new(f, mesh, &sigs);
        let mut pieces = vec![];
        let mut at = 0u64;
        for k in 0..s.chunks {
            let len = width / s.chunks + u64::from(k < width % s.chunks);
            let mut start = vec![0u64; lhs_ty.rank()];
            let mut limit = lhs_ty.shape.clone();
            start[s.lhs_dim] = at;
            limit[s.lhs_dim] = at + len;
            let part = b.build(Opcode::Slice, &[lhs], vec![("start", ints(&start)), ("limit", ints(&limit))], &format!("{name}.lhs{k}"));
            let mut ty = out_ty.clone();
            ty.shape[s.out_dim] = len;
            let attrs: Vec<(&str, AttrValue)> = dot_attrs.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
            let prod = b.build_typed(Opcode::DotGeneral, &[part, rhs], attrs, ty, &format!("{name}.part{k}"));
            let attrs: Vec<(&str, AttrValue)> = ar_attrs.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
            pieces.push(b.build(Opcode::AllReduce, &[prod], attrs, &format!("{name}.ar{k}")));
            at += len;
        }
        b.build(Opcode::Concat, &pieces, vec![("dim", AttrValue::Int(s.out_dim as i64))], &format!("{name}.chunks"))
    };
    // The chunks go where the product was; the all-reduce goes away.
    let new: Vec<Inst> = f.body.split_off(before);
    let mut out = Vec::with_capacity(f.body.len() + new.len());
    for &i in &f.body {
        if i == s.dot {
            out.extend(&new);
        } else if i != s.ar {
            out.push(i);
        }
    }
    f.body = out;
    for &i in &f.body {
        for o in &mut f.insts[i].operands {
            if *o == result {
                *o = cat;
            }
        }
    }
    for o in &mut f.ret {
        if *o == result {
            *o = cat;
        }
    }
    new.into_iter().filter(|&i| f.insts[i].op == Opcode::AllReduce).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn main_of(src: &str) -> (Function, Mesh) {
        let m = pjc_front::load(src).unwrap();
        (m.funcs[m.func_by_name("main").unwrap()].clone(), m.mesh_or_single())
    }

    /// The weight gradient whose all-reduce nothing follows is split into
    /// chunks, each all-reduced, and concatenated back; the interpreter
    /// gives the same values.
    #[test]
    fn an_exposed_gradient_all_reduce_is_split_with_its_product() {
        let src = "mesh [data=2]

spmd func @main(%h: f32[256,512], %d: f32[256,512], %w: f32[512,512]) -> (w: f32[512,512]) {
  %g = dot_general %h, %d {lhs_contract=[0], rhs_contract=[0]} : f32[512,512]
  %gr = all_reduce %g {axes=[data], kind=sum}
  %wn = sub %w, %gr
  return %wn
}
";
        let (mut f, mesh) = main_of(src);
        assert_eq!(decompose_all_reduces(&mut f, &mesh), 1);
        let ops: Vec<Opcode> = f.body.iter().map(|&i| f.insts[i].op).collect();
        let count = |op| ops.iter().filter(|&&o| o == op).count();
        let k = count(Opcode::AllReduce);
        assert!((2..=MAX_CHUNKS as usize).contains(&k), "{ops:?}");
        assert_eq!(count(Opcode::DotGeneral), k);
        assert_eq!(count(Opcode::Concat), 1);
        // Each chunk's all-reduce comes right after its product, before the
        // next chunk's product.
        let first_ar = ops.iter().position(|&o| o == Opcode::AllReduce).unwrap();
        let last_dot = ops.iter().rposition(|&o| o == Opcode::DotGeneral).unwrap();
        assert!(first_ar < last_dot, "{ops:?}");
        // The same values, bit for bit, on every device of a simulated run.
        let m = pjc_front::load(src).unwrap();
        let mut out = m.clone();
        let id = out.func_by_name("main").unwrap();
        out.funcs[id] = f;
        let text = pjc_front::print_module(&out);
        let again = pjc_front::load(&text).unwrap_or_else(|d| panic!("{}", pjc_front::render("<decomposed>", &text, &d)));
        let mut seed = 1u64;
        let mut random = |shape: Vec<usize>| {
            let n: usize = shape.iter().product();
            let v = (0..n)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1
                })
                .collect();
            pjc_tensor::Tensor::new(shape, pjc_tensor::Buf::F32(v))
        };
        let args = vec![random(vec![256, 512]), random(vec![256, 512]), random(vec![512, 512])];
        let want = pjc_interp::eval(&m, m.func_by_name("main").unwrap(), args.clone()).unwrap();
        let got = pjc_interp::eval(&again, again.func_by_name("main").unwrap(), args).unwrap();
        for (w, g) in want.iter().zip(&got) {
            assert_eq!(pjc_tensor::buf_to_le_bytes(&w.data), pjc_tensor::buf_to_le_bytes(&g.data));
        }
    }

    /// Compute after the all-reduce that hides it, or a message too small
    /// for any chunk's product to hide: nothing changes.
    #[test]
    fn hidden_or_latency_bound_all_reduces_stay_whole() {
        let hidden = "mesh [data=2]

spmd func @main(%h: f32[512,1024], %d: f32[512,1024], %y: f32[1024,1024]) -> (g: f32[1024,1024], z: f32[1024,1024]) {
  %g = dot_general %h, %d {lhs_contract=[0], rhs_contract=[0]} : f32[1024,1024]
  %gr = all_reduce %g {axes=[data], kind=sum}
  %z = dot_general %y, %y {lhs_contract=[1], rhs_contract=[0]} : f32[1024,1024]
  %z2 = dot_general %z, %y {lhs_contract=[1], rhs_contract=[0]} : f32[1024,1024]
  return %gr, %z2
}
";
        let (mut f, mesh) = main_of(hidden);
        assert_eq!(decompose_all_reduces(&mut f, &mesh), 0);
        let small = "mesh [data=2]

spmd func @main(%h: f32[8,64], %d: f32[8,64]) -> (g: f32[64,64]) {
  %g = dot_general %h, %d {lhs_contract=[0], rhs_contract=[0]} : f32[64,64]
  %gr = all_reduce %g {axes=[data], kind=sum}
  return %gr
}
";
        let (mut f, mesh) = main_of(small);
        assert_eq!(decompose_all_reduces(&mut f, &mesh), 0);
    }
}
