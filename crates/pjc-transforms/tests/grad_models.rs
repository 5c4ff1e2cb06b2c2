//! `grad` on whole programs: a 2-layer MLP against its hand-written backward
//! pass, a small CNN trained by SGD in the interpreter, spmd funcs with
//! collectives against finite differences and against their global-view
//! equivalents, and higher-order gradients.

mod grad_util;
use grad_util::*;
use Init::*;
use pjc_ir::DType;
use pjc_tensor::compare::{close_values, Tolerance};

/// Two f64 computations of one gradient: within 1e-12·(1 + |want|).
const TOL: Tolerance = Tolerance::rel(1e-12).with_atol(1e-12);

const MLP_FORWARD: &str = "
  %xw = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f64[5,8]
  %bb1 = broadcast %b1 {dims=[1]} : f64[5,8]
  %z1 = add %xw, %bb1
  %h = tanh %z1
  %hw = dot_general %h, %w2 {lhs_contract=[1], rhs_contract=[0]} : f64[5,3]
  %bb2 = broadcast %b2 {dims=[1]} : f64[5,3]
  %z = add %hw, %bb2
  %m = reduce %z {dims=[1], kind=max}
  %mb = broadcast %m {dims=[0]} : f64[5,3]
  %zs = sub %z, %mb
  %e = exp %zs
  %se = reduce %e {dims=[1], kind=sum}
  %lse = log %se
  %lseb = broadcast %lse {dims=[0]} : f64[5,3]
  %lp = sub %zs, %lseb
  %yl = mul %y, %lp
  %t = reduce %yl {dims=[0,1], kind=sum}
  %n = constant -0.2 : f64[]
  %l = mul %t, %n
";

const MLP_PARAMS: &str = "%w1: f64[4,8], %b1: f64[8], %w2: f64[8,3], %b2: f64[3], %x: f64[5,4], %y: f64[5,3]";

#[test]
fn mlp_grad_equals_the_hand_written_backward_pass() {
    let src = format!(
        "func @loss({MLP_PARAMS}) -> (loss: f64[]) {{{MLP_FORWARD}  return %l\n}}\n
func @manual({MLP_PARAMS}) -> (f64[], f64[4,8], f64[8], f64[8,3], f64[3]) {{{MLP_FORWARD}
  %nb = broadcast %n : f64[5,3]
  %dlp = mul %nb, %y
  %sdlp = reduce %dlp {{dims=[1], kind=sum}}
  %sdlpb = broadcast %sdlp {{dims=[0]}} : f64[5,3]
  %seb = broadcast %se {{dims=[0]}} : f64[5,3]
  %p = div %e, %seb
  %psd = mul %p, %sdlpb
  %dz = sub %dlp, %psd
  %db2 = reduce %dz {{dims=[0], kind=sum}}
  %dw2 = dot_general %h, %dz {{lhs_contract=[0], rhs_contract=[0]}} : f64[8,3]
  %dh = dot_general %dz, %w2 {{lhs_contract=[1], rhs_contract=[1]}} : f64[5,8]
  %hh = mul %h, %h
  %one = constant 1.0 : f64[5,8]
  %dt = sub %one, %hh
  %dz1 = mul %dh, %dt
  %db1 = reduce %dz1 {{dims=[0], kind=sum}}
  %dw1 = dot_general %x, %dz1 {{lhs_contract=[0], rhs_contract=[0]}} : f64[4,8]
  return %l, %dw1, %db1, %dw2, %db2
}}
"
    );
    let m = expand(&with_grad_main(&src, "loss", &[0, 1, 2, 3]));
    let mut rng = Rng::new(7);
    let types = param_types(&m, "loss");
    let mut inputs: Vec<_> = types[..5].iter().map(|t| fill(t, &U(-1.0, 1.0), &mut rng)).collect();
    // One-hot labels.
    let mut y = vec![0.0; 15];
    for r in 0..5 {
        y[r * 3 + (rng.next_u64() % 3) as usize] = 1.0;
    }
    inputs.push(tensor(pjc_ir::DType::F64, vec![5, 3], &y));
    let auto = run(&m, "grad_main", inputs.clone());
    let manual = run(&m, "manual", inputs);
    for (k, (a, b)) in auto.iter().zip(&manual).enumerate() {
        let (a, b) = (f64s(a), f64s(b));
        close_values(&b, &a, DType::F64, TOL).unwrap_or_else(|e| panic!("output {k}, grad vs manual: {e}"));
        assert!(b.iter().any(|&v| v != 0.0));
    }
}

