//! What the interpreter's control flow promises beyond its values (those are
//! checked against numpy in tests/numeric and in tests/text/eval): loops do
//! not recurse per iteration, and devices of a `spmd func` that would take
//! different paths are an error instead of a divergence.

use pjc_interp::{eval, EvalError};
use pjc_tensor::compare::{close, Tolerance};
use pjc_tensor::{Buf, Tensor};

fn scalar_i32(x: i32) -> Tensor {
    Tensor::new(vec![], Buf::I32(vec![x]))
}

/// A counting loop of `n` trips, run on a thread with a small stack: a loop
/// that recursed per iteration (or per nested body call that stays open)
/// would overflow it long before 100,000 trips.
#[test]
fn a_long_while_runs_in_constant_stack() {
    let src = "
func @cond(%i: i32[], %n: i32[], %s: i64[]) -> (pred[]) {
  %p = compare %i, %n {dir=lt}
  return %p
}

func @body(%i: i32[], %n: i32[], %s: i64[]) -> (i32[], i32[], i64[]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %w = convert %j : i64[]
  %t = add %s, %w
  return %j, %n, %t
}

func @main(%n: i32[]) -> (i: i32[], s: i64[]) {
  %zero = constant 0 : i32[]
  %z = constant 0 : i64[]
  %i, %n2, %s = while @cond, @body(%zero, %n, %z)
  return %i, %s
}
";
    let m = pjc_front::load(src).unwrap_or_else(|e| panic!("{e:?}"));
    let n = 100_000i32;
    let out = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || eval(&m, m.func_by_name("main").unwrap(), vec![scalar_i32(n)]).map_err(|e| e.to_string()))
        .unwrap()
        .join()
        .expect("the loop overflowed a 256 KiB stack")
        .unwrap();
    close(&out[0], &scalar_i32(n), Tolerance::BITWISE).unwrap();
    let sum = n as i64 * (n as i64 + 1) / 2;
    close(&out[1], &Tensor::new(vec![], Buf::I64(vec![sum])), Tolerance::BITWISE).unwrap();
}

/// A predicate that differs across devices (the verifier's replication check
/// rejects it, so the module is only parsed): an error naming the op, the
/// function and each device's value, not devices that run different trips.
#[test]
fn devices_that_disagree_on_a_predicate_or_index_are_an_error() {
    let src = "
mesh [data=2]

spmd func @cond(%i: i32[]) -> (pred[]) {
  %d = axis_index {axis=data} : i32[]
  %p = compare %i, %d {dir=lt} : pred[]
  return %p
}

spmd func @body(%i: i32[]) -> (i32[]) {
  %one = constant 1 : i32[]
  %j = add %i, %one : i32[]
  return %j
}

spmd func @b(%i: i32[]) -> (i32[]) {
  return %i
}

spmd func @main(%i: i32[]) -> (w: i32[], s: i32[]) {
  %w = while @cond, @body(%i) : i32[]
  %d = axis_index {axis=data} : i32[]
  %s = switch %d, @b, @b(%i) : i32[]
  return %w, %s
}
";
    let m = pjc_front::parse(src).unwrap_or_else(|e| panic!("{e:?}"));
    let divergence = |start: i32| match eval(&m, m.func_by_name("main").unwrap(), vec![scalar_i32(start)]) {
        Err(e @ EvalError::Divergent { .. }) => e.to_string(),
        other => panic!("expected a divergence error, got {other:?}"),
    };
    let msg = divergence(0);
    assert!(msg.contains("predicate of 'while' in @main"), "{msg}");
    assert!(msg.contains("device 0: false, device 1: true"), "{msg}");
    // With a start past both devices' bounds, the loop agrees (zero trips) and
    // the switch index is the one to differ.
    let msg = divergence(5);
    assert!(msg.contains("index of 'switch' in @main"), "{msg}");
    assert!(msg.contains("device 0: 0, device 1: 1"), "{msg}");
}
