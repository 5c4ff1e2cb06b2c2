//! `grad` rules, op by op: every differentiable op of spec section 7 checked
//! against central finite differences in f64 on random inputs away from kinks
//! and ties, plus exact tie semantics and the error cases.

mod grad_util;
use grad_util::*;
use Init::*;
use pjc_tensor::compare::{close_values, Tolerance};

const X35: &str = "%x: f64[3,5]";

fn unary(op: &str, init: Init, seed: u64) -> Vec<f64> {
    let body = format!("  %y = {op} %x");
    check_op(X35, &body, "f64[3,5]", &[0], &[init], seed).remove(0)
}

#[test]
fn unary_elementwise_math() {
    let cases: Vec<(&str, Init)> = vec![
        ("neg", U(-2.0, 2.0)),
        ("abs", Signed(0.2, 2.0)),
        ("exp", U(-2.0, 2.0)),
        ("log", U(0.2, 3.0)),
        ("log1p", U(-0.5, 2.0)),
        ("expm1", U(-2.0, 2.0)),
        ("sqrt", U(0.2, 3.0)),
        ("rsqrt", U(0.2, 3.0)),
        ("tanh", U(-2.0, 2.0)),
        ("logistic", U(-3.0, 3.0)),
        ("erf", U(-2.0, 2.0)),
        ("sin", U(-3.0, 3.0)),
        ("cos", U(-3.0, 3.0)),
    ];
    for (k, (op, init)) in cases.into_iter().enumerate() {
        let g = unary(op, init, 100 + k as u64);
        assert!(g.iter().any(|&x| x != 0.0), "{op}: gradient is all zero");
    }
}

#[test]
fn piecewise_constant_ops_have_zero_gradient() {
    for (k, op) in ["floor", "ceil", "round", "round_even", "sign"].into_iter().enumerate() {
        let g = unary(op, U(-3.0, 3.0), 200 + k as u64);
        assert!(g.iter().all(|&x| x == 0.0), "{op}: {g:?}");
    }
    // compare and is_finite feed only selects/converts: no gradient through the predicate.
    let body = "  %p = compare %x, %z {dir=lt}\n  %c = convert %p : f64[3,5]\n  %y = mul %c, %z";
    let g = check_op("%x: f64[3,5], %z: f64[3,5]", body, "f64[3,5]", &[0, 1], &[U(-1.0, 1.0), U(-1.0, 1.0)], 210);
    assert!(g[0].iter().all(|&x| x == 0.0));
}

fn binary(op: &str, a: Init, b: Init, seed: u64) -> Vec<Vec<f64>> {
    let body = format!("  %y = {op} %a, %b");
    check_op("%a: f64[3,5], %b: f64[3,5]", &body, "f64[3,5]", &[0, 1], &[a, b], seed)
}

#[test]
fn binary_elementwise_math() {
    binary("add", U(-2.0, 2.0), U(-2.0, 2.0), 300);
    binary("sub", U(-2.0, 2.0), U(-2.0, 2.0), 301);
    binary("mul", U(-2.0, 2.0), U(-2.0, 2.0), 302);
    binary("div", U(-2.0, 2.0), Signed(0.5, 2.0), 303);
    binary("rem", U(-5.0, 5.0), Signed(0.7, 2.0), 304);
    binary("pow", U(0.5, 2.0), U(-2.0, 2.0), 305);
    binary("atan2", U(-2.0, 2.0), U(-2.0, 2.0), 306);
    let g = binary("max", U(-2.0, 2.0), U(-2.0, 2.0), 307);
    assert!(g[0].iter().zip(&g[1]).all(|(a, b)| *a == 0.0 || *b == 0.0), "max without ties: one side each");
    binary("min", U(-2.0, 2.0), U(-2.0, 2.0), 308);
}

#[test]
fn same_value_used_twice_accumulates() {
    // y = x * x + exp(x) * x: three uses of %x.
    let body = "  %s = mul %x, %x\n  %e = exp %x\n  %t = mul %e, %x\n  %y = add %s, %t";
    check_op(X35, body, "f64[3,5]", &[0], &[U(-1.0, 1.0)], 320);
    // mul %x, %x exactly: 2x.
    let src =
        "func @f(%x: f64[3]) -> (f64[]) {\n  %s = mul %x, %x\n  %l = reduce %s {dims=[0], kind=sum}\n  return %l\n}\n";
    let (_, g) = check_grad(src, "f", &[0], &[V(vec![1.5, -2.0, 0.25])], 1);
    assert_eq!(g[0], vec![3.0, -4.0, 0.5]);
}

#[test]
fn clamp_with_tensor_and_scalar_bounds() {
    check_op(
        "%lo: f64[3,5], %x: f64[3,5], %hi: f64[3,5]",
        "  %y = clamp %lo, %x, %hi",
        "f64[3,5]",
        &[0, 1, 2],
        &[U(-1.0, -0.1), U(-2.0, 2.0), U(0.1, 1.0)],
        330,
    );
    let g = check_op(
        "%lo: f64[], %x: f64[3,5], %hi: f64[]",
        "  %y = clamp %lo, %x, %hi",
        "f64[3,5]",
        &[0, 1, 2],
        &[V(vec![-0.5]), U(-2.0, 2.0), V(vec![0.7])],
        331,
    );
    assert!(g[0][0] != 0.0 && g[2][0] != 0.0, "some elements are clamped on both sides: {g:?}");
}

