// test: error spmd --pipeline stage --microbatches 2
// --pipeline does not yet combine with tensor parallelism inside a stage: a
// stacked parameter split over model as well is refused at the parameter.
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
