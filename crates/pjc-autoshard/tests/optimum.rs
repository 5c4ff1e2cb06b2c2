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
    opts_weighted(limit, 1.0)
}

fn opts_weighted(limit: u64, memory_weight: f64) -> Options {
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
        memory_weight,
        time_limit: Duration::from_secs(10),
        runner_up: true,
    }
}

fn run(src: &str, limit: u64) -> (Module, Report) {
    run_with(src, &opts(limit))
}

fn run_with(src: &str, o: &Options) -> (Module, Report) {
    let mut m = module(src);
    let entry = m.func_by_name("main").unwrap();
    let r = auto_shard(&mut m, entry, o);
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

/// Data parallel replicates the weights; a memory limit below the replicated
/// footprint forces a weight to be split. A split weight is gathered where
/// it is used (a temporary of its whole size), so splitting saves memory
/// only because the three weights are used one at a time: at the first
/// product, data parallel holds all three whole, a split plan one gathered
/// copy beside the shards.
const LIMITED: &str = "mesh [data=4]
func @main(%x: f32[4096,512], %w1: f32[512,512], %w2: f32[512,512], %w3: f32[512,512]) -> (y: f32[4096,512]) {
  %h1 = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[4096,512]
  %h2 = dot_general %h1, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[4096,512]
  %y = dot_general %h2, %w3 {lhs_contract=[1], rhs_contract=[0]} : f32[4096,512]
  return %y
}
";

#[test]
fn memory_limit_forces_weight_sharding() {
    // Time alone (memory only bounded): data parallel.
    let (m, r) = run_with(LIMITED, &opts_weighted(u64::MAX, 0.0));
    assert_eq!(param(&m, "x"), "[data, _]", "{}", r.text());
    for w in ["w1", "w2", "w3"] {
        assert_eq!(param(&m, w), "[_, _]", "{}", r.text());
    }
    // Each weight is 1 MiB: a limit half a MiB below the data-parallel peak.
    let limit = r.estimate.peak as u64 - (1 << 19);
    let (m, r) = run_with(LIMITED, &opts_weighted(limit, 0.0));
    assert!(r.fallback.is_none(), "{}", r.text());
    assert!(["w1", "w2", "w3"].iter().any(|w| param(&m, w) != "[_, _]"), "{}", r.text());
    assert_eq!(param(&m, "x"), "[data, _]", "{}", r.text());
    assert!(r.estimate.peak <= limit as f64, "{}", r.text());
    // Too small for any plan: left to propagation, program unchanged.
    let (m, r) = run(LIMITED, 1000);
    assert!(
        r.fallback.as_deref().unwrap_or("").contains("memory limit"),
        "{}",
        r.text()
    );
    assert_eq!(param(&m, "w1"), "");
}

/// A forward MLP with large weights and a small batch (benches/partition's
/// megatron_mlp.pir without its annotations): splitting the batch over both
/// axes moves nothing but holds both 1 MiB weights whole on every device;
/// splitting the weights costs collectives of the small activations and holds
/// a fraction. Time alone picks the former; memory weighed beside time (the
/// default) a split of both weights, at a far lower peak, for a step time
/// that costs less than the memory it saves is worth.
const TIE: &str = "mesh [data=2, model=2]
func @main(%x: f32[64,256], %w1: f32[256,1024], %w2: f32[1024,256]) -> (y: f32[64,256]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[64,1024]
  %a = tanh %h
  %y = dot_general %a, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[64,256]
  return %y
}
";

#[test]
fn memory_weighs_beside_time() {
    let (m0, r0) = run_with(TIE, &opts_weighted(u64::MAX, 0.0));
    assert_eq!(param(&m0, "x"), "[(data, model), _]", "{}", r0.text());
    assert_eq!(param(&m0, "w1"), "[_, _]", "{}", r0.text());
    assert_eq!(param(&m0, "w2"), "[_, _]", "{}", r0.text());
    let (m1, r1) = run_with(TIE, &opts_weighted(u64::MAX, 1.0));
    assert_ne!(param(&m1, "w1"), "[_, _]", "{}", r1.text());
    assert_ne!(param(&m1, "w2"), "[_, _]", "{}", r1.text());
    assert!(r1.estimate.peak < 0.6 * r0.estimate.peak, "{}\n{}", r0.text(), r1.text());
    assert!(r1.estimate.step() > r0.estimate.step(), "{}\n{}", r0.text(), r1.text());
    // The trade the weight allows: the time spent is at most the bytes saved
    // priced at the all-replicated plan's step time per byte of its peak.
    let price = r1.baseline.step() / r1.baseline.peak;
    let spent = r1.estimate.step() - r0.estimate.step();
    assert!(spent <= price * (r0.estimate.peak - r1.estimate.peak), "{}\n{}", r0.text(), r1.text());
}

/// An MLP stack of `layers` identical Megatron-shaped blocks (large weights,
/// a small batch), as PIR text.
fn stack(layers: usize) -> String {
    let mut params = String::new();
    let mut body = String::new();
    let mut x = "%x".to_string();
    for i in 0..layers {
        params.push_str(&format!(", %w1_{i}: f32[1024,4096], %w2_{i}: f32[4096,1024]"));
        body.push_str(&format!(
            "  %h{i} = dot_general {x}, %w1_{i} {{lhs_contract=[1], rhs_contract=[0]}} : f32[8,4096]\n  %a{i} = tanh %h{i}\n  %y{i} = dot_general %a{i}, %w2_{i} {{lhs_contract=[1], rhs_contract=[0]}} : f32[8,1024]\n  %r{i} = add {x}, %y{i}\n"
        ));
        x = format!("%r{i}");
    }
    format!("mesh [model=4]\nfunc @main(%x: f32[8,1024]{params}) -> (y: f32[8,1024]) {{\n{body}  return {x}\n}}\n")
}

/// Layer merging: the copies of a layer share one decision, so the problem
/// does not grow with the number of layers, and every layer gets the plan a
/// lone layer gets (Megatron).
#[test]
fn copies_of_a_layer_share_a_decision() {
    let (m2, r2) = run(&stack(2), u64::MAX);
    let (m12, r12) = run(&stack(12), u64::MAX);
    assert!(r12.fallback.is_none(), "{}", r12.text());
    for (m, layers) in [(&m2, 2), (&m12, 12)] {
        for i in 0..layers {
            assert_eq!(param(m, &format!("w1_{i}")), "[_, model]", "layer {i} of {layers}");
            assert_eq!(param(m, &format!("w2_{i}")), "[model, _]", "layer {i} of {layers}");
        }
    }
    let decisions = |r: &Report| r.solves.iter().map(|o| o.decisions).max().unwrap();
    assert!(r12.nodes > 5 * r2.nodes, "{} vs {}", r12.nodes, r2.nodes);
    assert!(decisions(&r12) <= decisions(&r2) + 4, "{}\n{}", r2.text(), r12.text());
    // Twelve copies of the step time of one, within rounding.
    let per_layer = |r: &Report, l: f64| r.estimate.step() / l;
    assert!((per_layer(&r12, 12.0) / per_layer(&r2, 2.0) - 1.0).abs() < 0.05, "{}\n{}", r2.text(), r12.text());
}

/// The memory model counts what the fusion planner stores: an elementwise
/// chain's intermediates live inside one kernel, so the all-replicated peak
/// is the parameter and the result, not the chain's values as well.
#[test]
fn fused_intermediates_take_no_memory() {
    let src = "mesh [data=2]
func @main(%x: f32[256,256]) -> (y: f32[256,256]) {
  %a = tanh %x
  %b = exp %a
  %y = sqrt %b
  return %y
}
";
    let (_, r) = run(src, u64::MAX);
    let bytes = 256.0 * 256.0 * 4.0;
    assert_eq!(r.baseline.peak, 2.0 * bytes, "{}", r.text());
}
