//! `vmap` of the version 2 ops (spec section 9): `scan`, `switch` (unbatched
//! and batched index), `while` (unbatched and batched predicate), `sort`,
//! `top_k` and `scatter` of every kind, checked against the interpreter's
//! loop of calls with the harness of `vmap_util` (generated inputs have many
//! ties and out-of-range integers, so sort stability, top_k ties, switch
//! clamping and dropped or duplicate scatter indices are exercised); and
//! their composition with `grad`.

mod vmap_util;
use pjc_ir::Opcode;
use vmap_util::*;

const STEP: &str = "func @step(%h: f32[3], %w: f32[3], %x: f32[3]) -> (f32[3], f32[3], f32[3]) {
  %a = mul %h, %w
  %b = add %a, %x
  %t = tanh %b
  return %t, %w, %a
}
";

#[test]
fn scan_with_batched_and_unbatched_carries_and_scanned_operands() {
    for reverse in [false, true] {
        let f = format!(
            "{STEP}\nfunc @f(%h0: f32[3], %w: f32[3], %xs: f32[4,3]) -> (f32[3], f32[3], f32[4,3]) {{
  %h, %w2, %ys = scan @step(%h0, %w, %xs) {{length=4, carries=2, reverse={reverse}}}
  return %h, %w2, %ys
}}
"
        );
        cases(
            &f,
            "f",
            3,
            &[
                "[0, none, none] -> [0, 0, 0]",
                // %h starts unbatched; the batched %x makes it batched.
                "[none, none, 1] -> [1, 0, 2]",
                "[none, 0, none] -> [0, 1, 1]",
                "[1, 0, 2] -> [1, 0, 0]",
                "[none, none, 0] -> [0, 0, 1]",
            ],
        );
    }
}

#[test]
fn scan_outputs_that_stay_unbatched_and_scans_without_carries_or_operands() {
    // %a depends on the unbatched weight only: the stacked output stays
    // unbatched inside and is broadcast at the end.
    let f = "func @step(%h: f32[3], %w: f32[3], %x: f32[3]) -> (f32[3], f32[3], f32[3]) {
  %a = mul %w, %w
  %b = add %h, %x
  return %b, %w, %a
}

func @sq(%x: f32[3]) -> (f32[3]) {
  %y = mul %x, %x
  return %y
}

func @half(%h: f32[3]) -> (f32[3]) {
  %c = constant 0.5 : f32[3]
  %y = mul %h, %c
  return %y
}

func @f(%h0: f32[3], %w: f32[3], %xs: f32[4,3]) -> (f32[3], f32[4,3], f32[4,3], f32[3]) {
  %h, %w2, %ys = scan @step(%h0, %w, %xs) {length=4, carries=2}
  %zs = scan @sq(%xs) {length=4, carries=0, reverse=true}
  %g = scan @half(%h0) {length=3, carries=1}
  return %h, %ys, %zs, %g
}
";
    cases(f, "f", 2, &["[0, none, none] -> [0, 0, 0, 0]", "[none, none, 2] -> [0, 1, 2, 0]", "[0, none, 1] -> [0, 2, 1, 0]"]);
}

const BRANCHES: &str = "func @b0(%x: f32[3], %y: f32[3]) -> (f32[3], f32[]) {
  %s = add %x, %y
  %r = reduce %s {dims=[0], kind=sum}
  return %s, %r
}

func @b1(%x: f32[3], %y: f32[3]) -> (f32[3], f32[]) {
  %n = neg %x
  %c = constant 1.5 : f32[]
  return %n, %c
}

func @b2(%x: f32[3], %y: f32[3]) -> (f32[3], f32[]) {
  %c = constant -2.0 : f32[]
  return %y, %c
}
";

