//! `vmap` expansion checked against the reference interpreter, which evaluates
//! `vmap` itself as a loop of calls (one per example, results stacked): for each
//! program, `@main` runs on generated inputs (a) unexpanded, (b) after expanding
//! only the `vmap`s with `vmap::generate_all`, and (c) after the full
//! `pjc_transforms::expand`; (b) and (c) must verify after a print/parse round
//! trip, contain no `vmap`, and agree with (a): exactly for integer and `pred`
//! results, within 1e-5 (relative) for floats.
//!
//! The harness is in `vmap_util`; the version 2 ops are in `vmap_control.rs`.
//! Most tests give one mapped function and a list of `in_dims -> out_dims`
//! combinations; [`cases`] writes an `@main` for each. Inside a `spmd func`
//! the interpreter cannot run `vmap` of a function with collectives, so those
//! tests compare with the module where every `vmap` is unrolled by hand
//! ([`unroll_vmaps`]: slice each example, call, stack with `concat`).

mod vmap_util;
use pjc_ir::Opcode;
use pjc_tensor::{Lanes, Tensor};
use vmap_util::*;

// ---------------------------------------------------------------------------
// Elementwise ops
// ---------------------------------------------------------------------------

#[test]
fn unary_elementwise() {
    let f = "func @f(%x: f32[4,3]) -> (f32[4,3]) {
  %a = neg %x
  %b = exp %a
  %c = tanh %b
  %d = abs %x
  %e = sqrt %d
  %g = add %c, %e
  %h = logistic %g
  %i = sin %h
  %j = floor %x
  %k = round_even %x
  %l = sign %x
  %m = add %i, %j
  %n = add %m, %k
  %o = add %n, %l
  %p = log1p %d
  %q = expm1 %p
  %r = cos %q
  %s = rsqrt %e
  %t = erf %x
  %u = ceil %t
  %w = round %x
  %y = log %e
  %z0 = add %o, %r
  %z1 = add %z0, %s
  %z2 = add %z1, %u
  %z3 = add %z2, %w
  %z4 = add %z3, %y
  return %z4
}";
    cases(f, "f", 3, &["[0] -> [0]", "[1] -> [2]", "[2] -> [1]", "[0] -> [2]"]);
}

#[test]
fn binary_elementwise_mixing_batched_and_unbatched() {
    let f = "func @f(%x: f32[2,3], %y: f32[2,3]) -> (f32[2,3], f32[2,3]) {
  %a = add %x, %y
  %b = sub %a, %x
  %c = mul %b, %y
  %d = div %c, %x
  %e = max %d, %y
  %g = min %e, %x
  %h = pow %x, %y
  %i = atan2 %g, %h
  %j = rem %x, %y
  %k = add %i, %j
  return %k, %e
}";
    cases(f, "f", 5, &["[0, none] -> [0, 0]", "[none, 1] -> [2, 0]", "[1, 0] -> [1, 2]", "[2, 2] -> [0, 1]"]);
}

#[test]
fn integer_and_pred_elementwise() {
    let f = "func @f(%x: i32[5], %y: i32[5], %p: pred[5]) -> (i32[5], pred[5], u8[5]) {
  %a = and %x, %y
  %b = or %a, %x
  %c = xor %b, %y
  %d = shl %c, %y
  %e = shr %d, %x
  %g = not %e
  %h = div %g, %y
  %i = rem %h, %x
  %j = mul %i, %y
  %k = sub %j, %x
  %l = abs %k
  %m = neg %l
  %q = compare %m, %x {dir=lt}
  %r = and %q, %p
  %s = not %r
  %t = xor %s, %p
  %u = convert %m : u8[5]
  %v = shr %u, %u
  return %m, %t, %v
}";
    cases(
        f,
        "f",
        3,
        &["[0, none, 0] -> [0, 1, 0]", "[none, 0, none] -> [1, 0, 1]", "[1, 1, 1] -> [0, 0, 0]", "[none, none, 0] -> [1, 1, 1]"],
    );
}

#[test]
fn select_clamp_compare_with_scalar_operands() {
    let f = "func @f(%p: pred[], %a: f32[3,2], %b: f32[3,2], %lo: f32[], %hi: f32[]) -> (f32[3,2], pred[3,2], f32[]) {
  %s = select %p, %a, %b
  %c = clamp %lo, %s, %hi
  %q = compare %c, %a {dir=ge}
  %t = select %q, %c, %b
  %d = clamp %a, %t, %b
  %m = max %lo, %hi
  %n = select %p, %lo, %m
  %e = clamp %lo, %n, %hi
  return %d, %q, %e
}";
    cases(
        f,
        "f",
        3,
        &[
            "[0, none, none, none, none] -> [0, 0, 0]",
            "[none, 1, none, 0, none] -> [1, 2, 0]",
            "[0, 0, 0, 0, 0] -> [2, 1, 0]",
            "[none, none, none, none, 0] -> [0, 1, 0]",
            "[none, 2, 2, none, none] -> [0, 0, 0]",
        ],
    );
}

