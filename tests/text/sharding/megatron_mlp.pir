// test: sharded
// Megatron MLP: w1 split by columns, w2 by rows. The hidden activation is split
// on model between the two matmuls; the second matmul contracts over the split
// dimension, so its result is a partial sum (replicated here; the partitioner
// inserts the all-reduce).
mesh [model=4]

func @main(%x: f32[8,32], %w1: f32[32,64] on [_, model], %w2: f32[64,32] on [model, _]) -> (y: f32[8,32]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[8,64]
  %a = tanh %h
  %y = dot_general %a, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[8,32]
  return %y
}