#[test]
fn switch_with_an_unbatched_and_a_batched_index() {
    for idx in ["i32", "u8"] {
        let f = format!(
            "{BRANCHES}\nfunc @f(%i: {idx}[], %x: f32[3], %y: f32[3]) -> (f32[3], f32[]) {{\n  %a, %b = switch %i, @b0, @b1, @b2(%x, %y)\n  return %a, %b\n}}\n"
        );
        cases(
            &f,
            "f",
            4,
            &[
                // Unbatched index: a switch over batched branches (b0's second
                // result is batched, so every branch's is).
                "[none, 0, none] -> [0, 0]",
                "[none, none, 1] -> [1, 0]",
                // Batched index (with values out of range): every branch runs.
                "[0, none, none] -> [0, 0]",
                "[0, 0, 1] -> [1, 0]",
            ],
        );
    }
    // One branch.
    let f = "func @only(%x: f32[3]) -> (f32[3]) {\n  %y = neg %x\n  return %y\n}\n\nfunc @f(%i: i32[], %x: f32[3]) -> (f32[3]) {\n  %a = switch %i, @only(%x)\n  return %a\n}\n";
    cases(f, "f", 3, &["[0, 0] -> [0]", "[none, 0] -> [1]", "[0, none] -> [0]"]);
}

const LOOP: &str = "func @cond(%i: i32[], %n: i32[], %acc: f32[3], %x: f32[3]) -> (pred[]) {
  %p = compare %i, %n {dir=lt}
  return %p
}

func @body(%i: i32[], %n: i32[], %acc: f32[3], %x: f32[3]) -> (i32[], i32[], f32[3], f32[3]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %s = add %acc, %x
  %h = constant 0.5 : f32[3]
  %y = mul %x, %h
  return %j, %n, %s, %y
}
";

#[test]
fn while_with_an_unbatched_and_a_batched_predicate() {
    // %acc starts unbatched and becomes batched through the body when %x is.
    let f = format!(
        "{LOOP}\nfunc @f(%n: i32[], %x: f32[3]) -> (i32[], f32[3], f32[3]) {{
  %z = constant 0 : i32[]
  %a = constant 0.0 : f32[3]
  %i, %n2, %acc, %y = while @cond, @body(%z, %n, %a, %x)
  return %i, %acc, %y
}}
"
    );
    cases(
        &f,
        "f",
        4,
        &[
            "[none, 0] -> [0, 0, 0]",
            // Each example has its own trip count (some zero: n <= 0).
            "[0, none] -> [0, 0, 1]",
            "[0, 1] -> [0, 1, 0]",
        ],
    );
    let m = check(&format!(
        "{f}\nfunc @main(%n: i32[], %x: f32[4,3]) -> (i32[4], f32[4,3], f32[4,3]) {{
  %i, %acc, %y = vmap @f(%n, %x) {{in_dims=[none, 0], out_dims=[0, 0, 0]}}
  return %i, %acc, %y
}}
"
    ));
    // An unbatched predicate keeps one loop over batched data.
    let cond = &m.funcs[m.func_by_name("cond.vmap").unwrap()];
    assert!(cond.body.iter().all(|&i| cond.insts[i].op != Opcode::Reduce), "{}", pjc_front::print_module(&m));
}

#[test]
fn sort_of_several_operands_with_ties() {
    let f = "func @f(%k: f32[4,3], %v: i32[4,3], %j: f32[4,3]) -> (f32[4,3], i32[4,3], f32[4,3]) {
  %a, %b, %c = sort %k, %v, %j {dim=1, num_keys=2, descending=true}
  return %a, %b, %c
}
";
    cases(f, "f", 3, &["[0, none, 0] -> [0, 0, 0]", "[1, 1, none] -> [2, 0, 1]", "[2, none, none] -> [1, 1, 1]"]);
    let f = "func @f(%k: i32[5], %v: f32[5]) -> (i32[5], f32[5]) {\n  %a, %b = sort %k, %v {dim=0}\n  return %a, %b\n}\n";
    cases(f, "f", 4, &["[0, none] -> [0, 0]", "[none, 1] -> [1, 0]", "[1, 0] -> [0, 1]"]);
}

#[test]
fn top_k_with_the_batch_dimension_anywhere() {
    let f = "func @f(%x: f32[3,5]) -> (f32[3,2], i32[3,2]) {\n  %v, %i = top_k %x {k=2}\n  return %v, %i\n}\n";
    cases(f, "f", 4, &["[0] -> [0, 0]", "[1] -> [1, 2]", "[2] -> [2, 1]"]);
    let f = "func @f(%x: i32[6]) -> (i32[3], i32[3]) {\n  %v, %i = top_k %x {k=3}\n  return %v, %i\n}\n";
    cases(f, "f", 5, &["[0] -> [0, 0]", "[1] -> [1, 1]"]);
}