#[test]
fn convert_bitcast_is_finite() {
    let f = "func @f(%x: f32[3,2]) -> (i32[3,2], bf16[3,2], pred[3,2], u32[3,2], pred[3,2], f64[3,2]) {
  %a = convert %x : i32[3,2]
  %b = convert %x : bf16[3,2]
  %c = convert %x : pred[3,2]
  %d = bitcast_convert %x : u32[3,2]
  %l = log %x
  %e = is_finite %l
  %g = convert %b : f64[3,2]
  return %a, %b, %c, %d, %e, %g
}";
    cases(f, "f", 3, &["[0] -> [0, 0, 0, 0, 0, 0]", "[1] -> [2, 1, 0, 2, 1, 0]", "[2] -> [1, 1, 1, 1, 1, 1]"]);
}

#[test]
fn bf16_arithmetic_and_reductions() {
    let f = "func @f(%x: bf16[4,3], %w: bf16[3]) -> (bf16[4], f32[4]) {
  %b = broadcast %w {dims=[1]} : bf16[4,3]
  %m = mul %x, %b
  %s = reduce %m {dims=[1], kind=sum}
  %d = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[4]
  return %s, %d
}";
    cases(f, "f", 5, &["[0, none] -> [0, 1]", "[none, 0] -> [1, 0]", "[2, 1] -> [0, 0]"]);
}

// ---------------------------------------------------------------------------
// Values that do not depend on a mapped input
// ---------------------------------------------------------------------------

#[test]
fn unbatched_results_are_broadcast_along_out_dims() {
    let f = "func @f(%x: f32[3], %w: f32[2]) -> (f32[3], i32[2,3], f32[3], f32[2], f32[]) {
  %c = constant [1.5, 2.0, -3.0] : f32[3]
  %i = iota {dim=1} : i32[2,3]
  %y = add %x, %c
  %z = reduce %w {dims=[0], kind=max}
  return %y, %i, %c, %w, %z
}";
    cases(f, "f", 3, &["[0, none] -> [0, 0, 1, 1, 0]", "[0, none] -> [1, 2, 0, 0, 0]", "[none, 0] -> [0, 1, 0, 1, 0]"]);
}

// ---------------------------------------------------------------------------
// Shape ops
// ---------------------------------------------------------------------------

#[test]
fn broadcast_reshape_transpose() {
    let f = "func @f(%x: f32[2,3], %s: f32[], %o: f32[1,3]) -> (f32[4,2,3], f32[3,2], f32[6], f32[3,4,2], f32[2,5], f32[2,3]) {
  %b = broadcast %x {dims=[1,2]} : f32[4,2,3]
  %t = transpose %x {perm=[1,0]}
  %r = reshape %x : f32[6]
  %n = broadcast %x {dims=[2,0]} : f32[3,4,2]
  %c = broadcast %s : f32[2,5]
  %st = broadcast %o {dims=[0,1]} : f32[2,3]
  return %b, %t, %r, %n, %c, %st
}";
    cases(
        f,
        "f",
        3,
        &[
            "[0, none, none] -> [0, 0, 0, 0, 0, 0]",
            "[1, 0, none] -> [3, 2, 1, 0, 2, 1]",
            "[2, none, 1] -> [1, 1, 0, 3, 1, 2]",
            "[none, none, 2] -> [0, 1, 1, 2, 0, 0]",
        ],
    );
}

#[test]
fn reshape_of_higher_rank() {
    let f = "func @f(%x: i32[2,3,4]) -> (i32[4,6], i32[24], i32[3,2,4]) {
  %a = reshape %x : i32[4,6]
  %b = reshape %a : i32[24]
  %t = transpose %x {perm=[1,0,2]}
  %c = transpose %t {perm=[0,1,2]}
  return %a, %b, %c
}";
    cases(f, "f", 3, &["[0] -> [0, 0, 0]", "[3] -> [2, 1, 3]", "[2] -> [1, 0, 2]"]);
}

#[test]
fn slice_pad_concat_reverse() {
    let f = "func @f(%x: f32[5,4], %y: f32[5,2], %v: f32[]) -> (f32[2,2], f32[9,8], f32[5,6], f32[5,4], f32[3,1]) {
  %s = slice %x {start=[1,0], limit=[5,4], stride=[2,3]}
  %p = pad %x, %v {low=[1,-1], high=[-1,2], interior=[1,1]}
  %c = concat %x, %y {dim=1}
  %r = reverse %x {dims=[0,1]}
  %q = pad %y, %v {low=[-2,0], high=[0,-1], interior=[0,0]}
  return %s, %p, %c, %r, %q
}";
    cases(
        f,
        "f",
        3,
        &[
            "[0, none, none] -> [0, 0, 0, 0, 0]",
            "[1, 0, none] -> [2, 1, 0, 2, 1]",
            "[none, 1, 0] -> [0, 2, 1, 0, 2]",
            "[2, 2, 0] -> [1, 0, 2, 1, 0]",
            "[none, none, 0] -> [1, 1, 1, 1, 1]",
        ],
    );
}

