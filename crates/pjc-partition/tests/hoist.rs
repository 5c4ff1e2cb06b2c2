//! All-reduce code motion out of loops (`hoist.rs`) on partitioned programs:
//! a hand-written gradient-accumulation scan reduces once per step, after its
//! loop, and the explain record says so; every partition test program still
//! evaluates like its global one after the motion.

mod common;

use common::{random, repo};
use pjc_ir::{FuncKind, Module, Opcode, ValueDef};
use pjc_tensor::compare::{close, Tolerance};

fn load(file: &str, mesh: Option<&str>) -> Module {
    let mut m = common::load(file, mesh);
    pjc_transforms::expand(&mut m).unwrap();
    m
}

/// Partitions and moves; checks that the result verifies and evaluates like
/// the global program (spec section 11's tolerance); returns it.
fn hoisted(file: &str, m: &Module) -> (pjc_partition::Partitioned, Vec<pjc_partition::Moved>) {
    let entry = m.func_by_name("main").unwrap();
    let prop = pjc_sharding::propagate(m, entry);
    let mut part = pjc_partition::partition(m, entry, &prop).unwrap();
    let moved = pjc_partition::hoist_all_reduces(&mut part);
    let text = pjc_front::print_module(&part.module);
    let pm = pjc_front::load(&text).unwrap_or_else(|d| panic!("{file}: the moved program does not verify:\n{}", pjc_front::render("spmd", &text, &d)));
    let f = &m.funcs[entry];
    if f.kind == FuncKind::Global {
        let mut seed = 0x5eed_u64 ^ file.len() as u64;
        let args: Vec<_> = f.params.iter().map(|&p| random(f.ty(p), &mut seed)).collect();
        let want = pjc_interp::eval(m, entry, args.clone()).unwrap();
        let got = pjc_interp::eval(&pm, pm.func_by_name("main").unwrap(), args).unwrap();
        for (k, (a, b)) in want.iter().zip(&got).enumerate() {
            close(a, b, Tolerance::spec_long_sums(f.results[k].ty.dtype)).unwrap_or_else(|e| panic!("{file}: result {k}: {e}\n{text}"));
        }
    }
    (part, moved)
}

fn all_reduces(m: &Module, f: &str) -> usize {
    let f = &m.funcs[m.func_by_name(f).unwrap()];
    f.body.iter().filter(|&&i| f.insts[i].op == Opcode::AllReduce).count()
}

#[test]
fn an_accumulation_scan_reduces_once_per_step() {
    for mesh in ["data=4", "data=2"] {
        let file = "tests/partition/scan_accumulate.pir";
        let m = load(file, Some(mesh));
        let (part, moved) = hoisted(file, &m);
        // Both gradients and the loss (a sum divided by the batch size).
        assert_eq!(moved.len(), 3, "{moved:?}");
        assert_eq!(all_reduces(&part.module, "micro"), 0);
        assert_eq!(all_reduces(&part.module, "main"), 3);
        // The record explain prints: after the loop, once per step, with the
        // partitioner's reason kept.
        let ars: Vec<_> = part.collectives.iter().filter(|c| c.op == pjc_partition::CollectiveKind::AllReduce).collect();
        assert_eq!(ars.len(), 3);
        for c in ars {
            assert_eq!(c.func, "main");
            assert!(c.reason.starts_with("after scan %g1, once per step, not per iteration (moved out of the step @micro"), "{}", c.reason);
            assert!(c.reason.ends_with("split over data: partial results"), "{}", c.reason);
        }
    }
}

#[test]
fn every_partition_test_program_keeps_its_values() {
    let mut n = 0;
    for e in std::fs::read_dir(repo().join("tests/partition")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "pir") {
            let file = format!("tests/partition/{}", p.file_name().unwrap().to_string_lossy());
            let m = load(&file, None);
            let (_, moved) = hoisted(&file, &m);
            n += moved.len();
        }
    }
    // Only the accumulation program has accumulating carries.
    assert_eq!(n, 3);
}

/// A JAX export with micro-steps in a loop (`lax.fori_loop` of SGD steps,
/// examples/jax_flax): each micro-step's update needs its gradient, so the
/// gradient all-reduces stay in the loop; only the summed loss moves out.
#[test]
fn sgd_micro_steps_keep_their_gradient_all_reduces() {
    let file = "examples/jax_flax/flax_inner.pir";
    let m = load(file, None);
    let (part, moved) = hoisted(file, &m);
    assert_eq!(moved.len(), 1, "{moved:?}");
    let f = &part.module.funcs[part.module.func_by_name("main").unwrap()];
    let ValueDef::Result(i, _) = f.values.iter().find(|(_, v)| v.name == moved[0].outer).unwrap().1.def else { panic!() };
    assert_eq!(f.values[f.insts[i].operands[0]].ty.shape.len(), 0, "the loss, a scalar");
    let body = &part.module.funcs[part.module.func_by_name(&moved[0].body).unwrap()];
    assert!(body.body.iter().any(|&i| body.insts[i].op == Opcode::AllReduce), "the gradients' all-reduces stay");
}
