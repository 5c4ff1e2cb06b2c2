//! The factor rules as instantiated for instructions: the exact notation
//! `pjc explain` prints (and that propagation and the partitioner use) for
//! representative instructions of every form of declaration, and a check that
//! every op of the table either has a rule that instantiates on the programs
//! of the repository or is one without factors (calls, collectives, grad/vmap).

use pjc_dialects::ShardingRule;
use pjc_ir::{FuncKind, Module, Opcode};
use pjc_sharding::rules::{factor_rule, FactorKind, FactorRule};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn load(src: &str) -> Module {
    pjc_front::load(src).unwrap_or_else(|d| panic!("{}", pjc_front::render("test.pir", src, &d)))
}

/// The rule of the instruction defining `%name` in `@main` of `src`.
fn rule(src: &str, name: &str) -> FactorRule {
    let m = load(src);
    let f = &m.funcs[m.func_by_name("main").unwrap()];
    let inst = f.body.iter().map(|&i| &f.insts[i]).find(|i| f.values[i.results[0]].name == name).unwrap_or_else(|| panic!("no %{name}"));
    factor_rule(f, inst)
}

fn notation(src: &str, name: &str) -> String {
    rule(src, name).notation()
}

#[test]
fn dot_general_with_batch_dims_is_b_i_k_times_b_k_j() {
    let src = "func @main(%x: f32[2,8,4], %w: f32[2,4,6]) -> (y: f32[2,8,6]) {
  %y = dot_general %x, %w {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]}
  return %y
}";
    assert_eq!(notation(src, "y"), "([b, i, k], [b, k, j]) -> ([b, i, j]) {b=2, i=8, j=6, k=4} reduction={k}");
    let r = rule(src, "y");
    let c = r.completion.expect("a contraction is completed by summing");
    assert_eq!((c.kind.name(), c.what), ("sum", "contracting dimension"));
}

#[test]
fn dot_general_groups_of_several_dims_number_their_factors() {
    let src = "func @main(%x: f32[8,3,4], %w: f32[4,3,6,5]) -> (y: f32[8,6,5]) {
  %y = dot_general %x, %w {lhs_contract=[2, 1], rhs_contract=[0, 1]}
  return %y
}";
    assert_eq!(notation(src, "y"), "([i, k1, k0], [k0, k1, j0, j1]) -> ([i, j0, j1]) {i=8, j0=6, j1=5, k0=4, k1=3} reduction={k0, k1}");
}

#[test]
fn reduce_marks_the_reduced_dims_and_completes_with_its_kind() {
    let src = "func @main(%x: f32[8,4,6], %p: pred[8,4]) -> (s: f32[4], a: pred[4]) {
  %s = reduce %x {dims=[2, 0], kind=sum}
  %a = reduce %p {dims=[0], kind=and}
  return %s, %a
}";
    assert_eq!(notation(src, "s"), "([k0, i, k1]) -> ([i]) {i=4, k0=8, k1=6} reduction={k0, k1}");
    let c = rule(src, "s").completion.unwrap();
    assert_eq!((c.kind.name(), c.what), ("sum", "reduced dimension"));
    // `and` over pred is completed by a min.
    assert_eq!(rule(src, "a").completion.unwrap().kind.name(), "min");
}

#[test]
fn reduce_without_a_collective_leaves_no_completion() {
    let src = "func @main(%x: i32[8,4]) -> (s: i32[4]) {
  %s = reduce %x {dims=[0], kind=and}
  return %s
}";
    let r = rule(src, "s");
    assert_eq!(r.notation(), "([k, i]) -> ([i]) {i=4, k=8} reduction={k}");
    assert_eq!(r.completion, None);
}

#[test]
fn argmax_needs_the_reduced_dim_replicated() {
    let src = "func @main(%x: f32[8,4]) -> (a: i32[8]) {
  %a = argmax %x {dim=1} : i32[8]
  return %a
}";
    assert_eq!(notation(src, "a"), "([i, k]) -> ([i]) {i=8, k=4} need_replication={k}");
}

#[test]
fn transpose_places_operand_dims_by_perm() {
    let src = "func @main(%x: f32[8,4,6]) -> (t: f32[6,8,4]) {
  %t = transpose %x {perm=[2, 0, 1]}
  return %t
}";
    assert_eq!(notation(src, "t"), "([i1, i2, i0]) -> ([i0, i1, i2]) {i0=6, i1=8, i2=4}");
}

#[test]
fn broadcast_new_and_stretched_dims_are_result_only() {
    let src = "func @main(%v: f32[4], %u: f32[1,4]) -> (b: f32[8,4], c: f32[8,4]) {
  %b = broadcast %v {dims=[1]} : f32[8,4]
  %c = broadcast %u {dims=[0, 1]} : f32[8,4]
  return %b, %c
}";
    assert_eq!(notation(src, "b"), "([i]) -> ([j, i]) {i=4, j=8}");
    assert_eq!(notation(src, "c"), "([_, i1]) -> ([i0, i1]) {i0=8, i1=4}");
}