#[test]
fn concat_of_three_with_one_operand_batched() {
    let f = "func @f(%a: u16[2], %b: u16[3], %c: u16[1]) -> (u16[6]) {
  %r = concat %a, %b, %c {dim=0}
  return %r
}";
    cases(f, "f", 3, &["[none, 0, none] -> [0]", "[0, none, 0] -> [1]", "[0, 1, none] -> [1]"]);
}

#[test]
fn dynamic_slice_with_batched_and_unbatched_starts() {
    let f = "func @f(%x: f32[6,5], %i: i32[], %j: i64[]) -> (f32[3,2]) {
  %s = dynamic_slice %x, %i, %j {sizes=[3,2]}
  return %s
}";
    cases(
        f,
        "f",
        5,
        &[
            "[0, none, none] -> [0]",
            "[1, none, none] -> [2]",
            "[none, 0, none] -> [0]",
            "[none, none, 0] -> [1]",
            "[1, 0, 0] -> [0]",
            "[0, 0, none] -> [2]",
            "[2, none, 0] -> [1]",
        ],
    );
}

#[test]
fn dynamic_slice_small_index_dtypes_and_full_size_dims() {
    let f = "func @f(%x: i32[4,7,2], %i: u8[], %j: i8[], %k: u16[]) -> (i32[4,3,1]) {
  %s = dynamic_slice %x, %i, %j, %k {sizes=[4,3,1]}
  return %s
}";
    cases(f, "f", 3, &["[none, 0, 0, 0] -> [0]", "[1, 0, none, 0] -> [3]", "[3, none, 0, none] -> [2]"]);
}

#[test]
fn dynamic_update_slice_with_batched_and_unbatched_starts() {
    let f = "func @f(%x: f32[6,5], %u: f32[2,3], %i: i32[], %j: u16[]) -> (f32[6,5]) {
  %s = dynamic_update_slice %x, %u, %i, %j
  return %s
}";
    cases(
        f,
        "f",
        3,
        &[
            "[0, none, none, none] -> [0]",
            "[none, 1, none, none] -> [2]",
            "[2, 0, none, none] -> [1]",
            "[none, none, 0, none] -> [0]",
            "[none, none, none, 0] -> [1]",
            "[1, 1, 0, 0] -> [2]",
            "[none, 0, 0, none] -> [0]",
            "[0, none, none, 0] -> [0]",
        ],
    );
}

#[test]
fn dynamic_update_slice_full_width_dims_and_pred() {
    let f = "func @f(%x: pred[4,3], %u: pred[2,3], %i: i64[], %j: i64[]) -> (pred[4,3]) {
  %s = dynamic_update_slice %x, %u, %i, %j
  return %s
}";
    cases(f, "f", 5, &["[0, 0, 0, 0] -> [0]", "[none, none, 0, none] -> [1]", "[none, none, none, 0] -> [2]"]);
}

// ---------------------------------------------------------------------------
// Reductions and contractions
// ---------------------------------------------------------------------------

#[test]
fn reduce_argmax_argmin() {
    let f = "func @f(%x: f32[3,4,5]) -> (f32[4], f32[3,5], i64[3,5], i32[3,4], f32[]) {
  %a = reduce %x {dims=[0,2], kind=sum}
  %b = reduce %x {dims=[1], kind=max}
  %c = argmax %x {dim=1} : i64[3,5]
  %d = argmin %x {dim=2}
  %e = reduce %x {dims=[0,1,2], kind=min}
  return %a, %b, %c, %d, %e
}";
    cases(f, "f", 3, &["[0] -> [0, 0, 0, 0, 0]", "[1] -> [1, 2, 1, 0, 0]", "[2] -> [0, 1, 2, 2, 0]", "[3] -> [1, 0, 0, 1, 0]"]);
}

#[test]
fn integer_and_pred_reductions() {
    let f = "func @f(%x: i32[3,4], %p: pred[3,4]) -> (i32[4], i32[3], pred[4], pred[3]) {
  %a = reduce %x {dims=[0], kind=prod}
  %b = reduce %x {dims=[1], kind=max}
  %c = reduce %p {dims=[0], kind=and}
  %d = reduce %p {dims=[1], kind=or}
  return %a, %b, %c, %d
}";
    cases(f, "f", 3, &["[0, none] -> [0, 0, 0, 0]", "[none, 2] -> [1, 1, 1, 0]", "[1, 0] -> [0, 1, 1, 1]"]);
}

