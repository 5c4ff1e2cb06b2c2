// test: mlir
// The global view of a Megatron-style MLP: the mesh as shard.grid, every value
// annotated with its sharding (pir.written where the program wrote it), the
// products as linalg.generic, the bias as linalg.broadcast, relu as arith.maximumf.
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
