//! `grad` through the version 2 ops (spec section 9): `scan` against the same
//! program with the loop unrolled by hand (both through pjc) and against
//! central finite differences in f64; `switch` against the gradient of the
//! branch taken; `sort`, `top_k` and `scatter` against finite differences and
//! hand-computed tie and duplicate cases; the errors for `while`, the other
//! scatter kinds and control flow inside a `spmd func`.

mod grad_util;
use grad_util::*;
use Init::*;

/// The gradients of `@f` in `src` with respect to `wrt` equal those of the
/// program with its scans unrolled by hand, on inputs drawn by `inits`.
fn same_as_unrolled(src: &str, wrt: &[usize], inits: &[Init], seed: u64) {
    let inputs = draw_inputs(src, "f", inits, seed);
    let got = grad_outputs(src, "f", wrt, &inputs);
    let unrolled = unroll_scans(src);
    assert!(!unrolled.contains("scan @"), "{unrolled}");
    let want = grad_outputs(&unrolled, "f", wrt, &inputs);
    assert_all_close(&want, &got, 1e-12, &format!("--- scan ---\n{src}\n--- unrolled ---\n{unrolled}"));
}

/// An RNN cell: the weight rides as a carry the step returns unchanged.
fn rnn(reverse: bool) -> String {
    format!(
        "func @step(%h: f64[3], %w: f64[3,3], %x: f64[3]) -> (f64[3], f64[3,3], f64[3]) {{
  %a = dot_general %w, %h {{lhs_contract=[1], rhs_contract=[0]}}
  %b = add %a, %x
  %t = tanh %b
  %y = mul %t, %x
  return %t, %w, %y
}}

func @f(%h0: f64[3], %w: f64[3,3], %xs: f64[4,3], %wt: f64[4,3]) -> (f64[]) {{
  %h, %w2, %ys = scan @step(%h0, %w, %xs) {{length=4, carries=2, reverse={reverse}}}
  %p = mul %ys, %wt
  %s = reduce %p {{dims=[0,1], kind=sum}}
  %hh = mul %h, %h
  %hs = reduce %hh {{dims=[0], kind=sum}}
  %l = add %s, %hs
  return %l
}}
"
    )
}

#[test]
fn scan_of_an_rnn_matches_the_unrolled_loop_and_finite_differences() {
    for (k, reverse) in [false, true].into_iter().enumerate() {
        let src = rnn(reverse);
        let inits = [U(-1.0, 1.0), U(-0.8, 0.8), U(-1.0, 1.0), U(-1.0, 1.0)];
        same_as_unrolled(&src, &[0, 1, 2, 3], &inits, 10 + k as u64);
        let (m, g) = check_grad(&src, "f", &[0, 1, 2], &inits, 20 + k as u64);
        assert!(g.iter().all(|g| g.iter().any(|&x| x != 0.0)), "{g:?}");
        // The bodies are new functions of the module.
        for name in ["step.fwd", "step.bwd"] {
            assert!(m.func_by_name(name).is_some(), "no @{name}:\n{}", pjc_front::print_module(&m));
        }
    }
}

#[test]
fn scan_stores_per_iteration_residuals_not_its_weights() {
    let m = expand(&with_grad_main(&rnn(false), "f", &[0, 1, 2]));
    let text = pjc_front::print_module(&m);
    let g = &m.funcs[m.func_by_name("f.grad").unwrap()];
    let fwd = g.body.iter().map(|&i| &g.insts[i]).find(|d| d.callee() == Some("step.fwd")).expect("the forward scan");
    let stacked: Vec<String> = fwd.results[3..].iter().map(|&r| g.values[r].ty.to_string()).collect();
    // Per iteration: tanh's output and the carry %h (the weight's cotangent
    // needs it); the weight itself is never stacked, and the scanned %x is
    // read again from %xs.
    assert_eq!(stacked, ["f64[4,3]", "f64[4,3]"], "{text}");
    assert!(!text.contains("f64[4,3,3]"), "a weight stacked per iteration:\n{text}");
}