#[test]
fn dot_general_batch_free_and_contracting() {
    let f = "func @f(%a: f32[2,3,4], %b: f32[2,4,5]) -> (f32[2,3,5]) {
  %d = dot_general %a, %b {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]}
  return %d
}";
    cases(
        f,
        "f",
        3,
        &["[0, 0] -> [0]", "[1, none] -> [0]", "[none, 2] -> [3]", "[3, 1] -> [2]", "[none, 0] -> [1]", "[2, none] -> [2]"],
    );
}

#[test]
fn dot_general_matvec_outer_and_wider_result() {
    let f = "func @f(%w: f32[3,4], %x: f32[4], %u: i8[2], %v: i8[3]) -> (f32[3], f32[3,4,4], i32[3,2]) {
  %y = dot_general %w, %x {lhs_contract=[1], rhs_contract=[0]}
  %o = dot_general %w, %x
  %i = dot_general %v, %u : i32[3,2]
  return %y, %o, %i
}";
    cases(
        f,
        "f",
        3,
        &[
            "[none, 0, none, 0] -> [0, 0, 0]",
            "[0, none, 0, none] -> [1, 3, 2]",
            "[1, 1, 1, 1] -> [0, 1, 1]",
            "[2, none, none, 0] -> [1, 2, 0]",
        ],
    );
}

#[test]
fn convolution_plain() {
    let f = "func @f(%x: f32[2,5,5,3], %k: f32[3,3,3,4]) -> (f32[2,3,4,4]) {
  %y = convolution %x, %k {dims=\"b01f_01io->b01f\", window_strides=[2,1], padding=[[1,1],[0,1]]}
  return %y
}";
    cases(f, "f", 3, &["[0, none] -> [0]", "[none, 0] -> [0]", "[0, 0] -> [0]", "[4, 2] -> [3]", "[2, none] -> [4]", "[none, 4] -> [2]"]);
}

#[test]
fn convolution_unusual_labels_and_dilation() {
    let f = "func @f(%x: f32[3,5,4,2], %k: f32[3,2,2,4]) -> (f32[5,7,2,4]) {
  %y = convolution %x, %k {dims=\"f01b_i01o->01bf\", padding=[[1,1],[1,0]], lhs_dilation=[1,2], rhs_dilation=[2,1]}
  return %y
}";
    cases(f, "f", 3, &["[0, none] -> [0]", "[none, 1] -> [2]", "[4, 3] -> [4]"]);
}

#[test]
fn convolution_feature_groups() {
    let f = "func @f(%x: f32[2,5,4], %k: f32[3,2,6]) -> (f32[2,3,6]) {
  %y = convolution %x, %k {dims=\"b0f_0io->b0f\", feature_group_count=2}
  return %y
}";
    cases(f, "f", 3, &["[0, none] -> [0]", "[none, 0] -> [0]", "[1, 3] -> [3]", "[3, 1] -> [2]"]);
}

#[test]
fn convolution_batch_groups() {
    let f = "func @f(%x: f32[4,5,3], %k: f32[2,3,6]) -> (f32[2,4,6]) {
  %y = convolution %x, %k {dims=\"b0f_0io->b0f\", batch_group_count=2}
  return %y
}";
    cases(f, "f", 3, &["[0, none] -> [0]", "[none, 0] -> [1]", "[2, 1] -> [3]", "[3, none] -> [2]", "[none, 3] -> [0]"]);
}

#[test]
fn convolution_integer() {
    let f = "func @f(%x: i32[1,4,2], %k: i32[2,2,3]) -> (i64[1,3,3]) {
  %y = convolution %x, %k {dims=\"b0f_0io->b0f\"} : i64[1,3,3]
  return %y
}";
    cases(f, "f", 3, &["[0, 0] -> [0]", "[none, 2] -> [3]"]);
}

#[test]
fn reduce_window_and_select_and_scatter_add() {
    let f = "func @f(%x: f32[5,6], %s: f32[5,3]) -> (f32[5,3], f32[4,5], f32[5,6]) {
  %m = reduce_window %x {kind=max, window=[2,3], strides=[1,2], padding=[[1,0],[0,1]]}
  %a = reduce_window %x {kind=sum, window=[2,2]}
  %g = select_and_scatter_add %s, %x {window=[2,3], strides=[1,2], padding=[[1,0],[0,1]]}
  return %m, %a, %g
}";
    cases(f, "f", 3, &["[0, none] -> [0, 0, 0]", "[none, 1] -> [1, 2, 0]", "[2, 0] -> [2, 1, 1]", "[1, 2] -> [0, 0, 2]"]);
}

// ---------------------------------------------------------------------------
// Indexing
// ---------------------------------------------------------------------------

#[test]
fn gather_every_combination() {
    let f = "func @f(%t: f32[4,5,3], %i: i32[2,3]) -> (f32[4,2,3,3]) {
  %g = gather %t, %i {axis=1}
  return %g
}";
    cases(
        f,
        "f",
        3,
        &[
            "[0, none] -> [0]",
            "[1, none] -> [1]",
            "[2, none] -> [4]",
            "[3, none] -> [2]",
            "[none, 0] -> [0]",
            "[none, 2] -> [3]",
            "[0, 0] -> [0]",
            "[3, 1] -> [1]",
        ],
    );
}