#[test]
fn select_with_tensor_and_scalar_predicates() {
    check_op(
        "%a: f64[3,5], %b: f64[3,5]",
        "  %p = compare %a, %b {dir=lt}\n  %y = select %p, %a, %b",
        "f64[3,5]",
        &[0, 1],
        &[U(-1.0, 1.0), U(-1.0, 1.0)],
        340,
    );
    check_op(
        "%s: f64[], %a: f64[3,5], %b: f64[3,5]",
        "  %z = constant 0.0 : f64[]\n  %p = compare %s, %z {dir=gt}\n  %y = select %p, %a, %b",
        "f64[3,5]",
        &[1, 2],
        &[V(vec![0.3]), U(-1.0, 1.0), U(-1.0, 1.0)],
        341,
    );
}

#[test]
fn convert_between_floats_and_to_integers() {
    // f32 -> f64: the cotangent converts back to f32 (exactly here: weights are f32 values).
    let src = "func @f(%x: f32[4], %w: f64[4]) -> (f64[]) {\n  %c = convert %x : f64[4]\n  %t = tanh %c\n  %p = mul %t, %w\n  %l = reduce %p {dims=[0], kind=sum}\n  return %l\n}\n";
    let m = expand(&with_grad_main(src, "f", &[0]));
    let x = [0.5, -1.25, 2.0, 0.125];
    let w = [0.25, -0.5, 1.0, 2.0];
    let out =
        run(&m, "grad_main", vec![tensor(pjc_ir::DType::F32, vec![4], &x), tensor(pjc_ir::DType::F64, vec![4], &w)]);
    assert_eq!(out[1].dtype(), pjc_ir::DType::F32);
    let want: Vec<f64> = (0..4).map(|i| ((1.0 - x[i].tanh() * x[i].tanh()) * w[i]) as f32 as f64).collect();
    close_values(&want, &f64s(&out[1]), pjc_ir::DType::F32, Tolerance::rel(1e-6)).unwrap();
    // Through an integer: no gradient.
    let body = "  %i = convert %x : i32[3,5]\n  %y = convert %i : f64[3,5]";
    let g = check_op(X35, body, "f64[3,5]", &[0], &[U(-3.0, 3.0)], 350);
    assert!(g[0].iter().all(|&v| v == 0.0));
}

#[test]
fn broadcast_new_stretched_and_permuted_dims() {
    check_op("%x: f64[]", "  %y = broadcast %x : f64[3,5]", "f64[3,5]", &[0], &[U(-1.0, 1.0)], 400);
    check_op("%x: f64[5]", "  %y = broadcast %x {dims=[1]} : f64[3,5]", "f64[3,5]", &[0], &[U(-1.0, 1.0)], 401);
    check_op("%x: f64[3,1]", "  %y = broadcast %x {dims=[0,1]} : f64[3,4,5]", "f64[3,4,5]", &[0], &[U(-1.0, 1.0)], 402);
    check_op("%x: f64[5,3]", "  %y = broadcast %x {dims=[2,0]} : f64[3,4,5]", "f64[3,4,5]", &[0], &[U(-1.0, 1.0)], 403);
    check_op(
        "%x: f64[1,3,1]",
        "  %y = broadcast %x {dims=[2,0,1]} : f64[3,2,4]",
        "f64[3,2,4]",
        &[0],
        &[U(-1.0, 1.0)],
        404,
    );
}

#[test]
fn reshape_transpose_reverse() {
    check_op(X35, "  %y = reshape %x : f64[5,3]", "f64[5,3]", &[0], &[U(-1.0, 1.0)], 410);
    check_op("%x: f64[3,4,5]", "  %y = transpose %x {perm=[2,0,1]}", "f64[5,3,4]", &[0], &[U(-1.0, 1.0)], 411);
    check_op(X35, "  %y = reverse %x {dims=[0,1]}", "f64[3,5]", &[0], &[U(-1.0, 1.0)], 412);
}

#[test]
fn slice_and_pad() {
    check_op(
        "%x: f64[7,9]",
        "  %y = slice %x {start=[1,2], limit=[6,9], stride=[2,3]}",
        "f64[3,3]",
        &[0],
        &[U(-1.0, 1.0)],
        420,
    );
    // Negative edges crop; interior padding; the pad value gets the rest.
    check_op(
        "%x: f64[3,5], %v: f64[]",
        "  %y = pad %x, %v {low=[1,-1], high=[-1,2], interior=[1,2]}",
        "f64[5,14]",
        &[0, 1],
        &[U(-1.0, 1.0), U(-1.0, 1.0)],
        421,
    );
    check_op(
        "%x: f64[4,3], %v: f64[]",
        "  %y = pad %x, %v {low=[-2,0], high=[1,-1]}",
        "f64[3,2]",
        &[0, 1],
        &[U(-1.0, 1.0), U(-1.0, 1.0)],
        422,
    );
}

#[test]
fn concat_three_operands() {
    check_op(
        "%a: f64[3,2], %b: f64[3,4], %c: f64[3,1]",
        "  %y = concat %a, %b, %c {dim=1}",
        "f64[3,7]",
        &[0, 1, 2],
        &[U(-1.0, 1.0), U(-1.0, 1.0), U(-1.0, 1.0)],
        430,
    );
}