#[test]
fn scatter_of_every_kind() {
    let mut body = String::new();
    let mut rets = vec![];
    for kind in ["set", "add", "mul", "max", "min"] {
        body.push_str(&format!("  %{kind} = scatter %b, %i, %u {{axis=0, kind={kind}}}\n"));
        rets.push(format!("%{kind}"));
    }
    let f = format!(
        "func @f(%b: f32[4,3], %i: i32[5], %u: f32[5,3]) -> (f32[4,3], f32[4,3], f32[4,3], f32[4,3], f32[4,3]) {{\n{body}  return {}\n}}\n",
        rets.join(", ")
    );
    cases(
        &f,
        "f",
        3,
        &[
            "[0, none, none] -> [0, 0, 0, 0, 0]",
            "[none, 0, none] -> [0, 1, 2, 0, 1]",
            "[none, none, 1] -> [1, 1, 1, 1, 1]",
            "[1, 0, 2] -> [0, 0, 0, 0, 0]",
            "[none, 0, 0] -> [2, 2, 2, 2, 2]",
        ],
    );
    // Along axis 1 with a 2-D index, and on pred (set, or, and).
    let f = "func @f(%b: f32[2,4], %i: i32[2,3], %u: f32[2,2,3], %p: pred[2,4], %q: pred[2,2,3]) -> (f32[2,4], pred[2,4], pred[2,4]) {
  %s = scatter %b, %i, %u {axis=1, kind=set}
  %o = scatter %p, %i, %q {axis=1, kind=max}
  %a = scatter %p, %i, %q {axis=1, kind=min}
  return %s, %o, %a
}
";
    cases(f, "f", 3, &["[0, none, none, 0, none] -> [0, 0, 0]", "[none, 0, none, none, 1] -> [1, 2, 0]", "[2, 1, 0, 1, 3] -> [0, 1, 2]"]);
}

#[test]
fn control_flow_nested_in_a_batched_scan() {
    // The switch index is scanned: batched inside the step when %ks is, so
    // the batched step runs every branch; the while inside counts per carry.
    let f = format!(
        "{BRANCHES}{LOOP}
func @step(%h: f32[3], %k: i32[], %x: f32[3]) -> (f32[3], f32[]) {{
  %a, %b = switch %k, @b0, @b1, @b2(%h, %x)
  %z = constant 0 : i32[]
  %n = constant 2 : i32[]
  %i, %n2, %acc, %y = while @cond, @body(%z, %n, %a, %x)
  return %acc, %b
}}

func @f(%h0: f32[3], %ks: i32[4], %xs: f32[4,3]) -> (f32[3], f32[4]) {{
  %h, %bs = scan @step(%h0, %ks, %xs) {{length=4, carries=1}}
  return %h, %bs
}}
"
    );
    cases(&f, "f", 3, &["[none, 1, none] -> [0, 0]", "[0, none, none] -> [0, 1]", "[none, none, 2] -> [1, 0]", "[0, 0, 1] -> [0, 0]"]);
}

const LOSS: &str = "func @step(%h: f32[3], %w: f32[3], %x: f32[3]) -> (f32[3], f32[3], f32[3]) {
  %a = mul %h, %w
  %b = add %a, %x
  %t = tanh %b
  return %t, %w, %t
}

func @loss(%w: f32[3], %xs: f32[4,3]) -> (f32[]) {
  %h0 = constant 0.25 : f32[3]
  %h, %w2, %ys = scan @step(%h0, %w, %xs) {length=4, carries=2}
  %s = reduce %ys {dims=[0,1], kind=sum}
  return %s
}
";