#[test]
fn gather_scalar_and_narrow_indices() {
    let f = "func @f(%t: i32[5,2], %i: u8[], %j: i8[4]) -> (i32[2], i32[5,4]) {
  %g = gather %t, %i {axis=0}
  %h = gather %t, %j {axis=1}
  return %g, %h
}";
    cases(f, "f", 3, &["[none, 0, 0] -> [0, 1]", "[1, 0, none] -> [1, 2]", "[0, none, 1] -> [0, 0]", "[2, 0, 0] -> [1, 0]"]);
}

#[test]
fn scatter_add_every_combination() {
    let f = "func @f(%b: f32[4,5], %i: i64[3], %u: f32[4,3]) -> (f32[4,5]) {
  %s = scatter_add %b, %i, %u {axis=1}
  return %s
}";
    cases(
        f,
        "f",
        3,
        &[
            "[0, none, none] -> [0]",
            "[2, none, none] -> [1]",
            "[none, none, 0] -> [2]",
            "[none, none, 2] -> [0]",
            "[1, none, 1] -> [0]",
            "[none, 0, none] -> [0]",
            "[0, 1, none] -> [2]",
            "[none, 0, 2] -> [1]",
            "[1, 0, 0] -> [0]",
        ],
    );
}

#[test]
fn scatter_add_integer_with_narrow_and_multi_dim_indices() {
    let f = "func @f(%b: i32[6,2], %i: u8[2,2], %u: i32[2,2,2]) -> (i32[6,2]) {
  %s = scatter_add %b, %i, %u {axis=0}
  return %s
}";
    cases(
        f,
        "f",
        3,
        &["[none, 0, none] -> [0]", "[1, 2, 3] -> [1]", "[0, none, 0] -> [2]", "[2, none, none] -> [0]", "[1, none, 2] -> [2]"],
    );
}

// ---------------------------------------------------------------------------
// Calls, nesting, grad
// ---------------------------------------------------------------------------

const CALLS: &str = "func @g(%x: f32[3], %w: f32[3]) -> (f32[3], f32[]) {
  %y = mul %x, %w
  %s = reduce %y {dims=[0], kind=sum}
  return %y, %s
}

func @f(%x: f32[3], %w: f32[3]) -> (f32[3], f32[]) {
  %y, %s = call @g(%x, %w)
  %t, %u = call @g(%w, %w)
  %b = broadcast %u : f32[3]
  %z = add %y, %b
  %v = add %s, %u
  return %z, %v
}";

#[test]
fn call_is_batched_through() {
    cases(CALLS, "f", 3, &["[0, none] -> [0, 0]", "[none, 0] -> [1, 0]", "[0, 0] -> [1, 0]"]);
}

#[test]
fn nested_vmap() {
    let f = format!(
        "{CALLS}

func @h(%xs: f32[4,3], %w: f32[3]) -> (f32[3,4], f32[4]) {{
  %z, %v = vmap @f(%xs, %w) {{in_dims=[0, none], out_dims=[1, 0]}}
  return %z, %v
}}"
    );
    cases(&f, "h", 3, &["[0, none] -> [0, 0]", "[none, 0] -> [2, 1]", "[2, 1] -> [1, 0]"]);
}

#[test]
fn vmap_of_vmap_in_one_function() {
    let src = format!(
        "{CALLS}

func @inner(%xs: f32[2,3], %w: f32[3]) -> (f32[2,3]) {{
  %z, %v = vmap @f(%xs, %w) {{in_dims=[0, none], out_dims=[0, 0]}}
  return %z
}}

func @main(%xss: f32[2,5,3], %ws: f32[5,3]) -> (f32[5,2,3]) {{
  %r = vmap @inner(%xss, %ws) {{in_dims=[1, 0], out_dims=[0]}}
  return %r
}}"
    );
    check(&src);
}

#[test]
fn same_vmap_twice_and_unused_results() {
    let src = format!(
        "{CALLS}

func @main(%xs: f32[5,3], %w: f32[3]) -> (f32[5,3], f32[5]) {{
  %z, %v = vmap @f(%xs, %w) {{in_dims=[0, none], out_dims=[0, 0]}}
  %z2, %v2 = vmap @f(%z, %w) {{in_dims=[0, none], out_dims=[0, 0]}}
  return %z2, %v
}}"
    );
    check(&src);
}

/// Per-example gradients: `vmap` of a function containing `grad` (expanded
/// first, so `vmap` sees a call of the gradient function). The reference
/// expands only the `grad` and lets the interpreter loop over the examples.
#[test]
fn vmap_of_grad_gives_per_example_gradients() {
    let src = "func @loss(%w: f32[3], %b: f32[], %x: f32[3]) -> (f32[]) {
  %p = mul %w, %x
  %s = reduce %p {dims=[0], kind=sum}
  %t = add %s, %b
  %l = tanh %t
  return %l
}