#[test]
fn dynamic_slice_and_update_in_range_and_clamped() {
    let params = "%x: f64[5,7], %i: i32[], %j: i32[]";
    for (k, (i, j)) in [(1.0, 2.0), (4.0, 6.0), (-3.0, 9.0)].into_iter().enumerate() {
        check_op(
            params,
            "  %y = dynamic_slice %x, %i, %j {sizes=[3,4]}",
            "f64[3,4]",
            &[0],
            &[U(-1.0, 1.0), V(vec![i]), V(vec![j])],
            440 + k as u64,
        );
        check_op(
            "%x: f64[5,7], %u: f64[2,3], %i: i32[], %j: i32[]",
            "  %y = dynamic_update_slice %x, %u, %i, %j",
            "f64[5,7]",
            &[0, 1],
            &[U(-1.0, 1.0), U(-1.0, 1.0), V(vec![i]), V(vec![j])],
            450 + k as u64,
        );
    }
}

#[test]
fn reductions_sum_max_min_prod() {
    for (k, (dims, yt)) in [("[1]", "f64[3]"), ("[0,1]", "f64[]")].into_iter().enumerate() {
        for (j, kind) in ["sum", "max", "min", "prod"].into_iter().enumerate() {
            let body = format!("  %y = reduce %x {{dims={dims}, kind={kind}}}");
            let init = if kind == "prod" { Signed(0.5, 1.5) } else { U(-2.0, 2.0) };
            check_op(X35, &body, yt, &[0], &[init], 500 + 10 * k as u64 + j as u64);
        }
    }
    check_op("%x: f64[3,4,5]", "  %y = reduce %x {dims=[0,2], kind=prod}", "f64[4]", &[0], &[Signed(0.6, 1.4)], 520);
    // prod with exact zeros: the gradient is the product of the others (no division).
    let x = vec![2.0, 0.0, 3.0, 0.5, 0.0, 0.0, 1.5, -1.0, 4.0];
    let src = "func @f(%x: f64[3,3]) -> (f64[]) {\n  %p = reduce %x {dims=[1], kind=prod}\n  %l = reduce %p {dims=[0], kind=sum}\n  return %l\n}\n";
    let (_, g) = check_grad(src, "f", &[0], &[V(x)], 521);
    assert_eq!(g[0], vec![0.0, 6.0, 0.0, 0.0, 0.0, 0.0, -4.0, 6.0, -1.5]);
}

#[test]
fn dot_general_all_dimension_kinds() {
    let u = || U(-1.0, 1.0);
    check_op(
        "%a: f64[3,4], %b: f64[4,5]",
        "  %y = dot_general %a, %b {lhs_contract=[1], rhs_contract=[0]}",
        "f64[3,5]",
        &[0, 1],
        &[u(), u()],
        600,
    );
    check_op(
        "%a: f64[2,3,4], %b: f64[2,4,5]",
        "  %y = dot_general %a, %b {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]}",
        "f64[2,3,5]",
        &[0, 1],
        &[u(), u()],
        601,
    );
    check_op(
        "%a: f64[4,2,3], %b: f64[3,5,2]",
        "  %y = dot_general %a, %b {lhs_batch=[1], rhs_batch=[2], lhs_contract=[2], rhs_contract=[0]}",
        "f64[2,4,5]",
        &[0, 1],
        &[u(), u()],
        602,
    );
    check_op(
        "%a: f64[3,4,2], %b: f64[2,5,4]",
        "  %y = dot_general %a, %b {lhs_contract=[1,2], rhs_contract=[2,0]}",
        "f64[3,5]",
        &[0, 1],
        &[u(), u()],
        603,
    );
    check_op("%a: f64[3], %b: f64[4]", "  %y = dot_general %a, %b", "f64[3,4]", &[0, 1], &[u(), u()], 604);
    check_op(
        "%a: f64[2,3,2,4], %b: f64[4,2,2,5]",
        "  %y = dot_general %a, %b {lhs_batch=[2,0], rhs_batch=[1,2], lhs_contract=[3], rhs_contract=[0]}",
        "f64[2,2,3,5]",
        &[0, 1],
        &[u(), u()],
        605,
    );
}

#[test]
fn dot_general_with_a_wider_result_dtype() {
    // f32 x f32 -> f64: the transposed contraction runs in f64 and is rounded
    // once to f32, exactly as the same program on f64 operands rounded.
    let narrow = "func @f(%a: f32[3,4], %b: f32[4,2], %w: f64[3,2]) -> (f64[]) {\n  %y = dot_general %a, %b {lhs_contract=[1], rhs_contract=[0]} : f64[3,2]\n  %p = mul %y, %w\n  %l = reduce %p {dims=[0,1], kind=sum}\n  return %l\n}\n";
    let wide = "func @f(%a: f32[3,4], %b: f32[4,2], %w: f64[3,2]) -> (f64[]) {\n  %aw = convert %a : f64[3,4]\n  %bw = convert %b : f64[4,2]\n  %y = dot_general %aw, %bw {lhs_contract=[1], rhs_contract=[0]}\n  %p = mul %y, %w\n  %l = reduce %p {dims=[0,1], kind=sum}\n  return %l\n}\n";
    let mut rng = Rng::new(610);
    let types = param_types(&load(narrow), "f");
    let inputs: Vec<_> = types.iter().map(|t| fill(t, &U(-1.0, 1.0), &mut rng)).collect();
    let a = run(&expand(&with_grad_main(narrow, "f", &[0, 1])), "grad_main", inputs.clone());
    let b = run(&expand(&with_grad_main(wide, "f", &[0, 1])), "grad_main", inputs);
    assert_eq!(a[1].dtype(), pjc_ir::DType::F32);
    assert_eq!(f64s(&a[1]), f64s(&b[1]));
    assert_eq!(f64s(&a[2]), f64s(&b[2]));
}

