// test: pir
// value_and_grad of a 2-layer MLP loss: the expansion is a call of a generated
// @loss.grad holding the forward code then the backward pass, values named after
// their origin (%h.ct is the cotangent of %h).
func @loss(%w1: f32[4,8], %w2: f32[8,2], %x: f32[6,4], %y: f32[6,2]) -> (f32[]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[6,8]
  %a = tanh %h
  %o = dot_general %a, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[6,2]
  %d = sub %o, %y
  %d2 = mul %d, %d
  %l = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  return %l
}

func @main(%w1: f32[4,8], %w2: f32[8,2], %x: f32[6,4], %y: f32[6,2]) -> (loss: f32[], g1: f32[4,8], g2: f32[8,2]) {
  %l, %g1, %g2 = grad @loss(%w1, %w2, %x, %y) {wrt=[0,1]} : (f32[], f32[4,8], f32[8,2])
  return %l, %g1, %g2
}
