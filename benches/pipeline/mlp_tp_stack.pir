// The pipeline benchmark's tensor-parallel step (benches/pipeline/layouts.sh):
// tests/pipeline/mlp_tp_step.pir at 256 wide with 1024 hidden units, batch 256,
// 8 residual MLP blocks stacked on [stage, ...] and Megatron-split over model.
mesh [data=2, stage=2, model=2]

func @block(%h: f32[256,256], %w1: f32[256,1024], %b1: f32[1024], %w2: f32[1024,256], %b2: f32[256]) -> (f32[256,256]) {
  %u = dot_general %h, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[256,1024]
  %bb1 = broadcast %b1 {dims=[1]} : f32[256,1024]
  %z = add %u, %bb1
  %t = tanh %z
  %v = dot_general %t, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[256,256]
  %bb2 = broadcast %b2 {dims=[1]} : f32[256,256]
  %o = add %v, %bb2
  %h2 = add %h, %o
  return %h2
}

func @loss(%w1s: f32[8,256,1024], %b1s: f32[8,1024], %w2s: f32[8,1024,256], %b2s: f32[8,256], %x: f32[256,256], %y: f32[256,256]) -> (f32[]) {
  %h = scan @block(%x, %w1s, %b1s, %w2s, %b2s) {length=8, carries=1} : f32[256,256]
  %d = sub %h, %y
  %d2 = mul %d, %d
  %s = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  %n = constant 256.0 : f32[]
  %l = div %s, %n
  return %l
}

func @main(%w1s: f32[8,256,1024] on [stage, _, model], %b1s: f32[8,1024] on [stage, model], %w2s: f32[8,1024,256] on [stage, model, _], %b2s: f32[8,256] on [stage, _], %x: f32[256,256] on [data, _], %y: f32[256,256] on [data, _]) -> (loss: f32[], w1s: f32[8,256,1024] on [stage, _, model], b1s: f32[8,1024] on [stage, model], w2s: f32[8,1024,256] on [stage, model, _], b2s: f32[8,256] on [stage, _]) {
  %l, %g1, %gb1, %g2, %gb2 = grad @loss(%w1s, %b1s, %w2s, %b2s, %x, %y) {wrt=[0,1,2,3]} : (f32[], f32[8,256,1024], f32[8,1024], f32[8,1024,256], f32[8,256])
  %lr = constant 0.05 : f32[]
  %l1 = broadcast %lr : f32[8,256,1024]
  %u1 = mul %g1, %l1
  %w1n = sub %w1s, %u1
  %lb1 = broadcast %lr : f32[8,1024]
  %ub1 = mul %gb1, %lb1
  %b1n = sub %b1s, %ub1
  %l2 = broadcast %lr : f32[8,1024,256]
  %u2 = mul %g2, %l2
  %w2n = sub %w2s, %u2
  %lb2 = broadcast %lr : f32[8,256]
  %ub2 = mul %gb2, %lb2
  %b2n = sub %b2s, %ub2
  return %l, %w1n, %b1n, %w2n, %b2n
}