fn conv(x: &str, k: &str, attrs: &str, y: &str, seed: u64) {
    let body = format!("  %y = convolution %x, %k {{{attrs}}}");
    check_op(&format!("%x: {x}, %k: {k}"), &body, y, &[0, 1], &[U(-1.0, 1.0), U(-1.0, 1.0)], seed);
}

#[test]
fn convolution_strides_padding_dilations() {
    conv(
        "f64[2,6,5,3]",
        "f64[3,2,3,4]",
        "dims=\"b01f_01io->b01f\", window_strides=[2,1], padding=[[1,0],[0,1]], rhs_dilation=[1,2]",
        "f64[2,3,4,4]",
        700,
    );
    conv(
        "f64[2,3,4,4]",
        "f64[4,3,2,2]",
        "dims=\"bf01_oi01->bf01\", window_strides=[1,2], padding=[[0,1],[1,1]], lhs_dilation=[2,1]",
        "f64[2,4,7,3]",
        701,
    );
    // Negative padding and a stride that leaves input elements unread.
    conv("f64[2,9,2]", "f64[3,2,3]", "dims=\"b0f_0io->b0f\", window_strides=[3], padding=[[-1,2]]", "f64[2,3,3]", 702);
    conv("f64[2,8,2]", "f64[3,2,3]", "dims=\"b0f_0io->b0f\", window_strides=[3]", "f64[2,2,3]", 703);
}

#[test]
fn convolution_groups_and_layouts() {
    conv(
        "f64[2,5,5,4]",
        "f64[3,3,2,6]",
        "dims=\"b01f_01io->b01f\", padding=[[1,1],[1,1]], feature_group_count=2",
        "f64[2,5,5,6]",
        710,
    );
    conv(
        "f64[4,5,5,3]",
        "f64[2,2,3,4]",
        "dims=\"b01f_01io->b01f\", window_strides=[2,1], batch_group_count=2",
        "f64[2,2,4,4]",
        711,
    );
    conv("f64[3,5,5,2]", "f64[3,2,2,4]", "dims=\"f01b_i01o->01bf\"", "f64[4,4,2,4]", 712);
    conv(
        "f64[6,2,5]",
        "f64[3,2,3]",
        "dims=\"fb0_oi0->0fb\", window_strides=[2], lhs_dilation=[2], rhs_dilation=[2], feature_group_count=3",
        "f64[3,3,2]",
        713,
    );
}

#[test]
fn reduce_window_sum_max_min() {
    let shapes = [
        ("window=[2,3], strides=[2,2], padding=[[1,0],[0,2]]", "f64[3,4]"),
        ("window=[2,2]", "f64[5,6]"),
        ("window=[3,2], strides=[1,3], padding=[[-1,1],[1,0]]", "f64[4,3]"),
    ];
    for (k, (attrs, yt)) in shapes.into_iter().enumerate() {
        for (j, kind) in ["sum", "max", "min"].into_iter().enumerate() {
            let body = format!("  %y = reduce_window %x {{kind={kind}, {attrs}}}");
            check_op("%x: f64[6,7]", &body, yt, &[0], &[U(-2.0, 2.0)], 800 + 10 * k as u64 + j as u64);
        }
    }
}

#[test]
fn select_and_scatter_add_is_linear_in_its_source() {
    // Source gradient: the cotangent read back at each window's selection.
    let g = check_op(
        "%s: f64[3,4], %x: f64[6,7]",
        "  %y = select_and_scatter_add %s, %x {window=[2,3], strides=[2,2], padding=[[1,0],[0,2]]}",
        "f64[6,7]",
        &[0, 1],
        &[U(-1.0, 1.0), U(-2.0, 2.0)],
        900,
    );
    assert!(g[1].iter().all(|&v| v == 0.0), "no gradient through the selection");
    // Ties pick the first maximum, padding is never selected, an all-padding
    // window adds nothing: source gradient = weights at the selected positions.
    let src = "func @f(%s: f64[5], %w: f64[3]) -> (f64[]) {\n  %x = constant [1.0, 3.0, 3.0] : f64[3]\n  %y = select_and_scatter_add %s, %x {window=[2], padding=[[2,1]]}\n  %p = mul %y, %w\n  %l = reduce %p {dims=[0], kind=sum}\n  return %l\n}\n";
    let (_, g) = check_grad(src, "f", &[0], &[U(-1.0, 1.0), V(vec![10.0, 20.0, 30.0])], 901);
    // Windows over [p, p, 1, 3, 3, p]: [p,p] -> none, [p,1] -> 0, [1,3] -> 1,
    // [3,3] -> 1 (the first), [3,p] -> 2.
    assert_eq!(g[0], vec![0.0, 10.0, 20.0, 20.0, 30.0]);
}

