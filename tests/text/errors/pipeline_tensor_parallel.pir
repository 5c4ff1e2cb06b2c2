// test: error spmd --pipeline stage --microbatches 2
// Inside a pipeline stage the batch's axes split the batch only: a stacked
// parameter split over the batch's axis data on another dimension is
// refused at the parameter (tensor parallelism takes other axes, as in
// tests/text/control/spmd_pipeline_tensor_parallel.pir).
mesh [data=2, stage=2]

func @layer(%h: f32[4,8], %w: f32[8,8]) -> (f32[4,8]) {
  %y = dot_general %h, %w {lhs_contract=[1], rhs_contract=[0]} : f32[4,8]
  %t = tanh %y
  return %t
}

func @main(%x: f32[4,8] on [data, _], %ws: f32[4,8,8] on [stage, _, data]) -> (h: f32[4,8] on [data, _]) {
  %h = scan @layer(%x, %ws) {length=4, carries=1} : f32[4,8]
  return %h
}
