//! Shared helpers of the grad tests: load + expand + verify + evaluate PIR
//! text, a tiny deterministic PRNG, and a central-difference gradient checker.
#![allow(dead_code)]

use pjc_ir::{DType, FuncKind, Module, TensorType};
use pjc_tensor::{Buf, Lanes, Tensor};

#[path = "../ir_util/mod.rs"]
mod ir_util;

/// xorshift64*: deterministic and good enough for test inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
}

/// How to fill one parameter.
#[derive(Clone, Debug)]
pub enum Init {
    /// Uniform floats in [lo, hi).
    U(f64, f64),
    /// Magnitude uniform in [lo, hi), random sign (away from 0).
    Signed(f64, f64),
    /// Exactly these values (any dtype).
    V(Vec<f64>),
}

pub fn fill(t: &TensorType, init: &Init, rng: &mut Rng) -> Tensor {
    let n = t.num_elements() as usize;
    let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
    let v: Vec<f64> = match init {
        Init::U(lo, hi) => (0..n).map(|_| rng.uniform(*lo, *hi)).collect(),
        Init::Signed(lo, hi) => (0..n)
            .map(|_| {
                let m = rng.uniform(*lo, *hi);
                if rng.unit() < 0.5 {
                    -m
                } else {
                    m
                }
            })
            .collect(),
        Init::V(v) => {
            assert_eq!(v.len(), n, "Init::V has {} values for {t}", v.len());
            v.clone()
        }
    };
    tensor(t.dtype, shape, &v)
}

pub fn tensor(d: DType, shape: Vec<usize>, v: &[f64]) -> Tensor {
    let data = if d.is_float() {
        Buf::from_f64(d, v)
    } else if d.is_pred() {
        Buf::Pred(v.iter().map(|&x| x != 0.0).collect())
    } else {
        Buf::from_i128(d, &v.iter().map(|&x| x as i128).collect::<Vec<_>>())
    };
    Tensor::new(shape, data)
}

pub fn f64s(t: &Tensor) -> Vec<f64> {
    match t.data.lanes() {
        Lanes::F(v) => v,
        Lanes::I(v) => v.iter().map(|&x| x as f64).collect(),
        Lanes::P(v) => v.iter().map(|&b| if b { 1.0 } else { 0.0 }).collect(),
    }
}

fn set(t: &Tensor, i: usize, x: f64) -> Tensor {
    let mut v = f64s(t);
    v[i] = x;
    tensor(t.dtype(), t.shape.clone(), &v)
}

/// Parses and verifies, panicking with the rendered diagnostics.
pub fn load(src: &str) -> Module {
    match pjc_front::load(src) {
        Ok(m) => m,
        Err(d) => panic!("{}\n{src}", pjc_front::render("test.pir", src, &d)),
    }
}

/// The verifier's messages for `src` (which must not load).
pub fn load_errors(src: &str) -> String {
    match pjc_front::load(src) {
        Ok(_) => panic!("expected a verifier error for:\n{src}"),
        Err(d) => d.iter().map(|d| d.msg.clone()).collect::<Vec<_>>().join("\n"),
    }
}

/// Loads, expands the transforms, and checks that the result verifies and
/// survives print -> parse -> print unchanged.
pub fn expand(src: &str) -> Module {
    let mut m = load(src);
    if let Err(e) = pjc_transforms::expand(&mut m) {
        panic!("expand failed: {}\n{src}", e.msg);
    }
    let text = pjc_front::print_module(&m);
    let mut again = m.clone();
    if let Err(d) = pjc_front::verify(&mut again) {
        panic!("expanded module does not verify:\n{}\n{text}", pjc_front::render("expanded.pir", &text, &d));
    }
    let reparsed = match pjc_front::load(&text) {
        Ok(r) => r,
        Err(d) => panic!("printed expansion does not load:\n{}\n{text}", pjc_front::render("expanded.pir", &text, &d)),
    };
    assert_eq!(pjc_front::print_module(&reparsed), text, "print is not a fixed point");
    m
}

pub fn expand_err(src: &str) -> String {
    let mut m = load(src);
    match pjc_transforms::expand(&mut m) {
        Ok(()) => panic!("expected expand to fail:\n{}", pjc_front::print_module(&m)),
        Err(e) => e.msg,
    }
}

pub fn run(m: &Module, name: &str, inputs: Vec<Tensor>) -> Vec<Tensor> {
    let id = m.func_by_name(name).unwrap_or_else(|| panic!("no @{name}"));
    match pjc_interp::eval(m, id, inputs) {
        Ok(r) => r,
        Err(e) => panic!("eval of @{name} failed: {e}\n{}", pjc_front::print_module(m)),
    }
}

