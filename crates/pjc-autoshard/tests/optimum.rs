//! Small programs whose optimal plan is known by hand: auto-sharding must find it.

use pjc_autoshard::{auto_shard, Link, Machine, Options, Report};
use pjc_ir::Module;
use std::time::Duration;

fn module(src: &str) -> Module {
    let mut m = pjc_front::parse(src).expect("parses");
    pjc_front::verify(&mut m).expect("verifies");
    pjc_transforms::expand(&mut m).expect("expands");
    m
}

fn opts(limit: u64) -> Options {
    let link = Link {
        gbps: 25.0,
        latency_us: 5.0,
    };
    Options {
        machine: Machine {
            gflops: 1000.0,
            gbps: 100.0,
            axis_links: vec![],
            link,
        },
        memory_limit: limit,
        time_limit: Duration::from_secs(10),
        runner_up: true,
    }
}

fn run(src: &str, limit: u64) -> (Module, Report) {
    let mut m = module(src);
    let entry = m.func_by_name("main").unwrap();
    let r = auto_shard(&mut m, entry, &opts(limit));
    (m, r)
}

fn param(m: &Module, name: &str) -> String {
    let f = &m.funcs[m.func_by_name("main").unwrap()];
    let i = (0..f.params.len())
        .find(|&i| f.param_name(i) == name)
        .unwrap();
    f.values[f.params[i]]
        .sharding
        .as_ref()
        .map(|s| s.to_string())
        .unwrap_or_default()
}

/// A training step with a small weight and a large batch: the batch is split
/// and the weight replicated (data parallel); the gradient's all-reduce is
/// the only collective.
const DATA_PARALLEL: &str = "mesh [data=4]
func @loss(%w: f32[16,16], %x: f32[65536,16]) -> (f32[]) {
  %y = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[65536,16]
  %sq = mul %y, %y
  %l = reduce %sq {dims=[0,1], kind=sum} : f32[]
  return %l
}
func @main(%w: f32[16,16], %x: f32[65536,16]) -> (loss: f32[], w: f32[16,16]) {
  %l, %g = grad @loss(%w, %x) {wrt=[0]} : (f32[], f32[16,16])
  %lr = constant 0.01 : f32[16,16]
  %u = mul %g, %lr
  %wn = sub %w, %u
  return %l, %wn
}
";

#[test]
fn small_weights_large_batch_is_data_parallel() {
    let (m, r) = run(DATA_PARALLEL, u64::MAX);
    assert!(r.fallback.is_none(), "{}", r.text());
    assert_eq!(param(&m, "x"), "[data, _]", "{}", r.text());
    assert_eq!(param(&m, "w"), "[_, _]", "{}", r.text());
    assert!(r.estimate.step() <= r.baseline.step());
}

/// A forward MLP with large weights and a small batch: Megatron (w1 split
/// by columns, w2 by rows, one all-reduce of the small output) beats
/// reading whole weights on every device.
const MEGATRON: &str = "mesh [model=4]
func @loss(%w1: f32[1024,4096], %w2: f32[4096,1024], %x: f32[8,1024]) -> (f32[]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[8,4096]
  %a = tanh %h
  %y = dot_general %a, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[8,1024]
  %sq = mul %y, %y
  %l = reduce %sq {dims=[0,1], kind=sum} : f32[]
  return %l
}
func @main(%x: f32[8,1024], %w1: f32[1024,4096], %w2: f32[4096,1024]) -> (loss: f32[], w1: f32[1024,4096], w2: f32[4096,1024]) {
  %l, %g1, %g2 = grad @loss(%w1, %w2, %x) {wrt=[0,1]} : (f32[], f32[1024,4096], f32[4096,1024])
  %lr1 = constant 0.01 : f32[1024,4096]
  %u1 = mul %g1, %lr1
  %w1n = sub %w1, %u1
  %lr2 = constant 0.01 : f32[4096,1024]
  %u2 = mul %g2, %lr2
  %w2n = sub %w2, %u2
  return %l, %w1n, %w2n
}
";

#[test]
fn large_weights_small_activations_is_megatron() {
    let (m, r) = run(MEGATRON, u64::MAX);
    assert!(r.fallback.is_none(), "{}", r.text());
    assert_eq!(param(&m, "w1"), "[_, model]", "{}", r.text());
    assert_eq!(param(&m, "w2"), "[model, _]", "{}", r.text());
    assert!(r.runner_up.is_some(), "{}", r.text());
    assert!(r.runner_up.as_ref().unwrap().estimate.step() >= r.estimate.step());
}

/// Data parallel replicates the weight; a memory limit below the replicated
/// footprint forces the weight to be split.
const LIMITED: &str = "mesh [data=4]
func @main(%x: f32[4096,512], %w: f32[512,512]) -> (y: f32[4096,512]) {
  %y = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[4096,512]
  return %y
}
";

#[test]
fn memory_limit_forces_weight_sharding() {
    let (m, r) = run(LIMITED, u64::MAX);
    assert_eq!(param(&m, "x"), "[data, _]", "{}", r.text());
    assert_eq!(param(&m, "w"), "[_, _]", "{}", r.text());
    // The weight is 1 MiB: a limit half a MiB below the data-parallel peak.
    let limit = r.estimate.peak as u64 - (1 << 19);
    let (m, r) = run(LIMITED, limit);
    assert!(r.fallback.is_none(), "{}", r.text());
    assert_ne!(param(&m, "w"), "[_, _]", "{}", r.text());
    assert_eq!(param(&m, "x"), "[data, _]", "{}", r.text());
    assert!(r.estimate.peak <= limit as f64, "{}", r.text());
    // Too small for any plan: left to propagation, program unchanged.
    let (m, r) = run(LIMITED, 1000);
    assert!(
        r.fallback.as_deref().unwrap_or("").contains("memory limit"),
        "{}",
        r.text()
    );
    assert_eq!(param(&m, "w"), "");
}

/// Written annotations are kept as written.
#[test]
fn annotations_are_respected() {
    let main = "func @main(%x: f32[8,1024], %w1: f32[1024,4096], %w2: f32[4096,1024]) -> (loss: f32[], w1: f32[1024,4096],";
    let annotated = "func @main(%x: f32[8,1024], %w1: f32[1024,4096] on [model, _], %w2: f32[4096,1024]) -> (loss: f32[], w1: f32[1024,4096] on [model, _],";
    assert!(MEGATRON.contains(main));
    let src = MEGATRON
        .replace(main, annotated)
        .replace(": f32[8,4096]\n", ": f32[8,4096] on [?, _]\n");
    assert!(src.contains("on [?, _]"));
    let (m, r) = run(&src, u64::MAX);
    assert!(r.fallback.is_none(), "{}", r.text());
    assert_eq!(param(&m, "w1"), "[model, _]", "{}", r.text());
    assert!(
        r.choices.iter().any(|c| c.name == "w1" && c.written),
        "{}",
        r.text()
    );
    // The `?` constraint inside @loss is the user's and stays as written.
    assert!(pjc_front::print_module(&m).contains("on [?, _]"));
}
