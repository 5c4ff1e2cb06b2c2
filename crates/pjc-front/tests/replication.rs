//! `pjc_ir::replication` through control flow, as `grad` and the partitioner
//! read it (`varying_axes`), on modules parsed here. The verifier's use of it is
//! covered by tests/text/verify-v2/.

use pjc_front::load;
use pjc_ir::replication::{varying_axes, Axes, Replication};
use pjc_ir::Module;

fn axes(names: &[&str]) -> Axes {
    names.iter().map(|s| s.to_string()).collect()
}

/// The axes of the named value of function `func`.
fn of(m: &Module, func: &str, value: &str) -> Axes {
    let f = &m.funcs[m.func_by_name(func).unwrap()];
    let v = f.values.iter().find(|(_, d)| d.name == value).map(|(v, _)| v).unwrap();
    varying_axes(f, m).get(&v).cloned().unwrap_or_default()
}

const SRC: &str = "mesh [data=2, model=2]

spmd func @step(%h: f32[2], %x: f32[]) -> (f32[2], f32[]) {
  %d = axis_index {axis=data} : i32[]
  %df = convert %d : f32[]
  %db = broadcast %df : f32[2]
  %h2 = add %h, %db
  return %h2, %x
}

spmd func @keep(%a: f32[], %b: f32[]) -> (f32[], f32[]) {
  return %b, %a
}

spmd func @never(%a: f32[], %b: f32[]) -> (pred[]) {
  %p = constant false : pred[]
  return %p
}

spmd func @main(%h0: f32[2], %xs: f32[3] on [model], %y: f32[2] on [data]) -> (h: f32[2] on [data], ys: f32[3] on [model], s: f32[], t: f32[]) {
  %h2, %ys = scan @step(%h0, %xs) {length=3, carries=1}
  %c = constant 1.0 : f32[]
  %r = reduce %y {dims=[0], kind=sum} : f32[]
  %s, %t = while @never, @keep(%c, %r)
  %u = all_reduce %s {axes=[data], kind=sum}
  %v = all_reduce %t {axes=[data], kind=sum}
  return %h2, %ys, %u, %v
}
";

#[test]
fn carries_outputs_and_swapped_carries_reach_their_fixed_point() {
    let m = load(SRC).unwrap();
    // The carry picks up the 'data' index; the stacked output is a slice of %xs.
    assert_eq!(of(&m, "main", "h2"), axes(&["data"]));
    assert_eq!(of(&m, "main", "ys"), axes(&["model"]));
    // @keep swaps its carries: the constant and the 'data'-varying sum both vary
    // after one iteration.
    assert_eq!(of(&m, "main", "s"), axes(&["data"]));
    assert_eq!(of(&m, "main", "t"), axes(&["data"]));
    assert_eq!(of(&m, "main", "u"), axes(&[]));
}

#[test]
fn a_body_is_analysed_with_the_variance_of_each_call_site() {
    let m = load(SRC).unwrap();
    let step = &m.funcs[m.func_by_name("step").unwrap()];
    let mut r = Replication::new(&m);
    let ret = |var: &std::collections::HashMap<pjc_ir::Value, Axes>| -> Vec<Axes> { step.ret.iter().map(|v| var[v].clone()).collect() };
    let invariant = r.values(step, &[axes(&[]), axes(&[])]);
    assert_eq!(ret(&invariant), vec![axes(&["data"]), axes(&[])]);
    let varying = r.values(step, &[axes(&["model"]), axes(&["model"])]);
    assert_eq!(ret(&varying), vec![axes(&["data", "model"]), axes(&["model"])]);
    assert!(r.take_problems().is_empty());
}