func @pe(%w: f32[3], %b: f32[], %x: f32[3]) -> (f32[], f32[3], f32[]) {
  %l, %gw, %gb = grad @loss(%w, %b, %x) {wrt=[0, 1]}
  return %l, %gw, %gb
}

func @main(%w: f32[3], %b: f32[], %xs: f32[5,3]) -> (f32[5], f32[5,3], f32[5]) {
  %l, %gw, %gb = vmap @pe(%w, %b, %xs) {in_dims=[none, none, 0], out_dims=[0, 0, 0]}
  return %l, %gw, %gb
}
";
    let m = load(src);
    let xs = inputs(&m);
    // Reference: grad expanded, vmap left to the interpreter.
    let mut r = m.clone();
    for id in pjc_transforms::callees_first(&r) {
        for inst in r.funcs[id].body.clone() {
            if r.funcs[id].insts[inst].op != Opcode::Grad {
                continue;
            }
            let target = r.func_by_name(r.funcs[id].insts[inst].callee().unwrap()).unwrap();
            let g = pjc_transforms::grad::generate(&r, target, &r.funcs[id].insts[inst])
                .unwrap_or_else(|e| panic!("grad::generate: {}", e.msg));
            let name = g.name.clone();
            r.funcs.push(g);
            let d = &mut r.funcs[id].insts[inst];
            d.op = Opcode::Call;
            d.set_callee(name);
            d.attrs.clear();
        }
    }
    let want = run(&load(&pjc_front::print_module(&r)), &xs);
    // By hand: d tanh(w.x + b) = (1 - l^2) (x, 1).
    let (w, b, x) = (f64s(&xs[0]), f64s(&xs[1])[0], f64s(&xs[2]));
    for e in 0..5 {
        let t: f64 = (0..3).map(|i| w[i] * x[e * 3 + i]).sum::<f64>() + b;
        let d = 1.0 - t.tanh() * t.tanh();
        assert!((f64s(&want[2])[e] - d).abs() < 1e-5);
        for i in 0..3 {
            assert!((f64s(&want[1])[e * 3 + i] - d * x[e * 3 + i]).abs() < 1e-5);
        }
    }
    let mut full = m.clone();
    pjc_transforms::expand(&mut full).unwrap_or_else(|e| panic!("expand: {}", e.msg));
    check_expanded(&full, &xs, &want, "expand", src);
}

fn f64s(t: &Tensor) -> Vec<f64> {
    match t.data.lanes() {
        Lanes::F(v) => v,
        _ => panic!("not a float tensor"),
    }
}

// ---------------------------------------------------------------------------
// spmd funcs and collectives
// ---------------------------------------------------------------------------

const COLLECTIVES: &str = "mesh [x=2, y=3]

spmd func @g(%a: f32[3,4] on [_, x], %s: f32[]) -> (f32[3,4] on [_, x], f32[3,8], f32[3,2] on [_, x], f32[6,2] on [_, x], f32[3,4] on [_, x], f32[3,4] on [_, x]) {
  %r = all_reduce %a {axes=[x], kind=sum}
  %g = all_gather %a {axes=[x], dim=1}
  %rs = reduce_scatter %a {axes=[x], dim=1, kind=max}
  %t = all_to_all %a {axes=[x], split_dim=1, concat_dim=0}
  %p = collective_permute %a {axes=[x], shift=1}
  %i = axis_index {axis=x} : i32[]
  %fi = convert %i : f32[]
  %si = mul %fi, %s
  %b = broadcast %si : f32[3,4]
  %q = add %p, %b
  return %r, %g, %rs, %t, %q, %r
}";

/// `vmap` in a `func` of a `spmd func` (a batched `shard_map`): the generated
/// function is a `spmd func` whose signature keeps the batch dimension unsplit.
#[test]
fn vmap_of_spmd_func_from_func() {
    cases(
        COLLECTIVES,
        "g",
        3,
        &["[0, none] -> [0, 0, 0, 0, 0, 1]", "[2, 0] -> [1, 2, 2, 0, 2, 0]", "[none, 0] -> [2, 1, 0, 1, 0, 2]"],
    );
}

/// `vmap` inside a `spmd func` of a `spmd func` with collectives: they act per
/// example (their dimension attributes move past the batch dimension).
#[test]
fn vmap_inside_spmd_func_with_collectives() {
    let src = format!(
        "{COLLECTIVES}

spmd func @main(%as: f32[3,5,4] on [_, _, x], %s: f32[5]) -> (f32[3,5,4] on [_, _, x], f32[5,3,8] on [_, _, x], f32[3,2,5] on [_, x, _], f32[6,2,5] on [_, x, _]) {{
  %r, %g, %rs, %t, %q, %r2 = vmap @g(%as, %s) {{in_dims=[1, 0], out_dims=[1, 0, 2, 2, 0, 1]}}
  %a2 = reshape %q : f32[5,3,4]
  %a3 = transpose %a2 {{perm=[1,0,2]}}
  %z = add %a3, %r
  return %z, %g, %rs, %t
}}"
    );
    check(&src);
}