/// The global types of `@f`'s parameters (as a `func` caller sees them).
pub fn param_types(m: &Module, f: &str) -> Vec<TensorType> {
    let g = &m.funcs[m.func_by_name(f).unwrap()];
    let mesh = m.mesh_or_single();
    g.params
        .iter()
        .map(|&p| {
            let v = &g.values[p];
            if g.kind == FuncKind::Spmd {
                pjc_ir::infer::global_type(&v.ty, v.sharding.as_ref(), &mesh)
            } else {
                v.ty.clone()
            }
        })
        .collect()
}

/// `src` plus `@grad_main` calling `grad @f {wrt}` on all of f's parameters.
pub fn with_grad_main(src: &str, f: &str, wrt: &[usize]) -> String {
    let m = load(src);
    let types = param_types(&m, f);
    let params: Vec<String> = types.iter().enumerate().map(|(i, t)| format!("%p{i}: {t}")).collect();
    let args: Vec<String> = (0..types.len()).map(|i| format!("%p{i}")).collect();
    let g = &m.funcs[m.func_by_name(f).unwrap()];
    let rt = &g.results[0].ty;
    let mut res = vec![rt.to_string()];
    res.extend(wrt.iter().map(|&k| types[k].to_string()));
    let names: Vec<String> = (0..=wrt.len()).map(|k| format!("%r{k}")).collect();
    let wrt_s: Vec<String> = wrt.iter().map(|k| k.to_string()).collect();
    format!(
        "{src}\nfunc @grad_main({}) -> ({}) {{\n  {} = grad @{f}({}) {{wrt=[{}]}}\n  return {}\n}}\n",
        params.join(", "),
        res.join(", "),
        names.join(", "),
        args.join(", "),
        wrt_s.join(","),
        names.join(", ")
    )
}

/// Checks `grad @f {wrt}` against central finite differences of `@f` on
/// inputs drawn by `inits` (one per parameter). Returns the expanded module
/// and the gradients.
pub fn check_grad(src: &str, f: &str, wrt: &[usize], inits: &[Init], seed: u64) -> (Module, Vec<Vec<f64>>) {
    check_grad_tol(src, f, wrt, inits, seed, 1e-5, 1e-6)
}

pub fn check_grad_tol(
    src: &str,
    f: &str,
    wrt: &[usize],
    inits: &[Init],
    seed: u64,
    h: f64,
    tol: f64,
) -> (Module, Vec<Vec<f64>>) {
    let full = with_grad_main(src, f, wrt);
    let m = expand(&full);
    let types = param_types(&m, f);
    assert_eq!(types.len(), inits.len(), "one Init per parameter of @{f}");
    let mut rng = Rng::new(seed);
    let inputs: Vec<Tensor> = types.iter().zip(inits).map(|(t, i)| fill(t, i, &mut rng)).collect();
    let out = run(&m, "grad_main", inputs.clone());
    let value = f64s(&out[0])[0];
    let direct = f64s(&run(&m, f, inputs.clone())[0])[0];
    assert!((value - direct).abs() <= 1e-12 * (1.0 + direct.abs()), "value {value} != @{f}'s {direct}");
    let mut grads = vec![];
    for (j, &k) in wrt.iter().enumerate() {
        let got = f64s(&out[j + 1]);
        assert_eq!(out[j + 1].shape, inputs[k].shape, "gradient {j} shape");
        let x = f64s(&inputs[k]);
        let scale = got.iter().fold(1.0f64, |a, g| a.max(g.abs()));
        for e in 0..x.len() {
            let mut plus = inputs.clone();
            plus[k] = set(&inputs[k], e, x[e] + h);
            let mut minus = inputs.clone();
            minus[k] = set(&inputs[k], e, x[e] - h);
            let fp = f64s(&run(&m, f, plus)[0])[0];
            let fm = f64s(&run(&m, f, minus)[0])[0];
            let num = (fp - fm) / (2.0 * h);
            assert!(
                (num - got[e]).abs() <= tol * scale,
                "@{f}: d/d(param {k})[{e}]: grad {} vs numeric {num} (inputs {:?})\n{}",
                got[e],
                x,
                pjc_front::print_module(&m)
            );
        }
        grads.push(got);
    }
    (m, grads)
}

