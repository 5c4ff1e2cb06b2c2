//! Control flow in propagation (spec section 6): every carried value of a
//! loop has one sharding — initial value aside — its annotations decide for the
//! whole loop, disagreeing annotations are an error naming the value, and
//! dim 0 of scanned operands and stacked outputs is never split by the loop.

mod common;

use common::{load, shardings};

const LOOP: &str = "func @cond(%i: i32[], %x: f32[8,4]) -> (pred[]) {
  %n = constant 3 : i32[]
  %p = compare %i, %n {dir=lt}
  return %p
}

func @body(%i: i32[], %x: f32[8,4]) -> (i32[], f32[8,4]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %y = tanh %x
  return %j, %y
}
";

#[test]
fn a_split_initial_value_shards_the_whole_loop() {
    let m = load(&format!(
        "mesh [data=2]\n{LOOP}\nfunc @main(%x: f32[8,4] on [data, _]) -> (n: i32[], y: f32[8,4]) {{\n  %zero = constant 0 : i32[]\n  %i2, %x2 = while @cond, @body(%zero, %x)\n  return %i2, %x2\n}}\n"
    ));
    let s = shardings(&m);
    for k in ["@cond %x", "@body %x", "@body %y", "@body -> 1", "@main %x2"] {
        assert_eq!(s[k], "[data, _]", "{k}: {s:?}");
    }
    assert_eq!(s["@main -> 1"], "[_, _]");
}

#[test]
fn an_annotation_decides_for_the_loop_even_when_replicated() {
    // The body's result is annotated replicated: the initial value is split,
    // but the carried value is replicated everywhere in the loop (it is
    // resharded once, on entry).
    let body = LOOP.replace("-> (i32[], f32[8,4]) {", "-> (i32[], f32[8,4] on [_, _]) {");
    let m = load(&format!(
        "mesh [data=2]\n{body}\nfunc @main(%x: f32[8,4] on [data, _]) -> (n: i32[], y: f32[8,4]) {{\n  %zero = constant 0 : i32[]\n  %i2, %x2 = while @cond, @body(%zero, %x)\n  return %i2, %x2\n}}\n"
    ));
    let s = shardings(&m);
    for k in ["@cond %x", "@body %x", "@body %y", "@main %x2"] {
        assert_eq!(s[k], "[_, _]", "{k}: {s:?}");
    }
    assert_eq!(s["@main %x"], "[data, _]");
    pjc_sharding::check_control(&m).unwrap();
}

#[test]
fn disagreeing_annotations_name_the_value() {
    let body = LOOP.replace("func @body(%i: i32[], %x: f32[8,4])", "func @body(%i: i32[], %x: f32[8,4] on [data, _])");
    let m = load(&format!(
        "mesh [data=2]\n{body}\nfunc @main(%x: f32[8,4]) -> (n: i32[], y: f32[8,4]) {{\n  %zero = constant 0 : i32[]\n  %i2, %x2 = while @cond, @body(%zero, %x) : (i32[], f32[8,4] on [_, data])\n  return %i2, %x2\n}}\n"
    ));
    let e = pjc_sharding::check_control(&m).unwrap_err();
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].msg.contains("%x2") && e[0].msg.contains("parameter %x of @body") && e[0].msg.contains("while %i2"), "{}", e[0].msg);
}

#[test]
fn one_body_for_two_loops_has_one_sharding() {
    let m = load(&format!(
        "mesh [data=2, model=2]\n{LOOP}\nfunc @main(%x: f32[8,4] on [data, _], %w: f32[8,4]) -> (y: f32[8,4], z: f32[8,4]) {{\n  %zero = constant 0 : i32[]\n  %i2, %x2 = while @cond, @body(%zero, %x)\n  %i3, %w3 = while @cond, @body(%zero, %w)\n  return %x2, %w3\n}}\n"
    ));
    let s = shardings(&m);
    assert_eq!(s["@main %x2"], "[data, _]");
    assert_eq!(s["@main %w3"], "[data, _]", "both loops run the one partitioned body: {s:?}");
}

#[test]
fn scanned_dimension_zero_is_never_split_by_the_loop() {
    let src = "mesh [data=2, model=2]
func @step(%h: f32[4,8], %x: f32[4,8]) -> (f32[4,8], f32[4,8]) {
  %s = add %h, %x
  %t = tanh %s
  return %s, %t
}

func @main(%h: f32[4,8] on [_, model], %xs: f32[6,4,8] on [data, _, _]) -> (hout: f32[4,8], ys: f32[6,4,8]) {
  %h2, %ys = scan @step(%h, %xs) {length=6, carries=1}
  return %h2, %ys
}
";
    let s = shardings(&load(src));
    assert_eq!(s["@step %x"], "[_, model]", "{s:?}");
    assert_eq!(s["@step %t"], "[_, model]");
    // The stacked output takes the slice's sharding on dims 1..; dim 0 is not split by the loop.
    assert_eq!(s["@main %ys"], "[_, _, model]");
    assert_eq!(s["@main %h2"], "[_, model]");
}

#[test]
fn switch_branches_keep_their_own_operand_shardings() {
    let src = "mesh [data=2]
func @b0(%x: f32[8,4] on [data, _]) -> (f32[8,4]) {
  %y = neg %x
  return %y
}

func @b1(%x: f32[8,4] on [_, data]) -> (f32[8,4]) {
  %y = exp %x
  return %y
}

func @main(%i: i32[], %x: f32[8,4]) -> (y: f32[8,4]) {
  %r = switch %i, @b0, @b1(%x)
  return %r
}
";
    let m = load(src);
    pjc_sharding::check_control(&m).unwrap();
    let s = shardings(&m);
    assert_eq!(s["@b0 %y"], "[data, _]");
    assert_eq!(s["@b1 %y"], "[_, data]");
    // Not annotated: the op's result has branch 0's result sharding.
    assert_eq!(s["@main %r"], "[data, _]", "{s:?}");
    assert_eq!(s["@b0 -> 0"], "[data, _]");
}