#[test]
fn gather_clamps_and_scatter_add_drops() {
    check_op(
        "%t: f64[5,3], %i: i32[6]",
        "  %y = gather %t, %i {axis=0}",
        "f64[6,3]",
        &[0],
        &[U(-1.0, 1.0), V(vec![0.0, 4.0, 7.0, -2.0, 2.0, 2.0])],
        1000,
    );
    check_op(
        "%t: f64[2,5,3], %i: i64[2,2]",
        "  %y = gather %t, %i {axis=1}",
        "f64[2,2,2,3]",
        &[0],
        &[U(-1.0, 1.0), V(vec![4.0, 9.0, 1.0, 1.0])],
        1001,
    );
    let g = check_op(
        "%b: f64[5,3], %i: i32[4], %u: f64[4,3]",
        "  %y = scatter_add %b, %i, %u {axis=0}",
        "f64[5,3]",
        &[0, 2],
        &[U(-1.0, 1.0), V(vec![1.0, 3.0, 5.0, -1.0]), U(-1.0, 1.0)],
        1002,
    );
    assert!(g[1][6..].iter().all(|&v| v == 0.0), "dropped updates have no gradient: {:?}", g[1]);
    // Unsigned indices and a scalar index.
    check_op(
        "%b: f64[4,3], %i: u8[], %u: f64[4]",
        "  %y = scatter_add %b, %i, %u {axis=1}",
        "f64[4,3]",
        &[0, 2],
        &[U(-1.0, 1.0), V(vec![2.0]), U(-1.0, 1.0)],
        1003,
    );
}

#[test]
fn calls_are_differentiated_through() {
    let src = "func @layer(%x: f64[3,4], %w: f64[4,4]) -> (f64[3,4]) {\n  %h = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]}\n  %t = tanh %h\n  return %t\n}\n\
func @f(%x: f64[3,4], %w1: f64[4,4], %w2: f64[4,4]) -> (loss: f64[]) {\n  %a = call @layer(%x, %w1) : f64[3,4]\n  %b = call @layer(%a, %w2) : f64[3,4]\n  %c = mul %a, %b\n  %l = reduce %c {dims=[0,1], kind=sum}\n  return %l\n}\n";
    let (m, _) = check_grad(src, "f", &[0, 1, 2], &[U(-1.0, 1.0), U(-1.0, 1.0), U(-1.0, 1.0)], 1100);
    let text = pjc_front::print_module(&m);
    assert!(
        text.contains("%layer.t.ct") || text.contains("%layer.h.ct"),
        "readable names from the inlined callee:\n{text}"
    );
    assert!(text.contains("func @f.grad("), "{text}");
}

#[test]
fn generated_names_are_readable() {
    let src = "func @f(%x: f64[3], %w: f64[3]) -> (loss: f64[]) {\n  %h = mul %x, %w\n  %t = tanh %h\n  %l = reduce %t {dims=[0], kind=sum}\n  return %l\n}\n";
    let m = expand(&with_grad_main(src, "f", &[0, 1]));
    let text = pjc_front::print_module(&m);
    for want in ["%t.d = sub", "%x.ct = mul", "%w.ct = mul", "-> (loss: f64[], x_grad: f64[3], w_grad: f64[3])"] {
        assert!(text.contains(want), "missing '{want}' in:\n{text}");
    }
}

#[test]
fn sharding_constraints_carry_to_cotangents() {
    let src = "mesh [data=2, model=2]\nfunc @f(%x: f64[4,6], %w: f64[6,2]) -> (f64[]) {\n  %h = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f64[4,2] on [data, _]\n  %t = tanh %h : f64[4,2] on [data, model]\n  %l = reduce %t {dims=[0,1], kind=sum}\n  return %l\n}\n";
    let (m, _) = check_grad(src, "f", &[0, 1], &[U(-1.0, 1.0), U(-1.0, 1.0)], 1200);
    let text = pjc_front::print_module(&m);
    let g = m.func_by_name("f.grad").map(|id| &m.funcs[id]).expect("generated function");
    let ct_on = |s: &str| {
        g.values.values().any(|v| v.name.contains(".ct") && v.sharding.as_ref().is_some_and(|x| x.to_string() == s))
    };
    assert!(ct_on("[data, _]") && ct_on("[data, model]"), "cotangents keep the constraints:\n{text}");
}

// ---- ties (exact expectations) ---------------------------------------------

fn grads(src: &str, f: &str, wrt: &[usize], inputs: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
    let m = expand(&with_grad_main(src, f, wrt));
    let types = param_types(&m, f);
    let ins = types.iter().zip(inputs).map(|(t, v)| fill(t, &V(v), &mut Rng::new(0))).collect();
    run(&m, "grad_main", ins)[1..].iter().map(f64s).collect()
}

