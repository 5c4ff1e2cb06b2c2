//! The vmap tests' harness (shared by `vmap.rs` and `vmap_control.rs`): for
//! each program, `@main` runs on generated inputs (a) unexpanded (the
//! interpreter evaluates `vmap` as a loop of calls), (b) after expanding only
//! the `vmap`s with `vmap::generate_all`, and (c) after the full
//! `pjc_transforms::expand`; (b) and (c) must verify after a print/parse
//! round trip, contain no `vmap`, and agree with (a). Inside a `spmd func`
//! the reference unrolls every `vmap` by hand ([`unroll_vmaps`]).
#![allow(dead_code)]

use pjc_ir::infer::global_type;
use pjc_ir::{FuncKind, Module, Opcode, TensorType, Value};
use pjc_tensor::compare::{close, Tolerance};
use pjc_tensor::{Buf, Tensor};

#[path = "../ir_util/mod.rs"]
mod ir_util;

pub fn load(src: &str) -> Module {
    match pjc_front::load(src) {
        Ok(m) => m,
        Err(d) => panic!("program does not verify:\n{}\n{src}", pjc_front::render("test.pir", src, &d)),
    }
}

/// Deterministic inputs: floats are multiples of 1/8 in [-3, 3] (exact in every
/// float dtype, so sums are exact), signed integers in [-3, 9], unsigned in
/// [0, 11] (both straddle the sizes used here, to exercise index clamping and
/// dropping), `pred` both ways.
pub fn gen_input(t: &TensorType, seed: &mut u64) -> Tensor {
    let n: usize = t.shape.iter().product::<u64>() as usize;
    let mut next = || {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*seed >> 33) as i128
    };
    let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
    let d = t.dtype;
    let data = if d.is_float() {
        Buf::from_f64(d, &(0..n).map(|_| (next() % 49 - 24) as f64 / 8.0).collect::<Vec<_>>())
    } else if d.is_signed_int() {
        Buf::from_i128(d, &(0..n).map(|_| next() % 13 - 3).collect::<Vec<_>>())
    } else if d.is_unsigned_int() {
        Buf::from_i128(d, &(0..n).map(|_| next() % 12).collect::<Vec<_>>())
    } else {
        Buf::Pred((0..n).map(|_| next() % 2 == 0).collect())
    };
    Tensor::new(shape, data)
}

pub fn inputs(m: &Module) -> Vec<Tensor> {
    let main = &m.funcs[m.func_by_name("main").expect("@main")];
    let mesh = m.mesh_or_single();
    let mut seed = 12345u64;
    main.params
        .iter()
        .map(|&p| {
            let v = &main.values[p];
            let t = if main.kind == FuncKind::Spmd { global_type(&v.ty, v.sharding.as_ref(), &mesh) } else { v.ty.clone() };
            gen_input(&t, &mut seed)
        })
        .collect()
}

pub fn run(m: &Module, inputs: &[Tensor]) -> Vec<Tensor> {
    let main = m.func_by_name("main").expect("@main");
    pjc_interp::eval(m, main, inputs.to_vec()).unwrap_or_else(|e| panic!("eval failed: {e}\n{}", pjc_front::print_module(m)))
}

pub fn assert_close(want: &[Tensor], got: &[Tensor], ctx: &str) {
    assert_eq!(want.len(), got.len(), "number of results\n{ctx}");
    for (k, (w, g)) in want.iter().zip(got).enumerate() {
        // 5e-6·(1 + |want|) ≤ 1e-5·max(1, |want|).
        if let Err(e) = close(w, g, Tolerance::rel(5e-6).with_atol(5e-6)) {
            panic!("result {k}: {e}\nwant {:?}\ngot  {:?}\n{ctx}", w.data, g.data);
        }
    }
}

/// Replaces every `vmap` (callees first) by a call of `vmap::generate_all`'s
/// function (adding the batched bodies it makes), without the clean-up
/// `expand` does.
pub fn expand_vmaps(m: &mut Module) -> Result<(), pjc_transforms::TransformError> {
    expand_only(m, Opcode::Vmap)
}

/// Replaces every `grad` the same way, leaving `vmap`s to the interpreter:
/// the reference for `vmap` of `grad`.
pub fn expand_grads(m: &mut Module) {
    expand_only(m, Opcode::Grad).unwrap_or_else(|e| panic!("grad::generate_all: {}", e.msg));
}

/// Replaces every `op` (`vmap` or `grad`) by a call of its generated function.
fn expand_only(m: &mut Module, op: Opcode) -> Result<(), pjc_transforms::TransformError> {
    for id in pjc_transforms::callees_first(m) {
        for inst in m.funcs[id].body.clone() {
            if m.funcs[id].insts[inst].op != op {
                continue;
            }
            let callee = m.funcs[id].insts[inst].callee().unwrap().to_string();
            let target = m.func_by_name(&callee).unwrap();
            let d = &m.funcs[id].insts[inst];
            let gs = match op {
                Opcode::Grad => pjc_transforms::grad::generate_all(m, target, d)?,
                _ => pjc_transforms::vmap::generate_all(m, target, d)?,
            };
            let name = gs[0].name.clone();
            for g in gs {
                m.funcs.push(g);
            }
            let d = &mut m.funcs[id].insts[inst];
            d.op = Opcode::Call;
            d.set_callee(name);
            d.attrs.clear();
        }
    }
    Ok(())
}