#[test]
fn scan_carries_made_differentiable_by_the_step_and_integer_carries() {
    // %c starts as a constant but the step mixes the scanned %x into it (a
    // fixed point decides it is differentiated); %i counts iterations and
    // picks the row of the table (a loop-invariant carry read at a varying
    // index), whose cotangent accumulates over the iterations.
    let src = "func @step(%c: f64[2], %i: i32[], %table: f64[5,2], %x: f64[2]) -> (f64[2], i32[], f64[5,2], f64[]) {
  %zero = constant 0 : i32[]
  %row = dynamic_slice %table, %i, %zero {sizes=[1,2]}
  %r = reshape %row : f64[2]
  %m = mul %c, %r
  %s = sin %x
  %c2 = add %m, %s
  %one = constant 1 : i32[]
  %i2 = add %i, %one
  %y = reduce %c2 {dims=[0], kind=sum}
  return %c2, %i2, %table, %y
}

func @f(%table: f64[5,2], %xs: f64[3,2]) -> (f64[]) {
  %c0 = constant 0.5 : f64[2]
  %i0 = constant 1 : i32[]
  %c, %i, %t2, %ys = scan @step(%c0, %i0, %table, %xs) {length=3, carries=3}
  %a = reduce %ys {dims=[0], kind=sum}
  %b = reduce %c {dims=[0], kind=sum}
  %bb = mul %b, %b
  %l = add %a, %bb
  return %l
}
";
    let inits = [U(-1.0, 1.0), U(-1.0, 1.0)];
    same_as_unrolled(src, &[0, 1], &inits, 30);
    let (_, g) = check_grad(src, "f", &[0, 1], &inits, 31);
    // Rows 1, 2, 3 are read, rows 0 and 4 never.
    assert!(g[0][0] == 0.0 && g[0][1] == 0.0 && g[0][8] == 0.0 && g[0][9] == 0.0, "{:?}", g[0]);
    assert!(g[0][2..8].iter().all(|&x| x != 0.0), "{:?}", g[0]);
}

#[test]
fn scan_without_carries_or_without_scanned_operands() {
    let src = "func @step(%x: f64[3]) -> (f64[3]) {
  %y = sin %x
  return %y
}

func @acc(%h: f64[3]) -> (f64[3]) {
  %y = mul %h, %h
  %half = constant 0.5 : f64[3]
  %z = mul %y, %half
  return %z
}

func @f(%xs: f64[4,3], %h0: f64[3]) -> (f64[]) {
  %ys = scan @step(%xs) {length=4, carries=0}
  %h = scan @acc(%h0) {length=3, carries=1}
  %a = reduce %ys {dims=[0,1], kind=sum}
  %b = reduce %h {dims=[0], kind=sum}
  %l = add %a, %b
  return %l
}
";
    let inits = [U(-1.0, 1.0), U(0.5, 1.5)];
    same_as_unrolled(src, &[0, 1], &inits, 40);
    check_grad(src, "f", &[0, 1], &inits, 41);
}

#[test]
fn nested_scans_and_a_switch_inside_a_scan() {
    // The counter starts at -1, so the clamped index takes b0, b0, b1, b2 as
    // the reverse scan runs; the inner scan's residuals are stacked twice.
    let src = "func @b0(%x: f64[3], %w: f64[3]) -> (f64[3]) {
  %y = mul %x, %w
  %z = sin %y
  return %z
}

func @b1(%x: f64[3], %w: f64[3]) -> (f64[3]) {
  %y = exp %x
  return %y
}

func @b2(%x: f64[3], %w: f64[3]) -> (f64[3]) {
  return %w
}

func @inner(%c: f64[3], %x: f64[3]) -> (f64[3], f64[3]) {
  %m = mul %c, %x
  %t = tanh %m
  return %t, %t
}

func @step(%h: f64[3], %i: i32[], %w: f64[3], %xs: f64[2,3]) -> (f64[3], i32[], f64[3], f64[3]) {
  %s = switch %i, @b0, @b1, @b2(%h, %w)
  %h2, %ys = scan @inner(%s, %xs) {length=2, carries=1}
  %one = constant 1 : i32[]
  %j = add %i, %one
  %o = reduce %ys {dims=[0], kind=sum}
  return %h2, %j, %w, %o
}

