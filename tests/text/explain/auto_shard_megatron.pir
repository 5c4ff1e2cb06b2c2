// test: explain --auto-shard --memory-limit 1G
// Large weights, a small batch, a training step: splitting the weights over
// model (w1 by columns, w2 by rows: Megatron) moves only activations, where
// data parallelism would all-reduce 32 MiB of gradients. The report shows the
// chosen plan, its estimate against all-replicated and the runner-up.
mesh [model=4]
func @loss(%w1: f32[1024,4096], %w2: f32[4096,1024], %x: f32[8,1024]) -> (f32[]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[8,4096]
  %a = tanh %h
  %y = dot_general %a, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[8,1024]
  %sq = mul %y, %y
  %l = reduce %sq {dims=[0,1], kind=sum} : f32[]
  return %l
}
func @main(%x: f32[8,1024], %w1: f32[1024,4096], %w2: f32[4096,1024]) -> (loss: f32[], w1: f32[1024,4096], w2: f32[4096,1024]) {
  %l, %g1, %g2 = grad @loss(%w1, %w2, %x) {wrt=[0,1]} : (f32[], f32[1024,4096], f32[4096,1024])
  %lr1 = constant 0.01 : f32[1024,4096]
  %u1 = mul %g1, %lr1
  %w1n = sub %w1, %u1
  %lr2 = constant 0.01 : f32[4096,1024]
  %u2 = mul %g2, %lr2
  %w2n = sub %w2, %u2
  return %l, %w1n, %w2n
}
