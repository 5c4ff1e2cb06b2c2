// test: spmd --pipeline stage --microbatches 2
// Tensor parallelism inside a pipeline stage: the stack is split over stage
// (dimension 0) and over model (the weights' columns). Each stage's layer,
// on one micro-batch, is partitioned over model by the SPMD partitioner:
// @layer.stage multiplies by its column block and gathers the columns over
// model, and the stage's slice of the stack is f32[2,8,4] on [stage, _, model].
mesh [stage=2, model=2]

func @layer(%h: f32[4,8], %w: f32[8,8]) -> (f32[4,8]) {
  %y = dot_general %h, %w {lhs_contract=[1], rhs_contract=[0]} : f32[4,8]
  %t = tanh %y
  return %t
}

func @main(%x: f32[4,8], %ws: f32[4,8,8] on [stage, _, model]) -> (h: f32[4,8]) {
  %h = scan @layer(%x, %ws) {length=4, carries=1} : f32[4,8]
  return %h
}