func @f(%h0: f64[3], %w: f64[3], %xss: f64[4,2,3]) -> (f64[]) {
  %z = constant -1 : i32[]
  %h, %i, %w2, %ys = scan @step(%h0, %z, %w, %xss) {length=4, carries=3, reverse=true}
  %a = reduce %ys {dims=[0,1], kind=sum}
  %hh = mul %h, %h
  %b = reduce %hh {dims=[0], kind=sum}
  %l = add %a, %b
  return %l
}
";
    let inits = [U(-1.0, 1.0), U(-1.0, 1.0), U(-1.0, 1.0)];
    same_as_unrolled(src, &[0, 1, 2], &inits, 50);
    check_grad(src, "f", &[0, 1, 2], &inits, 51);
}

#[test]
fn switch_takes_the_gradient_of_the_branch_taken() {
    // Branches with different residuals (sin's operand, exp's result, none).
    let branches = "func @b0(%x: f64[4], %w: f64[4]) -> (f64[4], f64[]) {
  %y = mul %x, %w
  %z = sin %y
  %s = reduce %w {dims=[0], kind=sum}
  return %z, %s
}

func @b1(%x: f64[4], %w: f64[4]) -> (f64[4], f64[]) {
  %e = exp %x
  %ww = mul %w, %w
  %s = reduce %ww {dims=[0], kind=max}
  return %e, %s
}

func @b2(%x: f64[4], %w: f64[4]) -> (f64[4], f64[]) {
  %c = constant 2.0 : f64[]
  return %x, %c
}
";
    let loss = "  %p = mul %a, %wt\n  %q = reduce %p {dims=[0], kind=sum}\n  %bb = mul %b, %b\n  %l = add %q, %bb\n  return %l\n}\n";
    let src = format!(
        "{branches}\nfunc @f(%i: IDX, %x: f64[4], %w: f64[4], %wt: f64[4]) -> (f64[]) {{\n  %a, %b = switch %i, @b0, @b1, @b2(%x, %w)\n{loss}"
    );
    let inits = |i: f64| [V(vec![i]), U(-1.0, 1.0), U(-1.0, 1.0), U(-1.0, 1.0)];
    let cases: [(&str, f64, usize); 6] =
        [("i32[]", -2.0, 0), ("i32[]", 0.0, 0), ("i32[]", 1.0, 1), ("i32[]", 2.0, 2), ("i32[]", 7.0, 2), ("u32[]", 4e9, 2)];
    for (k, (idx_ty, i, branch)) in cases.into_iter().enumerate() {
        let src = src.replace("IDX", idx_ty);
        let (_, got) = check_grad(&src, "f", &[1, 2, 3], &inits(i), 60 + k as u64);
        let direct = format!(
            "{branches}\nfunc @f(%x: f64[4], %w: f64[4], %wt: f64[4]) -> (f64[]) {{\n  %a, %b = call @b{branch}(%x, %w)\n{loss}"
        );
        let inputs = draw_inputs(&src, "f", &inits(i), 60 + k as u64);
        let want = grad_outputs(&direct, "f", &[0, 1, 2], &inputs[1..]);
        for (j, w) in want[1..].iter().enumerate() {
            assert_eq!(&f64s(w), &got[j], "index {i}: gradient {j} is not branch {branch}'s");
        }
    }
}

/// `@f(%k, %v, %wk, %wv)`: the loss weighs both sorted results.
fn sort_loss(ty: &str, attrs: &str) -> String {
    let rank = ty.matches(',').count() + 1;
    let dims: Vec<String> = (0..rank).map(|d| d.to_string()).collect();
    let dims = dims.join(",");
    format!(
        "func @f(%k: {ty}, %v: {ty}, %wk: {ty}, %wv: {ty}) -> (f64[]) {{
  %k2, %v2 = sort %k, %v {{{attrs}}}
  %a = mul %k2, %wk
  %b = mul %v2, %wv
  %c = add %a, %b
  %l = reduce %c {{dims=[{dims}], kind=sum}}
  return %l
}}
"
    )
}

