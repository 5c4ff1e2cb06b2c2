// test: explain
// Megatron's MLP on 4 devices: the hidden layer is split over model, the
// second matmul's contraction makes partial sums, and the collectives section
// lists the one all_reduce with its ring bytes (2(n-1)/n of 8x32 f32).
mesh [model=4]

func @main(%x: f32[8,32], %w1: f32[32,64] on [_, model], %w2: f32[64,32] on [model, _]) -> (y: f32[8,32]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]}
  %a = tanh %h
  %y = dot_general %a, %w2 {lhs_contract=[1], rhs_contract=[0]}
  return %y
}