const CNN: &str = "
func @loss(%k: f64[3,3,1,4], %w: f64[36,3], %b: f64[3], %x: f64[8,6,6,1], %y: f64[8,3]) -> (loss: f64[]) {
  %c = convolution %x, %k {dims=\"b01f_01io->b01f\", padding=[[1,1],[1,1]]} : f64[8,6,6,4]
  %zero = constant 0.0 : f64[8,6,6,4]
  %r = max %c, %zero
  %p = reduce_window %r {kind=max, window=[1,2,2,1], strides=[1,2,2,1]} : f64[8,3,3,4]
  %f = reshape %p : f64[8,36]
  %o = dot_general %f, %w {lhs_contract=[1], rhs_contract=[0]} : f64[8,3]
  %bb = broadcast %b {dims=[1]} : f64[8,3]
  %z = add %o, %bb
  %m = reduce %z {dims=[1], kind=max}
  %mb = broadcast %m {dims=[0]} : f64[8,3]
  %zs = sub %z, %mb
  %e = exp %zs
  %se = reduce %e {dims=[1], kind=sum}
  %lse = log %se
  %lseb = broadcast %lse {dims=[0]} : f64[8,3]
  %lp = sub %zs, %lseb
  %yl = mul %y, %lp
  %t = reduce %yl {dims=[0,1], kind=sum}
  %n = constant -0.125 : f64[]
  %l = mul %t, %n
  return %l
}

func @step(%k: f64[3,3,1,4], %w: f64[36,3], %b: f64[3], %x: f64[8,6,6,1], %y: f64[8,3])
    -> (loss: f64[], k: f64[3,3,1,4], w: f64[36,3], b: f64[3]) {
  %l, %gk, %gw, %gb = grad @loss(%k, %w, %b, %x, %y) {wrt=[0,1,2]}
  %lrk = constant 0.3 : f64[3,3,1,4]
  %lrw = constant 0.3 : f64[36,3]
  %lrb = constant 0.3 : f64[3]
  %sk = mul %gk, %lrk
  %sw = mul %gw, %lrw
  %sb = mul %gb, %lrb
  %k2 = sub %k, %sk
  %w2 = sub %w, %sw
  %b2 = sub %b, %sb
  return %l, %k2, %w2, %b2
}
";

#[test]
fn cnn_loss_gradient_matches_finite_differences() {
    let mut rng = Rng::new(11);
    let mut y = vec![0.0; 24];
    for r in 0..8 {
        y[r * 3 + (rng.next_u64() % 3) as usize] = 1.0;
    }
    check_grad(CNN, "loss", &[0, 1, 2], &[U(-0.5, 0.5), U(-0.3, 0.3), U(-0.1, 0.1), U(-1.0, 1.0), V(y)], 12);
}

#[test]
fn cnn_sgd_training_reduces_the_loss() {
    let m = expand(CNN);
    let types = param_types(&m, "step");
    let mut rng = Rng::new(13);
    let mut params: Vec<_> =
        [U(-0.5, 0.5), U(-0.3, 0.3), U(-0.1, 0.1)].iter().zip(&types).map(|(i, t)| fill(t, i, &mut rng)).collect();
    let x = fill(&types[3], &U(-1.0, 1.0), &mut rng);
    let mut y = vec![0.0; 24];
    for r in 0..8 {
        y[r * 3 + (rng.next_u64() % 3) as usize] = 1.0;
    }
    let y = tensor(pjc_ir::DType::F64, vec![8, 3], &y);
    let mut losses = vec![];
    for _ in 0..20 {
        let mut inputs = params.clone();
        inputs.push(x.clone());
        inputs.push(y.clone());
        let out = run(&m, "step", inputs);
        losses.push(f64s(&out[0])[0]);
        params = out[1..].to_vec();
    }
    assert!(losses.iter().all(|l| l.is_finite()), "{losses:?}");
    assert!(losses[19] < 0.7 * losses[0], "the loss does not fall: {losses:?}");
    let rises = losses.windows(2).filter(|w| w[1] > w[0]).count();
    assert!(rises <= 3, "the loss rises too often: {losses:?}");
}

// ---- spmd funcs ------------------------------------------------------------

const SPMD_LOSS: &str = "mesh [data=2, model=2]
spmd func @sl(%w: f64[4,6] on [_, model], %x: f64[3,4] on [data, _], %c: f64[12]) -> (f64[]) {
  %h = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]}
  %t = tanh %h
  %tg = all_gather %t {axes=[model], dim=1}
  %cb = broadcast %c {dims=[1]} : f64[3,12]
  %p = mul %tg, %cb
  %s = reduce %p {dims=[0,1], kind=sum}
  %l = all_reduce %s {axes=[data], kind=sum}
  return %l
}