#[test]
fn sources_and_elementwise_ops_pass_every_dim() {
    let src = "func @main(%x: f32[8,4], %s: f32[]) -> (y: f32[8,4], z: f32[8,4]) {
  %c = iota {dim=0} : f32[8,4]
  %y = add %x, %c
  %sb = broadcast %s : f32[8,4]
  %p = compare %x, %y {dir=lt}
  %z = select %p, %y, %sb
  return %y, %z
}";
    assert_eq!(notation(src, "c"), "() -> ([i0, i1]) {i0=8, i1=4}");
    assert_eq!(notation(src, "y"), "([i, j], [i, j]) -> ([i, j]) {i=8, j=4}");
    assert_eq!(notation(src, "z"), "([i, j], [i, j], [i, j]) -> ([i, j]) {i=8, j=4}");
}

#[test]
fn concat_and_slice_need_the_changed_dim_replicated() {
    let src = "func @main(%a: f32[4,6], %b: f32[4,2], %x: f32[8,6]) -> (c: f32[4,8], s: f32[8,4]) {
  %c = concat %a, %b {dim=1}
  %s = slice %x {start=[0, 1], limit=[8, 5]}
  return %c, %s
}";
    assert_eq!(notation(src, "c"), "([i, j], [i, k]) -> ([i, l]) {i=4, j=6, k=2, l=8} need_replication={j, k, l}");
    assert_eq!(notation(src, "s"), "([i, j]) -> ([i, k]) {i=8, j=6, k=4} need_replication={j, k}");
}

#[test]
fn dynamic_update_slice_shares_the_operand_and_result_dim() {
    let src = "func @main(%x: f32[8,6], %u: f32[8,2], %i: i32[]) -> (y: f32[8,6]) {
  %y = dynamic_update_slice %x, %u, %i, %i
  return %y
}";
    assert_eq!(notation(src, "y"), "([i, j], [i, k], [], []) -> ([i, j]) {i=8, j=6, k=2} need_replication={j, k}");
}

#[test]
fn windows_are_permutation_factors() {
    let src = "func @main(%x: f32[8,16]) -> (y: f32[8,16]) {
  %y = reduce_window %x {kind=max, window=[1, 3], padding=[[0, 0], [1, 1]]}
  return %y
}";
    assert_eq!(notation(src, "y"), "([i, j]) -> ([i, j]) {i=8, j=16} permutation={j}");
}

#[test]
fn reshape_is_the_common_refinement() {
    let src = "func @main(%x: f32[4,6], %z: f32[6,4], %w: f32[6,4]) -> (a: f32[24], b: f32[3,8], c: f32[4,6]) {
  %a = reshape %x : f32[24]
  %b = reshape %z : f32[3,8]
  %c = reshape %w : f32[4,6]
  return %a, %b, %c
}";
    assert_eq!(notation(src, "a"), "([i, j]) -> ([ij]) {i=4, j=6}");
    assert_eq!(notation(src, "b"), "([ij, k]) -> ([i, jk]) {i=3, j=2, k=4}");
    assert_eq!(notation(src, "c"), "([i, j]) -> ([k, l]) {i=6, j=4, k=4, l=6} need_replication={i, j, k, l}");
}

#[test]
fn convolution_labels_its_dims() {
    let src = "func @main(%x: f32[2,32,32,4], %k: f32[3,3,4,4]) -> (y: f32[2,32,32,4]) {
  %y = convolution %x, %k {dims=\"b01f_01io->b01f\", padding=[[1,1],[1,1]]} : f32[2,32,32,4]
  return %y
}";
    assert_eq!(
        notation(src, "y"),
        "([i, l, n, j], [m, o, j, k]) -> ([i, l, n, k]) {i=2, j=4, k=4, l=32, m=3, n=32, o=3} reduction={j} need_replication={m, o} permutation={l, n}"
    );
    let c = rule(src, "y").completion.unwrap();
    assert_eq!((c.kind.name(), c.what), ("sum", "input feature dimension"));
}

#[test]
fn gather_and_scatter_add_replace_the_table_axis_by_the_indices() {
    let src = "func @main(%table: f32[100,16], %idx: i32[8], %upd: f32[8,16]) -> (rows: f32[8,16], acc: f32[100,16]) {
  %rows = gather %table, %idx {axis=0}
  %acc = scatter_add %table, %idx, %upd {axis=0}
  return %rows, %acc
}";
    assert_eq!(notation(src, "rows"), "([i, j], [k]) -> ([k, j]) {i=100, j=16, k=8} need_replication={i}");
    let acc = rule(src, "acc");
    assert_eq!(acc.notation(), "([i, j], [k], [k, j]) -> ([i, j]) {i=100, j=16, k=8} reduction={k} need_replication={i}");
    // No collective completes scatter_add's index dims: they stay unsplit.
    assert_eq!(acc.completion, None);
}