#[test]
fn per_example_gradients_through_a_scan() {
    let src = format!(
        "{LOSS}
func @pe(%w: f32[3], %xs: f32[4,3]) -> (f32[], f32[3], f32[4,3]) {{
  %l, %gw, %gx = grad @loss(%w, %xs) {{wrt=[0, 1]}}
  return %l, %gw, %gx
}}

func @main(%w: f32[3], %xs: f32[5,4,3]) -> (f32[5], f32[5,3], f32[5,4,3]) {{
  %l, %gw, %gx = vmap @pe(%w, %xs) {{in_dims=[none, 0], out_dims=[0, 0, 0]}}
  return %l, %gw, %gx
}}
"
    );
    let m = load(&src);
    let xs = inputs(&m);
    // Reference: the grad expanded, the vmap left to the interpreter.
    let mut r = m.clone();
    expand_grads(&mut r);
    let want = run(&load(&pjc_front::print_module(&r)), &xs);
    let mut full = m.clone();
    pjc_transforms::expand(&mut full).unwrap_or_else(|e| panic!("expand: {}", e.msg));
    check_expanded(&full, &xs, &want, "expand", &src);
}

#[test]
fn gradient_of_a_batched_scan() {
    // grad of a function that vmaps the loss: the same as the grad of the
    // vmap unrolled by hand into one call per example.
    let src = format!(
        "{LOSS}
func @total(%w: f32[3], %xs: f32[5,4,3]) -> (f32[]) {{
  %ls = vmap @loss(%w, %xs) {{in_dims=[none, 0], out_dims=[0]}}
  %t = reduce %ls {{dims=[0], kind=sum}}
  return %t
}}

func @main(%w: f32[3], %xs: f32[5,4,3]) -> (f32[], f32[3], f32[5,4,3]) {{
  %l, %gw, %gx = grad @total(%w, %xs) {{wrt=[0, 1]}}
  return %l, %gw, %gx
}}
"
    );
    let m = load(&src);
    let xs = inputs(&m);
    let mut r = m.clone();
    unroll_vmaps(&mut r);
    let mut r = load(&pjc_front::print_module(&r));
    pjc_transforms::expand(&mut r).unwrap_or_else(|e| panic!("expand of the unrolled reference: {}", e.msg));
    let want = run(&r, &xs);
    let mut full = m.clone();
    pjc_transforms::expand(&mut full).unwrap_or_else(|e| panic!("expand: {}", e.msg));
    check_expanded(&full, &xs, &want, "expand", &src);
}

const SPMD: &str = "mesh [x=2]

spmd func @step(%h: f32[4], %x: f32[4]) -> (f32[4], f32[]) {
  %a = mul %h, %x
  %s = reduce %a {dims=[0], kind=sum}
  %t = all_reduce %s {axes=[x], kind=sum}
  %c = add %h, %x
  return %c, %t
}

spmd func @cond(%i: i32[], %n: i32[], %v: f32[4]) -> (pred[]) {
  %p = compare %i, %n {dir=lt}
  return %p
}

spmd func @body(%i: i32[], %n: i32[], %v: f32[4]) -> (i32[], i32[], f32[4]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %m = all_reduce %v {axes=[x], kind=max}
  %w = add %v, %m
  return %j, %n, %w
}

spmd func @f(%h: f32[4] on [x], %xs: f32[3,4] on [_, x], %n: i32[]) -> (f32[4] on [x], f32[3], f32[4] on [x]) {
  %h2, %ts = scan @step(%h, %xs) {length=3, carries=1}
  %z = constant 0 : i32[]
  %i, %n2, %v = while @cond, @body(%z, %n, %h)
  return %h2, %ts, %v
}
";

#[test]
fn control_flow_with_collectives_in_a_batched_spmd_func() {
    // A batched shard_map (the reference: the interpreter's loop of calls),
    // with a per-example trip count in one case.
    cases(SPMD, "f", 2, &["[0, 1, none] -> [0, 0, 0]", "[none, 0, 0] -> [1, 1, 0]", "[1, 2, 0] -> [0, 1, 1]"]);
    // vmap inside a spmd func (the reference: the vmap unrolled by hand).
    let src = format!(
        "{SPMD}
spmd func @main(%h: f32[2,4] on [_, x], %xs: f32[3,2,4] on [_, _, x], %n: i32[2]) -> (f32[2,4] on [_, x], f32[2,3] on [x, _], f32[2,4] on [_, x]) {{
  %a, %b, %c = vmap @f(%h, %xs, %n) {{in_dims=[0, 1, 0], out_dims=[0, 0, 0]}}
  return %a, %b, %c
}}
"
    );
    check(&src);
}