func @gl(%w: f64[4,12], %x: f64[6,4], %c: f64[12]) -> (f64[]) {
  %h = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]}
  %t = tanh %h
  %cb = broadcast %c {dims=[1]} : f64[6,12]
  %p = mul %t, %cb
  %l = reduce %p {dims=[0,1], kind=sum}
  return %l
}

func @gl_call(%w: f64[4,12], %x: f64[6,4], %c: f64[12]) -> (f64[]) {
  %l = call @sl(%w, %x, %c) : f64[]
  %sq = mul %l, %l
  return %sq
}

func @gl_sq(%w: f64[4,12], %x: f64[6,4], %c: f64[12]) -> (f64[]) {
  %l = call @gl(%w, %x, %c) : f64[]
  %sq = mul %l, %l
  return %sq
}

func @main(%w: f64[4,12], %x: f64[6,4], %c: f64[12])
    -> (f64[], f64[4,12], f64[6,4], f64[12], f64[], f64[4,12], f64[6,4], f64[12],
        f64[], f64[4,12], f64[6,4], f64[12], f64[], f64[4,12], f64[6,4], f64[12]) {
  %a, %a0, %a1, %a2 = grad @sl(%w, %x, %c) {wrt=[0,1,2]}
  %b, %b0, %b1, %b2 = grad @gl(%w, %x, %c) {wrt=[0,1,2]}
  %e, %e0, %e1, %e2 = grad @gl_call(%w, %x, %c) {wrt=[0,1,2]}
  %f, %f0, %f1, %f2 = grad @gl_sq(%w, %x, %c) {wrt=[0,1,2]}
  return %a, %a0, %a1, %a2, %b, %b0, %b1, %b2, %e, %e0, %e1, %e2, %f, %f0, %f1, %f2
}
";

