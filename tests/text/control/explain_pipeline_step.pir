// test: explain --mesh data=2,stage=2 --pipeline stage --microbatches 3
// explain's pipeline section for a training step: 2 stages of 2 layers, 3
// micro-batches of 2 rows per device (12 rows over data=2), the GPipe table
// with the backward pass, the bubble fraction 1/4; the weights' gradient
// all-reduce over data comes once, after the backward's ticks.
mesh [data=2, stage=2]

func @layer(%h: f32[12,8], %w: f32[8,8]) -> (f32[12,8]) {
  %y = dot_general %h, %w {lhs_contract=[1], rhs_contract=[0]} : f32[12,8]
  %t = tanh %y
  return %t
}

func @loss(%ws: f32[4,8,8], %x: f32[12,8]) -> (f32[]) {
  %h = scan @layer(%x, %ws) {length=4, carries=1} : f32[12,8]
  %s = reduce %h {dims=[0,1], kind=sum} : f32[]
  return %s
}

func @main(%ws: f32[4,8,8] on [stage, _, _], %x: f32[12,8] on [data, _]) -> (l: f32[], g: f32[4,8,8] on [stage, _, _]) {
  %l, %g = grad @loss(%ws, %x) {wrt=[0]} : (f32[], f32[4,8,8])
  return %l, %g
}