#[test]
fn sort_moves_the_cotangents_back_through_the_permutation() {
    let inits = [U(-1.0, 1.0), U(-1.0, 1.0), U(-1.0, 1.0), U(-1.0, 1.0)];
    check_grad(&sort_loss("f64[3,5]", "dim=1"), "f", &[0, 1], &inits, 70);
    check_grad(&sort_loss("f64[4,3]", "dim=0, descending=true"), "f", &[0, 1], &inits, 71);
    check_grad(&sort_loss("f64[6]", "dim=0, num_keys=2"), "f", &[0, 1], &inits, 72);
    // An integer key first, so equal keys are broken by the float one.
    let src = "func @f(%j: i32[6], %k: f64[6], %wk: f64[6]) -> (f64[]) {
  %j2, %k2 = sort %j, %k {dim=0, num_keys=2, descending=true}
  %a = mul %k2, %wk
  %l = reduce %a {dims=[0], kind=sum}
  return %l
}
";
    check_grad(src, "f", &[1], &[V(vec![1.0, 0.0, 1.0, 2.0, 0.0, 1.0]), U(-1.0, 1.0), U(-1.0, 1.0)], 73);
}

#[test]
fn sort_ties_keep_their_order_in_the_gradient() {
    let src = sort_loss("f64[5]", "dim=0");
    let keys = vec![2.0, 1.0, 2.0, 1.0, 3.0];
    let w = vec![10.0, 20.0, 30.0, 40.0, 50.0];
    let inputs = |k: &[f64]| {
        let t = |v: &[f64]| tensor(pjc_ir::DType::F64, vec![5], v);
        vec![t(k), t(&[0.5, 0.25, 0.125, 1.0, 2.0]), t(&w), t(&w)]
    };
    // Stable: the sorted order is positions 1, 3, 0, 2, 4.
    let out = grad_outputs(&src, "f", &[0, 1], &inputs(&keys));
    assert_eq!(f64s(&out[1]), [30.0, 10.0, 40.0, 20.0, 50.0]);
    assert_eq!(f64s(&out[2]), [30.0, 10.0, 40.0, 20.0, 50.0]);
    // Descending and stable: positions 4, 0, 2, 1, 3.
    let out = grad_outputs(&sort_loss("f64[5]", "dim=0, descending=true"), "f", &[1], &inputs(&keys));
    assert_eq!(f64s(&out[1]), [20.0, 40.0, 30.0, 50.0, 10.0]);
}

fn top_k_loss(ty: &str, k: usize) -> String {
    let vt = ty.rsplit_once(',').map_or(format!("f64[{k}]"), |(a, _)| format!("{a},{k}]"));
    let rank = ty.matches(',').count() + 1;
    let dims: Vec<String> = (0..rank).map(|d| d.to_string()).collect();
    format!(
        "func @f(%x: {ty}, %wt: {vt}) -> (f64[]) {{
  %v, %i = top_k %x {{k={k}}}
  %p = mul %v, %wt
  %l = reduce %p {{dims=[{}], kind=sum}}
  return %l
}}
",
        dims.join(",")
    )
}

#[test]
fn top_k_scatters_the_cotangent_to_the_chosen_positions() {
    check_grad(&top_k_loss("f64[7]", 3), "f", &[0], &[U(-1.0, 1.0), U(-1.0, 1.0)], 80);
    let (_, g) = check_grad(&top_k_loss("f64[2,3,6]", 2), "f", &[0], &[U(-1.0, 1.0), U(-1.0, 1.0)], 81);
    assert_eq!(g[0].iter().filter(|&&x| x != 0.0).count(), 12, "two chosen per row: {:?}", g[0]);
    // Ties: the lower index first.
    let src = top_k_loss("f64[5]", 2);
    let t = |v: &[f64], n| tensor(pjc_ir::DType::F64, vec![n], v);
    let out = grad_outputs(&src, "f", &[0], &[t(&[1.0, 3.0, 3.0, 2.0, 3.0], 5), t(&[10.0, 20.0], 2)]);
    assert_eq!(f64s(&out[1]), [0.0, 10.0, 20.0, 0.0, 0.0]);
}

