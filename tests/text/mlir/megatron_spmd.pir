// test: mlir-spmd
// The per-device view of the same MLP: local shapes, and the all-reduce the
// row-parallel second product needs as shard.all_reduce over the model axis.
mesh [data=2, model=2]

func @main(%x: f32[8,16] on [data, _], %w1: f32[16,32] on [_, model], %b: f32[32] on [model], %w2: f32[32,16] on [model, _]) -> (y: f32[8,16]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[8,32]
  %bb = broadcast %b {dims=[1]} : f32[8,32]
  %s = add %h, %bb : f32[8,32]
  %z = constant 0.0 : f32[8,32]
  %r = max %s, %z : f32[8,32]
  %y = dot_general %r, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[8,16]
  return %y
}