#[test]
fn max_and_min_split_ties_equally() {
    let src = |op: &str| {
        format!("func @f(%a: f64[3], %b: f64[3]) -> (f64[]) {{\n  %y = {op} %a, %b\n  %l = reduce %y {{dims=[0], kind=sum}}\n  return %l\n}}\n")
    };
    let g = grads(&src("max"), "f", &[0, 1], vec![vec![1.0, 2.0, 3.0], vec![1.0, 5.0, -3.0]]);
    assert_eq!(g, vec![vec![0.5, 0.0, 1.0], vec![0.5, 1.0, 0.0]]);
    let g = grads(&src("min"), "f", &[0, 1], vec![vec![1.0, 2.0, 3.0], vec![1.0, 5.0, -3.0]]);
    assert_eq!(g, vec![vec![0.5, 1.0, 0.0], vec![0.5, 0.0, 1.0]]);
    // max(x, x) = x: the two halves add up to 1.
    let same =
        "func @f(%x: f64[2]) -> (f64[]) {\n  %y = max %x, %x\n  %l = reduce %y {dims=[0], kind=sum}\n  return %l\n}\n";
    assert_eq!(grads(same, "f", &[0], vec![vec![4.0, -1.0]]), vec![vec![1.0, 1.0]]);
}

#[test]
fn reduce_max_and_min_split_ties_equally() {
    let src = |kind: &str| {
        format!("func @f(%x: f64[2,3], %w: f64[2]) -> (f64[]) {{\n  %y = reduce %x {{dims=[1], kind={kind}}}\n  %p = mul %y, %w\n  %l = reduce %p {{dims=[0], kind=sum}}\n  return %l\n}}\n")
    };
    let g = grads(&src("max"), "f", &[0], vec![vec![1.0, 3.0, 3.0, 2.0, 2.0, 2.0], vec![1.0, 3.0]]);
    assert_eq!(g, vec![vec![0.0, 0.5, 0.5, 1.0, 1.0, 1.0]]);
    let g = grads(&src("min"), "f", &[0], vec![vec![1.0, 3.0, 1.0, -2.0, 5.0, 7.0], vec![2.0, 1.0]]);
    assert_eq!(g, vec![vec![1.0, 0.0, 1.0, 1.0, 0.0, 0.0]]);
    let all = "func @f(%x: f64[2,3]) -> (f64[]) {\n  %y = reduce %x {dims=[0,1], kind=max}\n  return %y\n}\n";
    let g = grads(all, "f", &[0], vec![vec![4.0, 1.0, 4.0, 4.0, 0.0, -1.0]]);
    let third = 1.0 / 3.0;
    assert_eq!(g, vec![vec![third, 0.0, third, third, 0.0, 0.0]]);
}

#[test]
fn reduce_window_max_ties_take_the_first() {
    let src = "func @f(%x: f64[4]) -> (f64[]) {\n  %y = reduce_window %x {kind=max, window=[2]}\n  %l = reduce %y {dims=[0], kind=sum}\n  return %l\n}\n";
    // Windows [5,5] [5,1] [1,1] pick positions 0 (the first of a tie, not a
    // split), 1 and 2.
    assert_eq!(grads(src, "f", &[0], vec![vec![5.0, 5.0, 1.0, 1.0]]), vec![vec![1.0, 1.0, 1.0, 0.0]]);
    let src = src.replace("kind=max", "kind=min");
    // Minima: positions 0, 2 and 2.
    assert_eq!(grads(&src, "f", &[0], vec![vec![5.0, 5.0, 1.0, 1.0]]), vec![vec![1.0, 0.0, 2.0, 0.0]]);
}

// ---- errors ------------------------------------------------------------------

#[test]
fn verifier_rejects_bad_grads() {
    let f = "func @f(%x: f64[3], %i: i32[]) -> (f64[3]) {\n  return %x\n}\n";
    let e = load_errors(&format!("{f}func @m(%x: f64[3], %i: i32[]) -> (f64[3], f64[3]) {{\n  %l, %g = grad @f(%x, %i) {{wrt=[0]}} : (f64[3], f64[3])\n  return %l, %g\n}}\n"));
    assert!(e.contains("grad needs @f to return one float scalar"), "{e}");
    let f = "func @f(%x: f64[3], %i: i32[]) -> (f64[]) {\n  %s = reduce %x {dims=[0], kind=sum}\n  return %s\n}\n";
    let e = load_errors(&format!("{f}func @m(%x: f64[3], %i: i32[]) -> (f64[], i32[]) {{\n  %l, %g = grad @f(%x, %i) {{wrt=[1]}}\n  return %l, %g\n}}\n"));
    assert!(e.contains("cannot differentiate with respect to operand 1 of dtype i32"), "{e}");
    let e = load_errors(&format!("{f}func @m(%x: f64[3], %i: i32[]) -> (f64[], f64[3]) {{\n  %l, %g = grad @f(%x, %i) {{wrt=[2]}}\n  return %l, %g\n}}\n"));
    assert!(e.contains("'wrt' entry 2 is out of range"), "{e}");
}

#[test]
fn ops_without_a_rule_are_reported_not_panicked() {
    let src = "func @f(%x: f16[3]) -> (f32[]) {\n  %b = bitcast_convert %x : bf16[3]\n  %c = convert %b : f32[3]\n  %l = reduce %c {dims=[0], kind=sum}\n  return %l\n}\n";
    let e = expand_err(&with_grad_main(src, "f", &[0]));
    assert!(e.starts_with("unsupported: gradient of 'bitcast_convert' (computing %b in @f)"), "{e}");
    // Without the gradient nobody asks for the rule: integers are fine.
    let src = "func @f(%x: f32[3], %i: i32[3]) -> (f32[]) {\n  %b = bitcast_convert %i : f32[3]\n  %p = mul %x, %b\n  %l = reduce %p {dims=[0], kind=sum}\n  return %l\n}\n";
    expand(&with_grad_main(src, "f", &[0]));
}