#[test]
fn scatter_set_gives_the_cotangent_to_the_winning_update_only() {
    // Index 3 twice (the later update wins), -1 and 7 out of range (dropped).
    let src = "func @f(%b: f64[5,2], %i: i32[6], %u: f64[6,2], %wt: f64[5,2]) -> (f64[]) {
  %s = scatter %b, %i, %u {axis=0, kind=set}
  %p = mul %s, %wt
  %l = reduce %p {dims=[0,1], kind=sum}
  return %l
}
";
    let idx = V(vec![3.0, 1.0, 3.0, -1.0, 7.0, 0.0]);
    let (_, g) = check_grad(src, "f", &[0, 2], &[U(-1.0, 1.0), idx, U(-1.0, 1.0), U(0.5, 1.0)], 90);
    let rows = |v: &[f64]| -> Vec<bool> { v.chunks(2).map(|r| r.iter().all(|&x| x != 0.0)).collect() };
    // The base keeps rows 2 and 4 (nothing landed there).
    assert_eq!(rows(&g[0]), [false, false, true, false, true]);
    // Update 0 is overwritten by update 2; updates 3 and 4 are dropped.
    assert_eq!(rows(&g[1]), [false, true, true, false, false, true]);
    assert!(g[1].chunks(2).enumerate().all(|(k, r)| [1, 2, 5].contains(&k) || r == [0.0, 0.0]), "{:?}", g[1]);
    // Along axis 1 with a 2-D index: updates [2, 2, 2]; (0, 0) and (0, 1)
    // both go to column 1, the second wins; index 5 is dropped.
    let src = "func @f(%b: f64[2,4], %i: i32[2,2], %u: f64[2,2,2], %wt: f64[2,4]) -> (f64[]) {
  %s = scatter %b, %i, %u {axis=1, kind=set}
  %p = mul %s, %wt
  %l = reduce %p {dims=[0,1], kind=sum}
  return %l
}
";
    let idx = V(vec![1.0, 1.0, 0.0, 5.0]);
    let (_, g) = check_grad(src, "f", &[0, 2], &[U(-1.0, 1.0), idx, U(-1.0, 1.0), U(0.5, 1.0)], 91);
    let nonzero: Vec<bool> = g[1].iter().map(|&x| x != 0.0).collect();
    assert_eq!(nonzero, [false, true, true, false, false, true, true, false]);
}

#[test]
fn scatter_add_kind_and_the_kinds_without_a_rule() {
    let src = "func @f(%b: f64[4], %i: i32[3], %u: f64[3]) -> (f64[]) {
  %s = scatter %b, %i, %u {axis=0, kind=KIND}
  %q = mul %s, %s
  %l = reduce %q {dims=[0], kind=sum}
  return %l
}
";
    check_grad(&src.replace("KIND", "add"), "f", &[0, 2], &[U(-1.0, 1.0), V(vec![2.0, 0.0, 2.0]), U(-1.0, 1.0)], 95);
    for kind in ["mul", "max", "min"] {
        let e = expand_err(&with_grad_main(&src.replace("KIND", kind), "f", &[0]));
        assert!(e.starts_with("unsupported: gradient of 'scatter' (computing %s in @f)"), "{e}");
        assert!(e.contains(&format!("kind={kind}")), "{e}");
    }
}

const WHILE: &str = "func @cond(%i: i32[], %x: f64[3]) -> (pred[]) {
  %n = constant 3 : i32[]
  %p = compare %i, %n {dir=lt}
  return %p
}

func @body(%i: i32[], %x: f64[3]) -> (i32[], f64[3]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %y = sin %x
  return %j, %y
}
";

#[test]
fn grad_through_while_is_an_error_naming_it() {
    let src = format!(
        "{WHILE}\nfunc @f(%x: f64[3]) -> (f64[]) {{\n  %zero = constant 0 : i32[]\n  %i, %y = while @cond, @body(%zero, %x)\n  %l = reduce %y {{dims=[0], kind=sum}}\n  return %l\n}}\n"
    );
    let e = expand_err(&with_grad_main(&src, "f", &[0]));
    assert!(e.starts_with("unsupported: grad through 'while' is not defined: use scan"), "{e}");
    assert!(e.contains("%i in @f"), "{e}");
    // Inside a scan's step too.
    let src = format!(
        "{WHILE}\nfunc @step(%h: f64[3]) -> (f64[3]) {{\n  %zero = constant 0 : i32[]\n  %i, %y = while @cond, @body(%zero, %h)\n  return %y\n}}\n\nfunc @f(%x: f64[3]) -> (f64[]) {{\n  %h = scan @step(%x) {{length=2, carries=1}}\n  %l = reduce %h {{dims=[0], kind=sum}}\n  return %l\n}}\n"
    );
    let e = expand_err(&with_grad_main(&src, "f", &[0]));
    assert!(e.starts_with("unsupported: grad through 'while' is not defined: use scan"), "{e}");
}

