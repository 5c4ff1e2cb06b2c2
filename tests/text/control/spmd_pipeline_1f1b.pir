// test: spmd --pipeline stage --microbatches 3 --schedule 1f1b
// --schedule 1f1b: the grad of @loss becomes one per-stage program
// (@layer.pipeline): ticks (@layer.tick) with a forward slot that sends the
// activation on (shift=1) and keeps the stage's input in a stash, the loss's
// gradient of the finished micro-batch on the last stage (grad of
// @loss.micro), and a backward slot (grad of @layer.stage.dot, the stage's
// layers recomputed) that sends the activation gradient back (shift=-1).
mesh [stage=2]

func @layer(%h: f32[6,4], %w: f32[4,4]) -> (f32[6,4]) {
  %y = dot_general %h, %w {lhs_contract=[1], rhs_contract=[0]} : f32[6,4]
  %t = tanh %y
  return %t
}

func @loss(%ws: f32[4,4,4], %x: f32[6,4], %y: f32[6,4]) -> (f32[]) {
  %h = scan @layer(%x, %ws) {length=4, carries=1} : f32[6,4]
  %d = sub %h, %y
  %d2 = mul %d, %d
  %s = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  return %s
}

func @main(%ws: f32[4,4,4] on [stage, _, _], %x: f32[6,4], %y: f32[6,4]) -> (l: f32[], g: f32[4,4,4] on [stage, _, _]) {
  %l, %g = grad @loss(%ws, %x, %y) {wrt=[0]} : (f32[], f32[4,4,4])
  return %l, %g
}