#[test]
fn spmd_gradients_equal_the_global_view_ones() {
    let m = expand(SPMD_LOSS);
    let text = pjc_front::print_module(&m);
    // The spmd func's gradient is a spmd func; the func calling it uses a spmd VJP.
    assert!(text.contains("spmd func @sl.grad("), "{text}");
    assert!(text.contains("spmd func @sl.vjp("), "{text}");
    let mut rng = Rng::new(21);
    let types = param_types(&m, "main");
    let inputs: Vec<_> = types.iter().map(|t| fill(t, &U(-1.0, 1.0), &mut rng)).collect();
    let out: Vec<Vec<f64>> = run(&m, "main", inputs).iter().map(f64s).collect();
    for k in 0..4 {
        close_values(&out[4 + k], &out[k], DType::F64, TOL).unwrap_or_else(|e| panic!("grad @sl vs @gl, output {k}: {e}"));
        close_values(&out[12 + k], &out[8 + k], DType::F64, TOL).unwrap_or_else(|e| panic!("grad @gl_call vs @gl_sq, output {k}: {e}"));
    }
    // The replicated %c's gradient was summed over both mesh axes.
    assert!(out[3].iter().any(|&v| v != 0.0));
}

#[test]
fn spmd_reduce_scatter_of_an_invariant_value() {
    let src = "mesh [d=2, e=2]
spmd func @f(%x: f64[4,3] on [d, _], %w: f64[4,3]) -> (f64[]) {
  %y = mul %x, %w
  %rs = reduce_scatter %y {axes=[e], dim=0, kind=sum}
  %t = tanh %rs
  %s = reduce %t {dims=[0,1], kind=sum}
  %l = all_reduce %s {axes=[d, e], kind=sum}
  return %l
}
";
    check_grad(src, "f", &[0, 1], &[U(-1.0, 1.0), U(-1.0, 1.0)], 30);
}

#[test]
fn spmd_all_to_all_and_all_gather() {
    let src = "mesh [d=2]
spmd func @f(%x: f64[4,6] on [d, _], %v: f64[2,3]) -> (f64[]) {
  %a = all_to_all %x {axes=[d], split_dim=1, concat_dim=0}
  %t = sin %a
  %i = iota {dim=0} : f64[8,3]
  %p = mul %t, %i
  %vg = all_gather %v {axes=[d], dim=0}
  %vt = transpose %vg {perm=[1,0]}
  %q = dot_general %p, %vt {lhs_contract=[1], rhs_contract=[0]}
  %s = reduce %q {dims=[0,1], kind=sum}
  %l = all_reduce %s {axes=[d], kind=sum}
  return %l
}
";
    check_grad(src, "f", &[0, 1], &[U(-1.0, 1.0), U(-1.0, 1.0)], 31);
}

#[test]
fn spmd_collective_permute_and_axis_index() {
    let src = "mesh [d=2, e=2]
spmd func @f(%x: f64[3] on [d], %v: f64[3]) -> (f64[]) {
  %p = collective_permute %x {axes=[d, e], shift=3}
  %i = axis_index {axis=e} : i32[]
  %fi = convert %i : f64[]
  %one = constant 1.0 : f64[]
  %fi1 = add %fi, %one
  %fb = broadcast %fi1 : f64[3]
  %q = mul %p, %fb
  %r = mul %q, %v
  %ex = exp %r
  %s = reduce %ex {dims=[0], kind=sum}
  %l = all_reduce %s {axes=[d, e], kind=sum}
  return %l
}
";
    check_grad(src, "f", &[0, 1], &[U(-1.0, 1.0), U(-1.0, 1.0)], 32);
}

#[test]
fn spmd_all_reduce_max_and_psum_of_an_invariant_value() {
    let src = "mesh [d=2]
spmd func @f(%x: f64[3] on [d], %w: f64[3]) -> (f64[]) {
  %m = all_reduce %x {axes=[d], kind=max}
  %w2 = all_reduce %w {axes=[d], kind=sum}
  %p = mul %m, %w2
  %s = reduce %p {dims=[0], kind=sum}
  return %s
}
";
    check_grad(src, "f", &[0, 1], &[U(-1.0, 1.0), U(-1.0, 1.0)], 33);
    // Ties across devices split equally; psum of a replicated value counts it twice.
    let m = expand(&with_grad_main(src, "f", &[0, 1]));
    let x = tensor(pjc_ir::DType::F64, vec![6], &[1.0, 5.0, 2.0, 1.0, 5.0, 3.0]);
    let w = tensor(pjc_ir::DType::F64, vec![3], &[1.0, 1.0, 1.0]);
    let out = run(&m, "grad_main", vec![x, w]);
    assert_eq!(f64s(&out[1]), vec![1.0, 1.0, 0.0, 1.0, 1.0, 2.0]);
    assert_eq!(f64s(&out[2]), vec![2.0, 10.0, 6.0]);
}