#[test]
fn while_off_the_gradient_path_is_fine() {
    // The loop computes an integer (how many steps) and a value the loss
    // does not read; the gradient flows around it.
    let src = format!(
        "{WHILE}\nfunc @f(%x: f64[3], %w: f64[3]) -> (f64[]) {{
  %zero = constant 0 : i32[]
  %i, %y = while @cond, @body(%zero, %x)
  %c = convert %i : f64[]
  %cb = broadcast %c : f64[3]
  %p = mul %x, %w
  %q = mul %p, %cb
  %l = reduce %q {{dims=[0], kind=sum}}
  return %l
}}
"
    );
    let (_, g) = check_grad(&src, "f", &[0, 1], &[U(-1.0, 1.0), U(-1.0, 1.0)], 100);
    assert!(g[0].iter().all(|&x| x != 0.0));
}

#[test]
fn scan_and_switch_inside_a_spmd_func() {
    // Per device: %h and %x are this device's shard, %w is replicated (its
    // gradient is summed over the axis) and the step all-reduces. The switch
    // index is the same on every device.
    let src = "mesh [data=2]

spmd func @b0(%t: f64[4], %w: f64[4]) -> (f64[4]) {
  %y = mul %t, %w
  return %y
}

spmd func @b1(%t: f64[4], %w: f64[4]) -> (f64[4]) {
  %y = sin %t
  return %y
}

spmd func @step(%h: f64[4], %w: f64[4], %i: i32[], %x: f64[4]) -> (f64[4], f64[4], i32[], f64[]) {
  %a = mul %h, %w
  %b = add %a, %x
  %t = tanh %b
  %u = switch %i, @b0, @b1(%t, %w)
  %s = reduce %u {dims=[0], kind=sum}
  %tot = all_reduce %s {axes=[data], kind=sum}
  %one = constant 1 : i32[]
  %j = add %i, %one
  return %u, %w, %j, %tot
}

spmd func @f(%h0: f64[4] on [data], %w: f64[4], %xs: f64[3,4] on [_, data]) -> (f64[]) {
  %z = constant 0 : i32[]
  %h, %w2, %i, %ys = scan @step(%h0, %w, %z, %xs) {length=3, carries=3}
  %a = reduce %ys {dims=[0], kind=sum}
  %hh = mul %h, %h
  %b = reduce %hh {dims=[0], kind=sum}
  %bt = all_reduce %b {axes=[data], kind=sum}
  %l = add %a, %bt
  return %l
}
";
    let inits = [U(-1.0, 1.0), U(-1.0, 1.0), U(-1.0, 1.0)];
    same_as_unrolled(src, &[0, 1, 2], &inits, 110);
    let (_, g) = check_grad(src, "f", &[0, 1, 2], &inits, 111);
    assert!(g.iter().all(|g| g.iter().all(|&x| x != 0.0)), "{g:?}");
    // Called from a func (shard_map): differentiated by the generated @f.vjp.
    let wrapped = format!(
        "{src}\nfunc @g(%h0: f64[8], %w: f64[4], %xs: f64[3,8]) -> (f64[]) {{\n  %l = call @f(%h0, %w, %xs) : f64[]\n  %l2 = mul %l, %l\n  return %l2\n}}\n"
    );
    let (m, _) = check_grad(&wrapped, "g", &[0, 1, 2], &inits, 112);
    assert!(m.func_by_name("f.vjp").is_some());
}

#[test]
fn second_order_through_a_scan() {
    // The outer grad differentiates @f.grad, whose scans run @step.fwd and
    // @step.bwd: those bodies are split in turn.
    let src = format!(
        "{}\nfunc @g(%h0: f64[3], %w: f64[3,3], %xs: f64[4,3], %wt: f64[4,3]) -> (f64[]) {{
  %l, %gw = grad @f(%h0, %w, %xs, %wt) {{wrt=[1]}}
  %sq = mul %gw, %gw
  %s = reduce %sq {{dims=[0,1], kind=sum}}
  return %s
}}
",
        rnn(true)
    );
    let inits = [U(-1.0, 1.0), U(-0.8, 0.8), U(-1.0, 1.0), U(-1.0, 1.0)];
    let (m, _) = check_grad_tol(&src, "g", &[0, 1, 2], &inits, 120, 1e-5, 1e-5);
    assert!(m.func_by_name("step.bwd.fwd").is_some(), "{}", pjc_front::print_module(&m));
}