/// `vmap` inside a `spmd func` of a plain `func`, and a batched `axis_index`-
/// dependent value.
#[test]
fn vmap_inside_spmd_func_of_func() {
    let src = "mesh [x=2]

func @h(%v: f32[4], %c: f32[]) -> (f32[4]) {
  %b = broadcast %c : f32[4]
  %y = mul %v, %b
  return %y
}

spmd func @main(%vs: f32[3,4] on [_, x]) -> (f32[3,4] on [_, x], f32[3,4]) {
  %i = axis_index {axis=x} : i32[]
  %c = convert %i : f32[]
  %y = vmap @h(%vs, %c) {in_dims=[0, none], out_dims=[0]}
  %s = all_reduce %y {axes=[x], kind=sum}
  return %y, %s
}
";
    check(src);
}

/// A `func` calling a `spmd func` (shard_map) with batched arguments: unrolled.
#[test]
fn vmap_of_func_calling_spmd_func() {
    let src = format!(
        "{COLLECTIVES}

func @f(%a: f32[3,8], %s: f32[]) -> (f32[3,8], f32[3,8]) {{
  %r, %g, %rs, %t, %q, %r2 = call @g(%a, %s)
  %u = add %r, %q
  return %u, %g
}}"
    );
    cases(&src, "f", 3, &["[0, none] -> [0, 1]", "[none, 0] -> [2, 0]", "[1, 0] -> [1, 1]"]);
}

#[test]
fn batched_shard_map_beyond_the_unroll_limit_is_unsupported() {
    let src = format!(
        "{COLLECTIVES}

func @f(%a: f32[3,8], %s: f32[]) -> (f32[3,8]) {{
  %r, %g, %rs, %t, %q, %r2 = call @g(%a, %s)
  return %r
}}

func @main(%as: f32[300,3,8], %s: f32[]) -> (f32[300,3,8]) {{
  %r = vmap @f(%as, %s) {{in_dims=[0, none], out_dims=[0]}}
  return %r
}}"
    );
    let mut m = load(&src);
    let err = expand_vmaps(&mut m).expect_err("should be unsupported");
    assert!(err.msg.starts_with("unsupported: vmap of 'call'"), "{}", err.msg);
    assert!(err.msg.contains("@g"), "{}", err.msg);
}

// ---------------------------------------------------------------------------
// Signatures, shardings, names
// ---------------------------------------------------------------------------

/// Sharding constraints keep their entries and get `_` for the batch
/// dimension; a state-carry result that batching makes differ from its
/// parameter is renamed so the generated function still verifies.
#[test]
fn sharding_constraints_and_carried_results() {
    let f = "mesh [d=2]

func @f(%w: f32[4] on [d], %x: f32[4]) -> (w: f32[4] on [d], y: f32[4], out2: f32[4]) {
  %y = mul %w, %x : f32[4] on [d]
  %w2 = add %w, %y : f32[4] on [?]
  %c = reshape %w : f32[4] on [d]
  return %w2, %y, %c
}";
    cases(f, "f", 3, &["[none, 0] -> [0, 0, 0]", "[0, none] -> [0, 0, 0]", "[none, 0] -> [1, 1, 0]"]);
    let src = format!(
        "{f}

func @main(%w: f32[4] on [d], %xs: f32[4,3]) -> (f32[3,4], f32[4,3]) {{
  %w2, %y, %c = vmap @f(%w, %xs) {{in_dims=[none, 1], out_dims=[0, 1, 0]}}
  return %w2, %y
}}"
    );
    let e = check(&src);
    let text = pjc_front::print_module(&e);
    assert!(text.contains("func @f.vmap(%w: f32[4] on [d], %x: f32[4,3])"), "{text}");
    assert!(text.contains("-> (w_batched: f32[3,4] on [_, d], y: f32[4,3], out2: f32[3,4])"), "{text}");
    assert!(text.contains("on [d, _]"), "the constraint on %y keeps its entry: {text}");
}

#[test]
fn generated_function_names_are_fresh() {
    let src = format!(
        "{CALLS}

func @f.vmap(%x: f32[3]) -> (f32[3]) {{
  return %x
}}

func @main(%xs: f32[5,3], %w: f32[3]) -> (f32[5,3]) {{
  %z, %v = vmap @f(%xs, %w) {{in_dims=[0, none], out_dims=[0, 0]}}
  %y = vmap @f.vmap(%z) {{in_dims=[0], out_dims=[0]}}
  return %y
}}"
    );
    let e = check(&src);
    let names: Vec<&str> = e.funcs.values().map(|f| f.name.as_str()).collect();
    assert!(names.contains(&"f.vmap.1") && names.contains(&"f.vmap.vmap"), "{names:?}");
}

