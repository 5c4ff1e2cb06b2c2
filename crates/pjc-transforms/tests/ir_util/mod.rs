//! IR building shared by the test harnesses' references (`grad_util`'s
//! unrolled scans, `vmap_util`'s unrolled vmaps).
#![allow(dead_code)]

use pjc_ir::builder::Builder;
use pjc_ir::{AttrValue, Opcode, TensorType, Value};

/// Element `i` of `v` along dimension `dim`, that dimension removed (a
/// `slice` then a `reshape`).
pub fn take(b: &mut Builder, v: Value, dim: usize, i: u64, name: &str) -> Value {
    let t = b.func.values[v].ty.clone();
    let mut start = vec![0i64; t.rank()];
    let mut limit: Vec<i64> = t.shape.iter().map(|&s| s as i64).collect();
    start[dim] = i as i64;
    limit[dim] = i as i64 + 1;
    let attrs = vec![
        ("start", AttrValue::int_list(&start)),
        ("limit", AttrValue::int_list(&limit)),
        ("stride", AttrValue::int_list(&vec![1; t.rank()])),
    ];
    let s = b.build(Opcode::Slice, &[v], attrs, name);
    let mut shape = t.shape.clone();
    shape.remove(dim);
    b.build_typed(Opcode::Reshape, &[s], vec![], TensorType::new(t.dtype, shape), name)
}

/// `parts` with a dimension of size 1 inserted at `dim`, concatenated along it.
pub fn stack(b: &mut Builder, parts: &[Value], dim: usize, name: &str) -> Value {
    let rows: Vec<Value> = parts
        .iter()
        .map(|&p| {
            let t = b.func.values[p].ty.clone();
            let mut shape = t.shape.clone();
            shape.insert(dim, 1);
            b.build_typed(Opcode::Reshape, &[p], vec![], TensorType::new(t.dtype, shape), name)
        })
        .collect();
    b.build(Opcode::Concat, &rows, vec![("dim", AttrValue::Int(dim as i64))], name)
}

/// Replaces every instruction of `op` in every function of `m` by what
/// `with` builds for it (one value per result), rewiring every use.
pub fn replace_each(m: &mut pjc_ir::Module, op: Opcode, mut with: impl FnMut(&mut Builder, &pjc_ir::InstData) -> Vec<Value>) {
    let sigs = pjc_ir::builder::signatures(m);
    let mesh = m.mesh_or_single();
    let ids: Vec<_> = m.funcs.keys().collect();
    for id in ids {
        let f = &mut m.funcs[id];
        let body = std::mem::take(&mut f.body);
        let mut remap: std::collections::HashMap<Value, Value> = Default::default();
        for inst in body {
            for v in f.insts[inst].operands.iter_mut() {
                if let Some(n) = remap.get(v) {
                    *v = *n;
                }
            }
            if f.insts[inst].op != op {
                f.body.push(inst);
                continue;
            }
            let d = f.insts[inst].clone();
            let mut b = Builder::new(f, &mesh, &sigs);
            let new = with(&mut b, &d);
            remap.extend(d.results.iter().copied().zip(new));
        }
        for v in f.ret.iter_mut() {
            if let Some(n) = remap.get(v) {
                *v = *n;
            }
        }
    }
}
