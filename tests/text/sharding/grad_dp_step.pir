// test: sharded
// A data-parallel training step written with grad: after expansion the
// gradient of the replicated weight is replicated, the per-example values follow
// the batch split.
mesh [data=2]

func @loss(%w: f32[4,3], %x: f32[8,4], %y: f32[8,3]) -> (f32[]) {
  %p = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[8,3]
  %d = sub %p, %y
  %d2 = mul %d, %d
  %l = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  return %l
}

func @main(%w: f32[4,3], %x: f32[8,4] on [data, _], %y: f32[8,3] on [data, _]) -> (loss: f32[], w: f32[4,3]) {
  %l, %g = grad @loss(%w, %x, %y) {wrt=[0]} : (f32[], f32[4,3])
  %lr = constant 0.01 : f32[4,3]
  %u = mul %g, %lr
  %w2 = sub %w, %u
  return %l, %w2
}
