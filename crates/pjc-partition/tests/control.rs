//! Control flow through the partitioner (spec sections 6 and 7.1): every
//! program with `while`, `scan` or `switch` evaluates like its global one on
//! meshes of 2 and 4 devices, each body is partitioned once, carried values
//! keep one sharding (resharded once, on entry, never per iteration), scanned
//! dimension 0 stays unsplit inside loops, and switch branches share one
//! local signature.

mod common;

use common::check;
use pjc_ir::{FuncKind, Module, Opcode};
use pjc_partition::{CollectiveKind, Partitioned};

fn load(file: &str, mesh: Option<&str>) -> Module {
    common::load(file, mesh)
}

fn partition(m: &Module) -> Partitioned {
    pjc_sharding::check_control(m).unwrap();
    let entry = m.func_by_name("main").unwrap();
    let p = pjc_sharding::propagate(m, entry);
    pjc_partition::partition(m, entry, &p).unwrap()
}

/// The collectives of function `name` of the per-device module, in order.
fn collectives_in(part: &Partitioned, name: &str) -> Vec<(CollectiveKind, String)> {
    let f = &part.module.funcs[part.module.func_by_name(name).unwrap_or_else(|| panic!("no @{name}"))];
    f.body
        .iter()
        .filter_map(|&i| {
            let d = &f.insts[i];
            d.op.collective().map(|k| (k, d.comments.eol.clone().unwrap_or_default()))
        })
        .collect()
}

const PROGRAMS: &[(&str, &[&str])] = &[
    ("tests/partition/while_dp_sgd.pir", &["data=2", "data=4"]),
    ("tests/partition/while_zero_trips.pir", &["data=2"]),
    ("tests/partition/scan_layers_2d.pir", &["data=2,model=2", "data=4,model=1", "data=1,model=4"]),
    ("tests/partition/scan_split_dim0.pir", &["data=4", "data=2"]),
    ("tests/partition/switch_branch_shardings.pir", &["data=4", "data=2"]),
    ("tests/partition/nested_control.pir", &["data=2,model=2", "data=2,model=1", "data=2,model=4"]),
];

#[test]
fn control_flow_partitions_evaluate_like_global_programs() {
    let mut failures = vec![];
    for &(file, meshes) in PROGRAMS {
        for &mesh in meshes {
            let m = load(file, Some(mesh));
            if let Err(e) = check(std::path::Path::new(file), &m, None) {
                failures.push(format!("{file} on {mesh}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_data_parallel_loop_reduces_gradients_in_its_body_and_reshards_nothing_else() {
    let part = partition(&load("tests/partition/while_dp_sgd.pir", None));
    assert!(collectives_in(&part, "main").is_empty(), "initial values already have the carried shardings");
    assert!(collectives_in(&part, "cond").is_empty());
    let body = collectives_in(&part, "step");
    assert_eq!(body.len(), 1, "{body:?}");
    assert_eq!(body[0].0, CollectiveKind::AllReduce);
    assert!(body[0].1.contains("in the body @step of while %n, per iteration"), "{}", body[0].1);
    // The carried weights: replicated local parameter and result of the body.
    let f = &part.module.funcs[part.module.func_by_name("step").unwrap()];
    assert_eq!(f.kind, FuncKind::Spmd);
    assert_eq!(f.values[f.params[1]].ty.to_string(), "f32[16,4]");
    assert_eq!(f.values[f.params[2]].ty.to_string(), "f32[4,16]", "the batch stays split over data");
    assert_eq!(f.results[2].ty.to_string(), "f32[4,16]", "and so does the body's result");
    // A local body's signature carries no `on`: inside a spmd func its values
    // vary as the statement's do, which the verifier infers.
    assert!(f.results.iter().all(|r| r.sharding.is_none()));
}

#[test]
fn each_body_is_partitioned_once_and_initial_values_are_resharded_on_entry() {
    let part = partition(&load("tests/partition/nested_control.pir", None));
    let names: Vec<&str> = part.module.funcs.values().map(|f| f.name.as_str()).collect();
    for body in ["more", "inc", "layer", "keep", "flip"] {
        assert_eq!(names.iter().filter(|n| **n == body).count(), 1, "@{body} in {names:?}");
    }
    assert!(!names.iter().any(|n| n.starts_with("inc.")), "{names:?}");
    // The second loop's initial value is the first loop's result: same
    // sharding, so nothing moves between the loops.
    assert!(collectives_in(&part, "main").iter().all(|(_, why)| why.contains("result '")), "{:?}", collectives_in(&part, "main"));
    let zero = partition(&load("tests/partition/while_zero_trips.pir", None));
    let entry = collectives_in(&zero, "main");
    assert_eq!(entry[0].0, CollectiveKind::AllToAll);
    assert!(entry[0].1.contains("initial value 1 of while %n"), "{entry:?}");
    assert!(collectives_in(&zero, "body").is_empty(), "never per iteration");
}

#[test]
fn scanned_dimension_zero_is_gathered_on_entry_and_split_again_on_exit() {
    let part = partition(&load("tests/partition/scan_split_dim0.pir", None));
    let main = &part.module.funcs[part.module.func_by_name("main").unwrap()];
    let scan = main.body.iter().position(|&i| main.insts[i].op == Opcode::Scan).unwrap();
    let whys: Vec<(usize, String)> = main
        .body
        .iter()
        .enumerate()
        .filter_map(|(k, &i)| main.insts[i].comments.eol.clone().map(|w| (k, w)))
        .collect();
    let entry = whys.iter().find(|(_, w)| w.contains("scanned operand %xs")).expect("the scanned operand is resharded");
    assert!(entry.0 < scan && entry.1.contains("dimension 0 of a scanned operand is never split"), "{whys:?}");
    let exit = whys.iter().find(|(_, w)| w.contains("stacked output %ys")).expect("the stacked output is resharded");
    assert!(exit.0 > scan, "{whys:?}");
    // Inside the loop: slices only, never split on the scanned dimension.
    let inst = &main.insts[main.body[scan]];
    for &o in &inst.operands[1..] {
        assert_eq!(main.values[o].ty.shape[0], 8, "{}", main.values[o].ty);
    }
    assert!(collectives_in(&part, "step").is_empty());
}

#[test]
fn switch_branches_share_one_local_signature() {
    let part = partition(&load("tests/partition/switch_branch_shardings.pir", None));
    let sig = |n: &str| {
        let f = &part.module.funcs[part.module.func_by_name(n).unwrap()];
        let p: Vec<String> = f.params.iter().map(|&v| format!("{} {:?}", f.values[v].ty, f.values[v].sharding)).collect();
        let r: Vec<String> = f.results.iter().map(|r| format!("{} {:?}", r.ty, r.sharding)).collect();
        (p, r)
    };
    assert_eq!(sig("b0"), sig("b1"));
    assert_eq!(sig("b0"), sig("b2"));
    let b1 = collectives_in(&part, "b1");
    assert_eq!(b1.len(), 1, "{b1:?}");
    assert!(b1[0].1.contains("in branch @b1 of switch %r0, when taken"), "{}", b1[0].1);
    // Three switches over the same branches with the same operands: one partitioning.
    assert_eq!(part.module.funcs.values().filter(|f| f.name.starts_with("b0")).count(), 1);
}
