// One SGD step of a stack of 4 residual MLP blocks, pipelined over stage with
// each stage's blocks Megatron-sharded over model: w1 split by columns and
// w2 by rows (so the hidden layer is split and one all-reduce over model
// sums each block's output), the batch split over data. With --pipeline
// stage --microbatches M, stage k holds blocks 2k, 2k+1 only, each of its
// devices a half of their hidden units (tests: crates/pjc/tests/pipeline.rs;
// docs/training.md section 11).
mesh [data=2, stage=2, model=2]

func @block(%h: f32[16,16], %w1: f32[16,32], %b1: f32[32], %w2: f32[32,16], %b2: f32[16]) -> (f32[16,16]) {
  %u = dot_general %h, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[16,32]
  %bb1 = broadcast %b1 {dims=[1]} : f32[16,32]
  %z = add %u, %bb1
  %t = tanh %z
  %v = dot_general %t, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[16,16]
  %bb2 = broadcast %b2 {dims=[1]} : f32[16,16]
  %o = add %v, %bb2
  %h2 = add %h, %o
  return %h2
}

func @loss(%w1s: f32[4,16,32], %b1s: f32[4,32], %w2s: f32[4,32,16], %b2s: f32[4,16], %x: f32[16,16], %y: f32[16,16]) -> (f32[]) {
  %h = scan @block(%x, %w1s, %b1s, %w2s, %b2s) {length=4, carries=1} : f32[16,16]
  %d = sub %h, %y
  %d2 = mul %d, %d
  %s = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  %n = constant 16.0 : f32[]
  %l = div %s, %n
  return %l
}

func @main(%w1s: f32[4,16,32] on [stage, _, model], %b1s: f32[4,32] on [stage, model], %w2s: f32[4,32,16] on [stage, model, _], %b2s: f32[4,16] on [stage, _], %x: f32[16,16] on [data, _], %y: f32[16,16] on [data, _]) -> (loss: f32[], w1s: f32[4,16,32] on [stage, _, model], b1s: f32[4,32] on [stage, model], w2s: f32[4,32,16] on [stage, model, _], b2s: f32[4,16] on [stage, _]) {
  %l, %g1, %gb1, %g2, %gb2 = grad @loss(%w1s, %b1s, %w2s, %b2s, %x, %y) {wrt=[0,1,2,3]} : (f32[], f32[4,16,32], f32[4,32], f32[4,32,16], f32[4,16])
  %lr = constant 0.05 : f32[]
  %l1 = broadcast %lr : f32[4,16,32]
  %u1 = mul %g1, %l1
  %w1n = sub %w1s, %u1
  %lb1 = broadcast %lr : f32[4,32]
  %ub1 = mul %gb1, %lb1
  %b1n = sub %b1s, %ub1
  %l2 = broadcast %lr : f32[4,32,16]
  %u2 = mul %g2, %l2
  %w2n = sub %w2s, %u2
  %lb2 = broadcast %lr : f32[4,16]
  %ub2 = mul %gb2, %lb2
  %b2n = sub %b2s, %ub2
  return %l, %w1n, %b1n, %w2n, %b2n
}
