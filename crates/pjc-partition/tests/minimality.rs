//! Minimality: for textbook programs, exactly the communication derived by hand
//! (and nothing on values whose producer and consumer agree).

use pjc_partition::{CollectiveKind, Inserted};
use std::path::PathBuf;

fn collectives(file: &str) -> Vec<Inserted> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(file);
    let src = std::fs::read_to_string(&path).unwrap();
    let m = pjc_front::load(&src).unwrap_or_else(|d| panic!("{}", pjc_front::render(file, &src, &d)));
    let entry = m.func_by_name("main").unwrap();
    let p = pjc_sharding::propagate(&m, entry);
    pjc_partition::partition(&m, entry, &p).unwrap().collectives
}

fn kinds(cs: &[Inserted]) -> Vec<CollectiveKind> {
    cs.iter().map(|c| c.op).collect()
}

#[test]
fn megatron_mlp_forward_has_one_all_reduce_of_the_output() {
    let cs = collectives("tests/text/sharding/megatron_mlp.pir");
    assert_eq!(kinds(&cs), vec![CollectiveKind::AllReduce]);
    assert_eq!(cs[0].axes, vec!["model"]);
    // Output f32[8,32] = 1024 bytes; ring all-reduce over 4: 2*(3/4)*1024.
    assert_eq!(cs[0].bytes_per_device, 2 * 3 * 1024 / 4);
}

#[test]
fn data_parallel_training_step_all_reduces_only_gradients_and_loss() {
    let cs = collectives("tests/partition/mlp_train_dp.pir");
    assert!(cs.iter().all(|c| c.op == CollectiveKind::AllReduce && c.axes == ["data"]), "{cs:#?}");
    let mut reduced: Vec<&str> = cs.iter().map(|c| c.value.as_str()).collect();
    reduced.sort();
    assert_eq!(reduced, vec!["dw1.ar", "dw2.ar", "s.ar"], "{cs:#?}");
    // 2(n-1)/n x (parameter bytes + 4): w1 12x16 and w2 16x5 f32, plus the loss.
    let params = (12 * 16 + 16 * 5) * 4;
    let total: u64 = cs.iter().map(|c| c.bytes_per_device).sum();
    assert_eq!(total, 2 * 3 * (params + 4) / 4);
}

#[test]
fn data_parallel_conv_forward_needs_no_communication() {
    assert!(collectives("tests/partition/conv_dp_forward.pir").is_empty());
}

#[test]
fn spatially_split_convolution_only_exchanges_halos() {
    let cs = collectives("tests/partition/conv_halo.pir");
    assert!(cs.iter().all(|c| c.op == CollectiveKind::CollectivePermute), "{cs:#?}");
    // 5x5 conv: 2 rows from each side of f32[2,_,8,3] blocks; 3x3 pool: 1 row of f32[2,_,8,4].
    let mut bytes: Vec<u64> = cs.iter().map(|c| c.bytes_per_device).collect();
    bytes.sort();
    assert_eq!(bytes, vec![2 * 8 * 4 * 4, 2 * 8 * 4 * 4, 2 * 2 * 8 * 3 * 4, 2 * 2 * 8 * 3 * 4]);
}

#[test]
fn agreeing_producer_and_consumer_insert_nothing() {
    assert!(collectives("tests/partition/agree_no_reshard.pir").is_empty());
    assert!(collectives("tests/text/sharding/dp_mlp.pir").is_empty());
}

#[test]
fn moving_a_split_between_dimensions_is_one_all_to_all() {
    let cs = collectives("tests/partition/moved_split.pir");
    assert_eq!(kinds(&cs), vec![CollectiveKind::AllToAll]);
}

#[test]
fn contraction_wanted_split_uses_reduce_scatter() {
    let cs = collectives("tests/partition/reduce_scatter.pir");
    assert_eq!(kinds(&cs), vec![CollectiveKind::ReduceScatter]);
    // reduce_scatter of the f32[8,12] partial sums over 4 devices: (3/4) * 384.
    assert_eq!(cs[0].bytes_per_device, 3 * 384 / 4);
}
