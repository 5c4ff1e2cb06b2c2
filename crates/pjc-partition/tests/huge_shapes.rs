//! Programs that declare more bytes than a u64 counts (found by the
//! `compile_plan` fuzz target): the partitioner's cost estimate and the
//! all-reduce combiner saturate instead of overflowing.

fn load(src: &str) -> pjc_ir::Module {
    pjc_front::load(src).unwrap_or_else(|d| panic!("{}", pjc_front::render("t.pir", src, &d)))
}

#[test]
fn collective_cost_of_a_huge_value_saturates() {
    let m = load("mesh [data=4]\nfunc @main(%x: f32[4611686018427387904, 4] on [data, _]) -> (y: f32[4611686018427387904, 4]) {\n  %y = neg %x\n  return %y\n}\n");
    let id = m.func_by_name("main").unwrap();
    let p = pjc_sharding::propagate(&m, id);
    let part = pjc_partition::partition(&m, id, &p).expect("partitions");
    assert!(!part.collectives.is_empty(), "the replicated result needs a collective");
    // The size saturates at u64::MAX bytes; the ring formula scales it by (n-1)/n.
    for c in &part.collectives {
        assert!(c.bytes_per_device >= u64::MAX / 4 * 3, "{} {}: {} B", c.value, c.op.name(), c.bytes_per_device);
    }
}

#[test]
fn huge_all_reduces_are_not_combined() {
    let m = load("mesh [data=4]\nspmd func @main(%x: f32[4611686018427387904], %w: f32[4611686018427387904]) -> (y: f32[4611686018427387904], z: f32[4611686018427387904]) {\n  %y = all_reduce %x {axes=[data], kind=sum}\n  %z = all_reduce %w {axes=[data], kind=sum}\n  return %y, %z\n}\n");
    let mut f = m.funcs.values().next().unwrap().clone();
    assert_eq!(pjc_partition::combine_all_reduces(&mut f, &m.mesh_or_single()), 0);
}