#[test]
fn scalar_mapped_operands_and_outputs() {
    let f = "func @f(%a: f32[], %b: i32[]) -> (f32[], i32[], f32[2]) {
  %c = convert %b : f32[]
  %d = mul %a, %c
  %e = broadcast %d : f32[2]
  return %d, %b, %e
}";
    cases(f, "f", 7, &["[0, 0] -> [0, 0, 0]", "[0, none] -> [0, 0, 1]", "[none, 0] -> [0, 0, 1]"]);
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

#[test]
fn mapped_sizes_that_disagree_are_a_verifier_error() {
    let src = "func @f(%a: f32[3], %b: f32[3]) -> (f32[3]) {
  %c = add %a, %b
  return %c
}

func @main(%x: f32[4,3], %y: f32[3,5]) -> (f32[4,3]) {
  %r = vmap @f(%x, %y) {in_dims=[0, 1], out_dims=[0]}
  return %r
}
";
    let d = pjc_front::load(src).expect_err("must not verify");
    let rendered = pjc_front::render("t.pir", src, &d);
    assert_eq!(d.len(), 1, "{rendered}");
    assert!(d[0].msg.contains("vmap: operand 1 has mapped size 5"), "{rendered}");
    assert!(d[0].msg.contains("4"), "{rendered}");
    assert!(rendered.starts_with("t.pir:7:"), "{rendered}");
}

#[test]
fn in_dims_out_of_range_is_a_verifier_error() {
    let src = "func @f(%a: f32[3]) -> (f32[3]) {
  return %a
}

func @main(%x: f32[4,3]) -> (f32[3,4]) {
  %r = vmap @f(%x) {in_dims=[2], out_dims=[1]}
  return %r
}
";
    let d = pjc_front::load(src).expect_err("must not verify");
    assert!(d[0].msg.contains("in_dims entry 2 is out of range"), "{}", d[0].msg);
}

/// The same function and attributes mapped over two batch sizes needs two
/// generated functions. `expand` (lib.rs) keys its cache of generated functions
/// by op, callee and attributes only, so it reuses the first one.
#[test]
fn same_function_mapped_over_different_sizes() {
    let src = "func @f(%x: f32[2]) -> (f32[2]) {
  %y = exp %x
  return %y
}

func @main(%a: f32[3,2], %b: f32[5,2]) -> (f32[3,2], f32[5,2]) {
  %x = vmap @f(%a) {in_dims=[0], out_dims=[0]}
  %y = vmap @f(%b) {in_dims=[0], out_dims=[0]}
  return %x, %y
}
";
    check(src);
}

/// Inlined callees keep their signature shardings as constraints; the batch
/// dimension is `_` in them.
#[test]
fn inlined_callee_signature_shardings_become_constraints() {
    let src = "mesh [d=2]

func @g(%v: f32[4] on [d]) -> (f32[4] on [d]) {
  %y = neg %v
  return %y
}

func @f(%v: f32[4]) -> (f32[4]) {
  %y = call @g(%v)
  return %y
}

func @main(%vs: f32[4,3]) -> (f32[3,4]) {
  %r = vmap @f(%vs) {in_dims=[1], out_dims=[0]}
  return %r
}
";
    let e = check(src);
    let f = &e.funcs[e.func_by_name("f.vmap").unwrap()];
    let constrained: Vec<String> =
        f.values.values().filter_map(|v| v.sharding.as_ref().map(|s| format!("{}: {} on {s}", v.name, v.ty))).collect();
    assert_eq!(constrained, ["v.1: f32[4,3] on [d, _]", "y: f32[4,3] on [d, _]"], "{}", pjc_front::print_module(&e));
}

/// The batch dimension moves only where an op needs it: a matrix-vector
/// product with the vector batched needs no transpose (the batch is a free
/// dimension of dot_general), elementwise ops keep it where it is.
#[test]
fn batch_dimension_is_moved_only_where_needed() {
    let src = "func @f(%w: f32[3,4], %x: f32[4]) -> (f32[3]) {
  %y = dot_general %w, %x {lhs_contract=[1], rhs_contract=[0]}
  %z = tanh %y
  return %z
}

func @main(%w: f32[3,4], %xs: f32[4,5]) -> (f32[3,5]) {
  %r = vmap @f(%w, %xs) {in_dims=[none, 1], out_dims=[1]}
  return %r
}
";
    let e = check(src);
    let f = &e.funcs[e.func_by_name("f.vmap").unwrap()];
    let ops: Vec<&str> = f.body.iter().map(|&i| f.insts[i].op.name()).collect();
    assert_eq!(ops, ["dot_general", "tanh"], "{}", pjc_front::print_module(&e));
}
