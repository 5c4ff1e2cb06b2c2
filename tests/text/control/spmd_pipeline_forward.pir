// test: spmd --pipeline stage --microbatches 2
// --pipeline: a scan over 4 layers stacked on [stage, ...] as a 2-stage
// pipeline with 2 micro-batches: @layer.pipeline takes its stage's 2 layers
// (no all_gather of %ws), @layer.tick runs one tick of the schedule (stage k
// works on micro-batch tick-k) and sends its activation to the next stage
// with collective_permute; the last stage's results are summed over stage.
mesh [stage=2]

func @layer(%h: f32[4,8], %w: f32[8,8]) -> (f32[4,8]) {
  %y = dot_general %h, %w {lhs_contract=[1], rhs_contract=[0]} : f32[4,8]
  %t = tanh %y
  return %t
}

func @main(%x: f32[4,8], %ws: f32[4,8,8] on [stage, _, _]) -> (h: f32[4,8]) {
  %h = scan @layer(%x, %ws) {length=4, carries=1} : f32[4,8]
  return %h
}