// ---- edge cases ----------------------------------------------------------------

#[test]
fn unused_and_returned_parameters() {
    // %u does not reach the loss: zeros; %s is returned as is: 1.
    let src = "func @f(%s: f64[], %u: f64[2,2]) -> (f64[]) {\n  return %s\n}\n";
    let g = grads(src, "f", &[0, 1], vec![vec![3.0], vec![1.0, 2.0, 3.0, 4.0]]);
    assert_eq!(g, vec![vec![1.0], vec![0.0; 4]]);
    // A loss that depends on no differentiated parameter.
    let src = "func @f(%x: f64[2], %c: f64[2]) -> (f64[]) {\n  %e = exp %c\n  %l = reduce %e {dims=[0], kind=sum}\n  return %l\n}\n";
    assert_eq!(grads(src, "f", &[0], vec![vec![1.0, 2.0], vec![0.0, 1.0]]), vec![vec![0.0, 0.0]]);
}

#[test]
fn spmd_funcs_calling_funcs_and_spmd_funcs_are_inlined() {
    let src = "mesh [d=2]
func @act(%x: f64[3]) -> (f64[3]) {\n  %t = tanh %x\n  %m = mul %t, %x\n  return %m\n}
spmd func @inner(%x: f64[3] on [d], %w: f64[3]) -> (f64[3] on [d]) {\n  %p = mul %x, %w\n  %a = call @act(%p) : f64[3]\n  return %a\n}
spmd func @f(%x: f64[3] on [d], %w: f64[3]) -> (f64[]) {
  %a = call @inner(%x, %w) : f64[3]
  %b = call @act(%a) : f64[3]
  %s = reduce %b {dims=[0], kind=sum}
  %l = all_reduce %s {axes=[d], kind=sum}
  return %l
}
";
    let (m, _) = check_grad(src, "f", &[0, 1], &[U(-1.0, 1.0), U(-1.0, 1.0)], 1300);
    let g = &m.funcs[m.func_by_name("f.grad").unwrap()];
    assert!(g.body.iter().all(|&i| g.insts[i].op != pjc_ir::Opcode::Call), "calls inside a spmd func are inlined");
}

#[test]
fn narrow_float_dtypes() {
    // The same program in f32 and bf16 gives the f64 gradients up to rounding.
    let prog = |d: &str| {
        format!("func @f(%x: {d}[3,4], %w: {d}[4,2]) -> ({d}[]) {{\n  %h = dot_general %x, %w {{lhs_contract=[1], rhs_contract=[0]}}\n  %t = tanh %h\n  %e = exp %t\n  %m = reduce %e {{dims=[1], kind=max}}\n  %l = reduce %m {{dims=[0], kind=sum}}\n  return %l\n}}\n")
    };
    let mut rng = Rng::new(1400);
    let xs: Vec<f64> = (0..12).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let ws: Vec<f64> = (0..8).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let eval = |d: pjc_ir::DType| {
        let m = expand(&with_grad_main(&prog(d.name()), "f", &[0, 1]));
        let x = tensor(d, vec![3, 4], &xs.iter().map(|&v| d.round_f64(v)).collect::<Vec<_>>());
        let w = tensor(d, vec![4, 2], &ws.iter().map(|&v| d.round_f64(v)).collect::<Vec<_>>());
        let out = run(&m, "grad_main", vec![x, w]);
        assert!(out.iter().all(|t| t.dtype() == d));
        out.iter().map(f64s).collect::<Vec<_>>()
    };
    let exact = eval(pjc_ir::DType::F64);
    for (d, tol) in [(pjc_ir::DType::F32, 1e-5), (pjc_ir::DType::BF16, 5e-2)] {
        let got = eval(d);
        for (k, (a, b)) in got.iter().zip(&exact).enumerate() {
            // Against the f64 gradient: within tol·(1 + |exact|).
            close_values(b, a, d, Tolerance::rel(tol).with_atol(tol)).unwrap_or_else(|e| panic!("{d} output {k}: {e}"));
        }
    }
}

// ---- randomized configurations -------------------------------------------------

fn pick(rng: &mut Rng, lo: i64, hi: i64) -> i64 {
    lo + (rng.next_u64() % (hi - lo + 1) as u64) as i64
}

