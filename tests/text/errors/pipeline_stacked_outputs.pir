// test: error spmd --pipeline stage --microbatches 2
// A pipelined scan returns its carries only: per-layer stacked outputs (here
// each layer's row sums) are refused at the scan.
mesh [stage=2]

func @layer(%h: f32[4,8], %w: f32[8,8]) -> (f32[4,8], f32[4]) {
  %y = dot_general %h, %w {lhs_contract=[1], rhs_contract=[0]} : f32[4,8]
  %t = tanh %y
  %s = reduce %t {dims=[1], kind=sum}
  return %t, %s
}

func @main(%x: f32[4,8], %ws: f32[4,8,8] on [stage, _, _]) -> (h: f32[4,8], s: f32[4,4]) {
  %h, %s = scan @layer(%x, %ws) {length=4, carries=1} : (f32[4,8], f32[4,4])
  return %h, %s
}