#[test]
fn spmd_reductions_prod_min_max_over_devices() {
    let src = "mesh [d=2, e=2]
spmd func @f(%x: f64[4,3] on [d, _], %v: f64[4,3] on [e, _]) -> (f64[]) {
  %p = all_reduce %x {axes=[d], kind=prod}
  %m = all_reduce %v {axes=[e], kind=min}
  %pm = mul %p, %m
  %rs = reduce_scatter %v {axes=[e], dim=0, kind=max}
  %rq = reduce_scatter %x {axes=[d, e], dim=0, kind=prod}
  %rm = reduce_scatter %x {axes=[e], dim=0, kind=min}
  %a = reduce %pm {dims=[0,1], kind=sum}
  %b = reduce %rs {dims=[0,1], kind=sum}
  %c = reduce %rq {dims=[0,1], kind=sum}
  %t = tanh %rm
  %c2 = reduce %t {dims=[0,1], kind=sum}
  %bc = add %b, %c
  %bc2 = add %bc, %c2
  %s = all_reduce %bc2 {axes=[d, e], kind=sum}
  %l = add %a, %s
  return %l
}
";
    // x is the same on both e devices: reduce_scatter max/min over e ties everywhere.
    check_grad(src, "f", &[0, 1], &[Signed(0.5, 1.5), U(-1.0, 1.0)], 34);
}

#[test]
fn spmd_result_split_over_an_axis_it_does_not_vary_along() {
    // @s returns a replicated value as if split over d: the global result holds
    // two copies, and both copies' cotangents reach %w.
    let src = "mesh [d=2]
spmd func @s(%w: f64[3]) -> (f64[3] on [d]) {
  %t = tanh %w
  return %t
}
func @f(%w: f64[3], %c: f64[6]) -> (f64[]) {
  %r = call @s(%w) : f64[6]
  %p = mul %r, %c
  %l = reduce %p {dims=[0], kind=sum}
  return %l
}
";
    check_grad(src, "f", &[0], &[U(-1.0, 1.0), U(-1.0, 1.0)], 35);
}

// ---- higher order ----------------------------------------------------------

#[test]
fn second_order_through_elementwise_and_dot() {
    let src = "func @f(%x: f64[3], %w: f64[3,3]) -> (f64[]) {
  %h = dot_general %w, %x {lhs_contract=[1], rhs_contract=[0]} : f64[3]
  %t = tanh %h
  %e = exp %x
  %m = max %t, %e
  %s = mul %m, %x
  %q = div %s, %e
  %l = reduce %q {dims=[0], kind=sum}
  return %l
}

func @g(%x: f64[3], %w: f64[3,3]) -> (f64[]) {
  %l, %gx, %gw = grad @f(%x, %w) {wrt=[0,1]}
  %sq = mul %gx, %gx
  %r = reduce %sq {dims=[0], kind=sum}
  %sq2 = mul %gw, %gw
  %r2 = reduce %sq2 {dims=[0,1], kind=sum}
  %a = add %r, %r2
  %b = add %a, %l
  return %b
}
";
    check_grad(src, "g", &[0, 1], &[U(-1.0, 1.0), U(-1.0, 1.0)], 40);
}