#[test]
fn sort_and_top_k_split_every_result_like_their_operands() {
    let src = "func @main(%k: f32[8,6], %v: i32[8,6]) -> (a: f32[8,6], b: i32[8,6], t: f32[8,2], ti: i32[8,2]) {
  %a, %b = sort %k, %v {dim=1}
  %t, %ti = top_k %k {k=2}
  return %a, %b, %t, %ti
}";
    // The sorted dim needs replication in every tensor; dim 0 is one factor
    // shared by both operands and both results.
    assert_eq!(notation(src, "a"), "([i, j], [i, k]) -> ([i, l], [i, m]) {i=8, j=6, k=6, l=6, m=6} need_replication={j, k, l, m}");
    assert_eq!(notation(src, "t"), "([i, j]) -> ([i, k], [i, l]) {i=8, j=6, k=2, l=2} need_replication={j, k, l}");
    let src0 = "func @main(%k: f32[8,6]) -> (a: f32[8,6]) {
  %a = sort %k {dim=0, descending=true}
  return %a
}";
    assert_eq!(notation(src0, "a"), "([i, k]) -> ([j, k]) {i=8, j=8, k=6} need_replication={i, j}");
}

#[test]
fn no_scatter_kind_completes_split_index_dims() {
    // set keeps the last duplicate in the global index order, and partial
    // scatters summed or multiplied would count the base once per device:
    // for every kind the index dims stay unsplit and the base's other dims
    // pass through.
    for kind in ["set", "add", "mul", "max", "min"] {
        let src = format!(
            "func @main(%b: f32[10,4], %i: i32[3,2], %u: f32[3,2,4]) -> (s: f32[10,4]) {{
  %s = scatter %b, %i, %u {{axis=0, kind={kind}}}
  return %s
}}"
        );
        let r = rule(&src, "s");
        assert_eq!(r.notation(), "([i, j], [k, l], [k, l, j]) -> ([i, j]) {i=10, j=4, k=3, l=2} reduction={k, l} need_replication={i}", "{kind}");
        assert_eq!(r.completion, None, "{kind}");
    }
}

fn pir_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            pir_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "pir") {
            out.push(p);
        }
    }
}

/// Every op of the table: one with a declared or hand-written rule
/// instantiates on an instruction of a program in the repository, giving
/// every dimension longer than 1 of every tensor a factor (an attribute that
/// does not fit the declaration would leave the rule empty); calls, control
/// flow (linked through its bodies instead), collectives and grad/vmap have
/// no factors.
#[test]
fn every_op_has_a_rule_that_instantiates_or_has_none_by_design() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![];
    for d in ["tests", "examples"] {
        pir_files(&root.join(d), &mut files);
    }
    files.sort();
    let mut seen: BTreeMap<Opcode, usize> = BTreeMap::new();
    for path in &files {
        let Ok(m) = pjc_front::load(&std::fs::read_to_string(path).unwrap()) else { continue };
        for f in m.funcs.values().filter(|f| f.kind == FuncKind::Global) {
            for &i in &f.body {
                let inst = &f.insts[i];
                let r = factor_rule(f, inst);
                let tensors: Vec<_> = inst.operands.iter().chain(&inst.results).map(|&v| f.ty(v)).collect();
                assert_eq!(r.dims.len(), tensors.len(), "{}: {}", path.display(), inst.op);
                assert!(r.kinds.len() == r.sizes.len() && (r.names.is_empty() || r.names.len() == r.kinds.len()));
                match inst.op.def().sharding {
                    ShardingRule::Call | ShardingRule::ControlFlow | ShardingRule::Manual | ShardingRule::Transform => {
                        assert!(r.kinds.is_empty(), "{}: {} has factors", path.display(), inst.op)
                    }
                    _ => {
                        for (t, ty) in tensors.iter().enumerate() {
                            for d in 0..ty.rank() {
                                assert!(
                                    ty.shape[d] <= 1 || !r.dims[t][d].is_empty(),
                                    "{}: {} tensor {t} dim {d} has no factor: {}",
                                    path.display(),
                                    inst.op,
                                    r.notation()
                                );
                            }
                        }
                        // Reduction factors are completed, or stay unsplit by design.
                        if r.kinds.contains(&FactorKind::Reduction) && r.completion.is_none() {
                            assert!(
                                matches!(inst.op, Opcode::ScatterAdd | Opcode::Scatter | Opcode::Reduce),
                                "{}: {}'s reductions have no completion",
                                path.display(),
                                inst.op
                            );
                        }
                    }
                }
                *seen.entry(inst.op).or_default() += 1;
            }
        }
    }
    let missing: Vec<&str> = Opcode::ALL
        .iter()
        .filter(|o| !seen.contains_key(o))
        .filter(|o| !matches!(o.def().sharding, ShardingRule::Manual | ShardingRule::Call | ShardingRule::ControlFlow | ShardingRule::Transform))
        .map(|o| o.name())
        .collect();
    assert!(missing.is_empty(), "no global instruction of these ops in tests/ or examples/: {missing:?}");
}

/// The declarations' own notation (letters standing for groups of dims) is
/// what docs/sharding.md shows.
#[test]
fn declared_notation_of_dot_general() {
    assert_eq!(
        Opcode::DotGeneral.def().sharding.notation(),
        "([b…@lhs_batch, k…@lhs_contract, i…], [b…@rhs_batch, k…@rhs_contract, j…]) -> ([b…, i…, j…]) reduction={k}"
    );
}
