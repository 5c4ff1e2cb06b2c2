//! Auto-sharding only adds annotations, so an auto-sharded program computes
//! what the unannotated one does: the examples with every annotation removed
//! but the mesh are auto-sharded, propagated and partitioned, and the
//! per-device program (every device simulated by the interpreter, real
//! collective semantics) must give the unsharded program's results within
//! the spec's tolerance.

use pjc_autoshard::{auto_shard, Link, Machine, Options};
use pjc_ir::{DType, Module};
use pjc_tensor::compare::{close, Tolerance};
use pjc_tensor::{Buf, Tensor};
use std::path::PathBuf;
use std::time::Duration;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The program at `rel` with every ` on [...]` removed: only the mesh is left.
fn unannotated(rel: &str) -> String {
    let src = std::fs::read_to_string(repo().join(rel)).unwrap();
    let mut out = String::new();
    let mut rest = src.as_str();
    while let Some(i) = rest.find(" on [") {
        out.push_str(&rest[..i]);
        let close = rest[i..].find(']').expect("closed sharding") + i;
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    assert!(!out.contains(" on ["), "{rel}: annotations left");
    out
}

fn load(text: &str, what: &str) -> Module {
    pjc_front::load(text).unwrap_or_else(|d| panic!("{what} does not verify:\n{}", pjc_front::render(what, text, &d)))
}

/// Deterministic float inputs in [-1, 1] (xorshift).
fn random(ty: &pjc_ir::TensorType, seed: &mut u64) -> Tensor {
    assert_eq!(ty.dtype, DType::F32, "the test programs take f32 inputs");
    let v: Vec<f64> = (0..ty.num_elements())
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            (*seed % 2001) as f64 / 1000.0 - 1.0
        })
        .collect();
    Tensor::new(ty.shape.iter().map(|&d| d as usize).collect(), Buf::from_f64(DType::F32, &v))
}

fn options(memory_limit: u64) -> Options {
    Options {
        machine: Machine {
            gflops: 1000.0,
            gbps: 100.0,
            axis_links: vec![],
            link: Link { gbps: 25.0, latency_us: 5.0 },
        },
        memory_limit,
        memory_weight: 1.0,
        time_limit: Duration::from_secs(60),
        runner_up: true,
    }
}

/// Auto-shards `rel` (unannotated) and checks its partitioned program
/// against the unannotated program; returns the entry parameters' chosen
/// shardings by name, for the caller to check that the plan splits what it
/// should (an all-replicated plan would pass trivially).
fn check(rel: &str, memory_limit: u64) -> Vec<(String, String)> {
    let text = unannotated(rel);
    let mut global = load(&text, rel);
    pjc_transforms::expand(&mut global).expect("expands");
    let entry = global.func_by_name("main").unwrap();
    let f = &global.funcs[entry];
    let mut seed = 0x9e3779b97f4a7c15u64;
    let args: Vec<Tensor> = f.params.iter().map(|&p| random(f.ty(p), &mut seed)).collect();
    let want = pjc_interp::eval(&global, entry, args.clone()).expect("global eval");

    let mut m = global.clone();
    let report = auto_shard(&mut m, entry, &options(memory_limit));
    assert!(report.fallback.is_none(), "{rel}: {}", report.text());
    // The annotated program as text, read back: what `pjc compile` propagates.
    let annotated = pjc_front::print_module(&m);
    let m = load(&annotated, "auto-sharded");
    let entry = m.func_by_name("main").unwrap();
    let prop = pjc_sharding::propagate(&m, entry);
    let part = pjc_partition::partition(&m, entry, &prop).unwrap_or_else(|e| panic!("{rel}: partition: {e}"));
    let spmd = pjc_front::print_module(&part.module);
    let pm = load(&spmd, "partitioned");
    let got = pjc_interp::eval(&pm, pm.func_by_name("main").unwrap(), args).expect("partitioned eval");
    assert_eq!(want.len(), got.len());
    let f = &m.funcs[entry];
    for (k, (a, b)) in want.iter().zip(&got).enumerate() {
        close(a, b, Tolerance::spec_long_sums(f.results[k].ty.dtype))
            .unwrap_or_else(|e| panic!("{rel}: result {k} differs: {e}\n{}\n{annotated}", report.text()));
    }
    (0..f.params.len())
        .map(|i| {
            let s = f.values[f.params[i]].sharding.as_ref().map(|s| s.to_string()).unwrap_or_default();
            (f.param_name(i).to_string(), s)
        })
        .collect()
}

fn split(plan: &[(String, String)], name: &str) -> String {
    plan.iter().find(|(n, _)| n == name).map(|(_, s)| s.clone()).unwrap_or_else(|| panic!("no parameter {name}"))
}

#[test]
fn mlp_training_step_auto_sharded_computes_the_same() {
    let plan = check("examples/mlp_train.pir", u64::MAX);
    assert!(plan.iter().any(|(_, s)| s.contains("data")), "nothing split: {plan:?}");
}

#[test]
fn transformer_block_auto_sharded_computes_the_same() {
    let plan = check("benches/partition/transformer_block.pir", u64::MAX);
    assert!(split(&plan, "x").contains("data"), "batch not split: {plan:?}");
}

/// A memory limit below the replicated weights forces them over `model`:
/// the partitioned program then completes partial sums with collectives.
#[test]
fn memory_limited_plans_split_weights_and_compute_the_same() {
    let plan = check("benches/partition/transformer_block.pir", 50_000);
    assert!(plan.iter().any(|(n, s)| n.starts_with('w') && s.contains("model")), "no weight split: {plan:?}");
    let plan = check("benches/partition/megatron_mlp.pir", 1_300_000);
    assert!(split(&plan, "w1").contains("model") || split(&plan, "w2").contains("model"), "{plan:?}");
}

/// A 2-layer GPT-style training step (benches/autoshard/gen_gpt.py: causal
/// attention, GELU, layer norms, `grad` of every weight and the SGD update):
/// the plan splits some weights, and the step's loss and new weights match.
#[test]
fn gpt_training_step_auto_sharded_computes_the_same() {
    let plan = check("benches/autoshard/gpt_small_train.pir", u64::MAX);
    assert!(
        plan.iter().any(|(n, s)| n.starts_with('l') && (s.contains("model") || s.contains("data"))),
        "no weight split: {plan:?}"
    );
}
