// The loss and gradients of one training step of a stack of 4
// transformer blocks (single-head attention and a tanh MLP, residual
// connections), pipelined over stage with each stage's blocks
// Megatron-sharded over model: wq, wk, wv and w1 split by columns, wo and w2
// by rows, the batch split over data (crates/pjc/tests/pipeline.rs;
// docs/training.md section 11).
mesh [data=2, stage=2, model=2]

func @block(%h: f32[8,4,8], %wq: f32[8,8], %wk: f32[8,8], %wv: f32[8,8], %wo: f32[8,8], %w1: f32[8,16], %w2: f32[16,8]) -> (f32[8,4,8]) {
  %q = dot_general %h, %wq {lhs_contract=[2], rhs_contract=[0]} : f32[8,4,8]
  %k = dot_general %h, %wk {lhs_contract=[2], rhs_contract=[0]} : f32[8,4,8]
  %v = dot_general %h, %wv {lhs_contract=[2], rhs_contract=[0]} : f32[8,4,8]
  %s = dot_general %q, %k {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[2]} : f32[8,4,4]
  %scale = constant 0.35355339 : f32[8,4,4]
  %ss = mul %s, %scale
  %mx = reduce %ss {dims=[2], kind=max} : f32[8,4]
  %mxb = broadcast %mx {dims=[0,1]} : f32[8,4,4]
  %sh = sub %ss, %mxb
  %e = exp %sh
  %den = reduce %e {dims=[2], kind=sum} : f32[8,4]
  %denb = broadcast %den {dims=[0,1]} : f32[8,4,4]
  %p = div %e, %denb
  %a = dot_general %p, %v {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]} : f32[8,4,8]
  %o = dot_general %a, %wo {lhs_contract=[2], rhs_contract=[0]} : f32[8,4,8]
  %h1 = add %h, %o
  %f = dot_general %h1, %w1 {lhs_contract=[2], rhs_contract=[0]} : f32[8,4,16]
  %g = tanh %f
  %m = dot_general %g, %w2 {lhs_contract=[2], rhs_contract=[0]} : f32[8,4,8]
  %h2 = add %h1, %m
  return %h2
}

func @loss(%wq: f32[4,8,8], %wk: f32[4,8,8], %wv: f32[4,8,8], %wo: f32[4,8,8], %w1: f32[4,8,16], %w2: f32[4,16,8], %x: f32[8,4,8], %y: f32[8,4,8]) -> (f32[]) {
  %h = scan @block(%x, %wq, %wk, %wv, %wo, %w1, %w2) {length=4, carries=1} : f32[8,4,8]
  %d = sub %h, %y
  %d2 = mul %d, %d
  %s = reduce %d2 {dims=[0,1,2], kind=sum} : f32[]
  %n = constant 256.0 : f32[]
  %l = div %s, %n
  return %l
}

func @main(%wq: f32[4,8,8] on [stage, _, model], %wk: f32[4,8,8] on [stage, _, model], %wv: f32[4,8,8] on [stage, _, model], %wo: f32[4,8,8] on [stage, model, _], %w1: f32[4,8,16] on [stage, _, model], %w2: f32[4,16,8] on [stage, model, _], %x: f32[8,4,8] on [data, _, _], %y: f32[8,4,8] on [data, _, _]) -> (loss: f32[], gq: f32[4,8,8] on [stage, _, model], gk: f32[4,8,8] on [stage, _, model], gv: f32[4,8,8] on [stage, _, model], go: f32[4,8,8] on [stage, model, _], g1: f32[4,8,16] on [stage, _, model], g2: f32[4,16,8] on [stage, model, _]) {
  %l, %gq, %gk, %gv, %go, %g1, %g2 = grad @loss(%wq, %wk, %wv, %wo, %w1, %w2, %x, %y) {wrt=[0,1,2,3,4,5]} : (f32[], f32[4,8,8], f32[4,8,8], f32[4,8,8], f32[4,8,8], f32[4,8,16], f32[4,16,8])
  return %l, %gq, %gk, %gv, %go, %g1, %g2
}