/// Checks that an expanded module prints, parses and verifies, has no `vmap`
/// left, and computes `want`.
pub fn check_expanded(e: &Module, inputs: &[Tensor], want: &[Tensor], what: &str, src: &str) -> Module {
    let text = pjc_front::print_module(e);
    let e2 = match pjc_front::load(&text) {
        Ok(m) => m,
        Err(d) => panic!("{what}: the expanded module does not verify:\n{}\n{text}", pjc_front::render("expanded.pir", &text, &d)),
    };
    for f in e2.funcs.values() {
        for i in f.insts.values() {
            assert_ne!(i.op, Opcode::Vmap, "{what}: vmap left in @{}\n{text}", f.name);
        }
    }
    let got = run(&e2, inputs);
    assert_close(want, &got, &format!("{what}\n--- source ---\n{src}\n--- expanded ---\n{text}"));
    e2
}

/// The full check of one program (see the file's doc); returns the module
/// expanded by `vmap::generate` alone, for tests that look at its text.
pub fn check(src: &str) -> Module {
    let m = load(src);
    let xs = inputs(&m);
    let want = if m.funcs[m.func_by_name("main").unwrap()].kind == FuncKind::Spmd {
        let mut u = m.clone();
        unroll_vmaps(&mut u);
        run(&load(&pjc_front::print_module(&u)), &xs)
    } else {
        run(&m, &xs)
    };
    let mut e = m.clone();
    if let Err(err) = expand_vmaps(&mut e) {
        panic!("vmap::generate failed: {}\n{src}", err.msg);
    }
    let e = check_expanded(&e, &xs, &want, "vmap::generate", src);
    let mut full = m.clone();
    if let Err(err) = pjc_transforms::expand(&mut full) {
        panic!("expand failed: {}\n{src}", err.msg);
    }
    check_expanded(&full, &xs, &want, "expand", src);
    e
}

/// Parses `"[0, none] -> [1, 0]"`.
pub fn parse_combo(s: &str) -> (Vec<Option<usize>>, Vec<usize>) {
    let (a, b) = s.split_once("->").expect("IN -> OUT");
    let list = |s: &str| -> Vec<String> {
        s.trim().trim_start_matches('[').trim_end_matches(']').split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect()
    };
    let ins = list(a).iter().map(|x| if x == "none" { None } else { Some(x.parse().unwrap()) }).collect();
    let outs = list(b).iter().map(|x| x.parse().unwrap()).collect();
    (ins, outs)
}

/// For each `in_dims -> out_dims` combination, appends to `funcs` an `@main`
/// that maps `@f` over `b` examples, and [`check`]s it.
pub fn cases(funcs: &str, f: &str, b: u64, combos: &[&str]) {
    let m = load(funcs);
    let g = &m.funcs[m.func_by_name(f).unwrap_or_else(|| panic!("no @{f}"))];
    let mesh = m.mesh_or_single();
    let call_ty = |t: &TensorType, s| if g.kind == FuncKind::Spmd { global_type(t, s, &mesh) } else { t.clone() };
    for combo in combos {
        let (ins, outs) = parse_combo(combo);
        assert_eq!(ins.len(), g.params.len(), "{combo}");
        assert_eq!(outs.len(), g.results.len(), "{combo}");
        let mut params = vec![];
        let mut args = vec![];
        for (i, (&p, d)) in g.params.iter().zip(&ins).enumerate() {
            let v = &g.values[p];
            let mut t = call_ty(&v.ty, v.sharding.as_ref());
            if let Some(d) = d {
                t.shape.insert(*d, b);
            }
            params.push(format!("%a{i}: {t}"));
            args.push(format!("%a{i}"));
        }
        let mut rtys = vec![];
        let mut rs = vec![];
        for (i, (r, &d)) in g.results.iter().zip(&outs).enumerate() {
            let mut t = call_ty(&r.ty, r.sharding.as_ref());
            t.shape.insert(d, b);
            rtys.push(t.to_string());
            rs.push(format!("%r{i}"));
        }
        let dims = |v: Vec<String>| v.join(", ");
        let src = format!(
            "{funcs}\nfunc @main({}) -> ({}) {{\n  {} = vmap @{f}({}) {{in_dims=[{}], out_dims=[{}]}}\n  return {}\n}}\n",
            params.join(", "),
            rtys.join(", "),
            rs.join(", "),
            args.join(", "),
            dims(ins.iter().map(|d| d.map_or("none".to_string(), |d| d.to_string())).collect()),
            dims(outs.iter().map(|d| d.to_string()).collect()),
            rs.join(", "),
        );
        check(&src);
    }
}

/// The independent reference for `vmap` where the interpreter cannot run it
/// (inside a `spmd func`): every `vmap` becomes one `call` per example on
/// sliced operands, results stacked along `out_dims` with `concat`.
pub fn unroll_vmaps(m: &mut Module) {
    ir_util::replace_each(m, Opcode::Vmap, |b, d| {
        let in_dims: Vec<Option<usize>> =
            d.attr("in_dims").unwrap().as_list().unwrap().iter().map(|v| v.as_int().map(|i| i as usize)).collect();
        let out_dims: Vec<usize> = d.attr("out_dims").unwrap().as_ints().unwrap().iter().map(|&i| i as usize).collect();
        let n = d.operands.iter().zip(&in_dims).find_map(|(&v, k)| k.map(|k| b.func.values[v].ty.shape[k])).unwrap();
        let mut per: Vec<Vec<Value>> = vec![];
        for e in 0..n {
            let args: Vec<Value> = d
                .operands
                .iter()
                .zip(&in_dims)
                .map(|(&v, k)| match *k {
                    Some(k) => ir_util::take(b, v, k, e, "ex"),
                    None => v,
                })
                .collect();
            per.push(b.try_build(Opcode::Call, &args, vec![], &d.callees, None, "ex").unwrap());
        }
        let stacked = out_dims.iter().enumerate().map(|(j, &od)| {
            let parts: Vec<Value> = per.iter().map(|r| r[j]).collect();
            ir_util::stack(b, &parts, od, "st")
        });
        stacked.collect()
    });
}