#[test]
fn third_order_of_an_elementwise_function() {
    let src = "func @f(%x: f64[4]) -> (f64[]) {
  %s = sin %x
  %p = mul %s, %x
  %l = reduce %p {dims=[0], kind=sum}
  return %l
}
func @g(%x: f64[4]) -> (f64[]) {
  %l, %gx = grad @f(%x) {wrt=[0]}
  %c = cos %gx
  %r = reduce %c {dims=[0], kind=sum}
  return %r
}
func @h(%x: f64[4]) -> (f64[]) {
  %l, %gx = grad @g(%x) {wrt=[0]}
  %sq = mul %gx, %gx
  %r = reduce %sq {dims=[0], kind=sum}
  return %r
}
";
    let (_, g) = check_grad(src, "h", &[0], &[U(-2.0, 2.0)], 41);
    assert!(g[0].iter().any(|&v| v != 0.0));
}

// ---- composition with vmap ----------------------------------------------------

#[test]
fn grad_of_a_vmapped_function() {
    let src = "func @g(%x: f64[3], %w: f64[3,2]) -> (f64[2]) {
  %h = dot_general %x, %w {lhs_contract=[0], rhs_contract=[0]}
  %t = tanh %h
  return %t
}
func @f(%xs: f64[4,3], %w: f64[3,2]) -> (f64[]) {
  %ys = vmap @g(%xs, %w) {in_dims=[0, none], out_dims=[0]} : f64[4,2]
  %s = mul %ys, %ys
  %l = reduce %s {dims=[0,1], kind=sum}
  return %l
}
";
    check_grad(src, "f", &[0, 1], &[U(-1.0, 1.0), U(-1.0, 1.0)], 1);
}
#[test]
fn vmap_of_a_gradient() {
    let src = "func @g(%x: f64[3], %w: f64[3]) -> (f64[]) {
  %h = mul %x, %w
  %t = tanh %h
  %l = reduce %t {dims=[0], kind=sum}
  return %l
}
func @gg(%x: f64[3], %w: f64[3]) -> (f64[], f64[3]) {
  %l, %gw = grad @g(%x, %w) {wrt=[1]}
  return %l, %gw
}
func @f(%xs: f64[4,3], %w: f64[3]) -> (f64[]) {
  %ls, %gs = vmap @gg(%xs, %w) {in_dims=[0, none], out_dims=[0, 0]} : (f64[4], f64[4,3])
  %s = mul %gs, %gs
  %l = reduce %s {dims=[0,1], kind=sum}
  return %l
}
";
    check_grad(src, "f", &[0, 1], &[U(-1.0, 1.0), U(-1.0, 1.0)], 2);
}
#[test]
fn second_order_through_a_spmd_func_with_collectives() {
    let src = "mesh [data=2, model=2]
spmd func @sl(%w: f64[4,6] on [_, model], %x: f64[3,4] on [data, _], %c: f64[12]) -> (f64[]) {
  %h = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]}
  %t = tanh %h
  %tg = all_gather %t {axes=[model], dim=1}
  %cb = broadcast %c {dims=[1]} : f64[3,12]
  %p = mul %tg, %cb
  %s = reduce %p {dims=[0,1], kind=sum}
  %l = all_reduce %s {axes=[data], kind=sum}
  return %l
}
func @g(%w: f64[4,12], %x: f64[6,4], %c: f64[12]) -> (f64[]) {
  %l, %gw, %gc = grad @sl(%w, %x, %c) {wrt=[0, 2]}
  %s = mul %gw, %gw
  %r = reduce %s {dims=[0,1], kind=sum}
  %s2 = mul %gc, %gc
  %r2 = reduce %s2 {dims=[0], kind=sum}
  %a = add %r, %r2
  return %a
}
";
    let (m, _) = check_grad(src, "g", &[0, 1, 2], &[U(-1.0, 1.0), U(-1.0, 1.0), U(-1.0, 1.0)], 3);
    // The func's gradient calls the VJP of the spmd gradient function.
    assert!(m.func_by_name("sl.grad.vjp").is_some_and(|id| m.funcs[id].kind == pjc_ir::FuncKind::Spmd));
}