/// `@f(params..., %wt: Y) -> f64[]`: `body` computes `%y` of type `y_type`
/// from the parameters; the loss is sum(y * wt) (fixed random weights).
pub fn weighted(params: &str, body: &str, y_type: &str) -> String {
    let rank = y_type.split('[').nth(1).map_or(0, |s| if s.starts_with(']') { 0 } else { s.split(',').count() });
    let loss = if rank == 0 {
        "  %loss = mul %y, %wt".to_string()
    } else {
        let dims: Vec<String> = (0..rank).map(|d| d.to_string()).collect();
        format!("  %wy = mul %y, %wt\n  %loss = reduce %wy {{dims=[{}], kind=sum}}", dims.join(","))
    };
    let dt = y_type.split('[').next().unwrap_or("f64");
    format!("func @f({params}, %wt: {y_type}) -> (loss: {dt}[]) {{\n{body}\n{loss}\n  return %loss\n}}\n")
}

/// Grad-checks a `weighted` program: `inits` for the parameters (the weights
/// are added), gradients with respect to `wrt`.
pub fn check_op(params: &str, body: &str, y_type: &str, wrt: &[usize], inits: &[Init], seed: u64) -> Vec<Vec<f64>> {
    let src = weighted(params, body, y_type);
    let mut all = inits.to_vec();
    all.push(Init::U(-1.0, 1.0));
    check_grad(&src, "f", wrt, &all, seed).1
}

/// Inputs for `@f` of `src` drawn by `inits` (one per parameter).
pub fn draw_inputs(src: &str, f: &str, inits: &[Init], seed: u64) -> Vec<Tensor> {
    let m = load(src);
    let types = param_types(&m, f);
    assert_eq!(types.len(), inits.len(), "one Init per parameter of @{f}");
    let mut rng = Rng::new(seed);
    types.iter().zip(inits).map(|(t, i)| fill(t, i, &mut rng)).collect()
}

/// The value and gradients `grad @f {wrt}` computes on `inputs` (expanded,
/// verified and run by the interpreter).
pub fn grad_outputs(src: &str, f: &str, wrt: &[usize], inputs: &[Tensor]) -> Vec<Tensor> {
    let m = expand(&with_grad_main(src, f, wrt));
    run(&m, "grad_main", inputs.to_vec())
}

/// `src` with every `scan` (in every function) replaced by its loop unrolled
/// by hand: one `call` of the step per iteration on the sliced operands, in
/// the scan's order, outputs stacked with `concat`. The reference the
/// gradient of a scan must equal.
pub fn unroll_scans(src: &str) -> String {
    use pjc_ir::{AttrValue, Opcode, Value};
    let mut m = load(src);
    ir_util::replace_each(&mut m, Opcode::Scan, |b, d| {
        let int = |n: &str| d.attr(n).and_then(AttrValue::as_int).unwrap() as usize;
        let (len, nc) = (int("length"), int("carries"));
        let reverse = matches!(d.attr("reverse"), Some(AttrValue::Bool(true)));
        let mut carry: Vec<Value> = d.operands[..nc].to_vec();
        let mut outs: Vec<Vec<Value>> = vec![vec![]; d.results.len() - nc];
        let order: Vec<usize> = if reverse { (0..len).rev().collect() } else { (0..len).collect() };
        for &i in &order {
            let mut args = carry.clone();
            for &x in &d.operands[nc..] {
                args.push(ir_util::take(b, x, 0, i as u64, "slice"));
            }
            let r = b.try_build(Opcode::Call, &args, vec![], &d.callees, None, "it").unwrap();
            carry = r[..nc].to_vec();
            for (k, &y) in r[nc..].iter().enumerate() {
                outs[k].push(y);
            }
        }
        for mut rows in outs {
            if reverse {
                rows.reverse();
            }
            carry.push(ir_util::stack(b, &rows, 0, "stacked"));
        }
        carry
    });
    let text = pjc_front::print_module(&m);
    load(&text);
    text
}

/// Checks that two lists of results agree within the reassociation rule
/// with `rtol` (integers and `pred` exactly).
pub fn assert_all_close(want: &[Tensor], got: &[Tensor], rtol: f64, ctx: &str) {
    use pjc_tensor::compare::{close, Tolerance};
    assert_eq!(want.len(), got.len(), "number of results\n{ctx}");
    for (k, (w, g)) in want.iter().zip(got).enumerate() {
        if let Err(e) = close(w, g, Tolerance::reassoc(rtol)) {
            panic!("result {k}: {e}\nwant {:?}\ngot  {:?}\n{ctx}", f64s(w), f64s(g));
        }
    }
}