fn shuffled(rng: &mut Rng, mut v: Vec<char>) -> Vec<char> {
    for i in (1..v.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    v
}

fn type_str(shape: &[usize]) -> String {
    format!("f64[{}]", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(","))
}

#[test]
fn convolution_random_configurations() {
    let mut rng = Rng::new(2024);
    let mut done = 0;
    for trial in 0..400 {
        if done == 24 {
            break;
        }
        let ns = pick(&mut rng, 1, 2) as usize;
        let (fgc, bgc) = match pick(&mut rng, 0, 3) {
            0 => (2, 1),
            1 => (1, 2),
            _ => (1, 1),
        };
        let i = pick(&mut rng, 1, 2) as usize;
        let o = (fgc * bgc) as usize * pick(&mut rng, 1, 2) as usize;
        let c = i * fgc as usize;
        let n = bgc as usize * pick(&mut rng, 1, 2) as usize;
        let digits: Vec<char> = (0..ns).map(|k| char::from_digit(k as u32, 10).unwrap()).collect();
        let with = |a: char, b: char| {
            let mut v = vec![a, b];
            v.extend(&digits);
            v
        };
        let (li, lk, lo) = (
            shuffled(&mut rng, with('b', 'f')),
            shuffled(&mut rng, with('i', 'o')),
            shuffled(&mut rng, with('b', 'f')),
        );
        let sp: Vec<usize> = (0..ns).map(|_| pick(&mut rng, 3, 6) as usize).collect();
        let ks: Vec<usize> = (0..ns).map(|_| pick(&mut rng, 1, 3) as usize).collect();
        let strides: Vec<usize> = (0..ns).map(|_| pick(&mut rng, 1, 3) as usize).collect();
        let lhs_dil: Vec<usize> = (0..ns).map(|_| pick(&mut rng, 1, 2) as usize).collect();
        let rhs_dil: Vec<usize> = (0..ns).map(|_| pick(&mut rng, 1, 2) as usize).collect();
        let padding: Vec<(i64, i64)> = (0..ns).map(|_| (pick(&mut rng, -1, 2), pick(&mut rng, -1, 2))).collect();
        let size = |labels: &[char], b: usize, f: usize, s: &[usize]| -> Vec<usize> {
            labels
                .iter()
                .map(|&ch| match ch {
                    'b' | 'i' => b,
                    'f' | 'o' => f,
                    d => s[d.to_digit(10).unwrap() as usize],
                })
                .collect()
        };
        let xs = size(&li, n, c, &sp);
        let kshape = size(&lk, i, o, &ks);
        let s: String =
            [li.iter().collect::<String>(), "_".into(), lk.iter().collect(), "->".into(), lo.iter().collect()].concat();
        let dims = pjc_tensor::parse_conv_dims(&s, ns + 2).unwrap();
        let Ok(ys) = pjc_tensor::conv_output_shape(
            &xs,
            &kshape,
            &dims,
            &strides,
            &padding,
            &lhs_dil,
            &rhs_dil,
            fgc as usize,
            bgc as usize,
        ) else {
            continue;
        };
        if ys.contains(&0) {
            continue;
        }
        let list = |v: &[usize]| format!("[{}]", v.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(","));
        let pads = format!("[{}]", padding.iter().map(|(a, b)| format!("[{a},{b}]")).collect::<Vec<_>>().join(","));
        let attrs = format!(
            "dims=\"{s}\", window_strides={}, padding={pads}, lhs_dilation={}, rhs_dilation={}, feature_group_count={fgc}, batch_group_count={bgc}",
            list(&strides),
            list(&lhs_dil),
            list(&rhs_dil)
        );
        conv(&type_str(&xs), &type_str(&kshape), &attrs, &type_str(&ys), 3000 + trial);
        done += 1;
    }
    assert_eq!(done, 24, "enough valid configurations");
}

#[test]
fn reduce_window_random_configurations() {
    let mut rng = Rng::new(77);
    let mut done = 0;
    for trial in 0..200 {
        if done == 24 {
            break;
        }
        let r = pick(&mut rng, 1, 2) as usize;
        let shape: Vec<usize> = (0..r).map(|_| pick(&mut rng, 2, 6) as usize).collect();
        let window: Vec<usize> = (0..r).map(|_| pick(&mut rng, 1, 3) as usize).collect();
        let strides: Vec<usize> = (0..r).map(|_| pick(&mut rng, 1, 3) as usize).collect();
        // Every window holds at least one element (no infinities from max/min).
        let padding: Vec<(i64, i64)> = (0..r)
            .map(|d| (pick(&mut rng, -1, window[d] as i64 - 1), pick(&mut rng, -1, window[d] as i64 - 1)))
            .collect();
        let Ok(ys) = pjc_tensor::window_output_shape(&shape, &window, &strides, &padding) else { continue };
        if ys.contains(&0) {
            continue;
        }
        let kind = ["sum", "max", "min"][done % 3];
        let list = |v: &[usize]| format!("[{}]", v.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(","));
        let pads = format!("[{}]", padding.iter().map(|(a, b)| format!("[{a},{b}]")).collect::<Vec<_>>().join(","));
        let body = format!(
            "  %y = reduce_window %x {{kind={kind}, window={}, strides={}, padding={pads}}}",
            list(&window),
            list(&strides)
        );
        check_op(&format!("%x: {}", type_str(&shape)), &body, &type_str(&ys), &[0], &[U(-2.0, 2.0)], 4000 + trial);
        // The same windows as select_and_scatter_add, linear in its source.
        let body = format!(
            "  %y = select_and_scatter_add %s, %x {{window={}, strides={}, padding={pads}}}",
            list(&window),
            list(&strides)
        );
        check_op(
            &format!("%s: {}, %x: {}", type_str(&ys), type_str(&shape)),
            &body,
            &type_str(&shape),
            &[0],
            &[U(-1.0, 1.0), U(-2.0, 2.0)],
            5000 + trial,
        );
        done += 1;
    }
    assert_eq!(done, 24, "enough valid configurations");
}
