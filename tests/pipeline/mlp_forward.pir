// The forward pass of mlp_step.pir's layer stack alone (inference): with
// --pipeline stage --microbatches M each stage runs its two layers on the
// micro-batches as they arrive from the stage before.
mesh [data=1, stage=4]

func @layer(%h: f32[32,32], %w: f32[32,32], %b: f32[32]) -> (f32[32,32]) {
  %y = dot_general %h, %w {lhs_contract=[1], rhs_contract=[0]} : f32[32,32]
  %bb = broadcast %b {dims=[1]} : f32[32,32]
  %z = add %y, %bb
  %t = tanh %z
  return %t
}

func @main(%ws: f32[8,32,32] on [stage, _, _], %bs: f32[8,32] on [stage, _], %x: f32[32,32] on [data, _]) -> (h: f32[32,32] on [data, _]) {
  %h = scan @layer(%x, %ws, %bs) {length=8, carries=1} : f32[32,32]
  return %h
}
