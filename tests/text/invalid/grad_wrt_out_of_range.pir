// test: error
// @f has two operands: positions 0 and 1.
func @f(%w: f32[4], %x: f32[4]) -> (l: f32[]) {
  %p = mul %w, %x
  %l = reduce %p {dims=[0], kind=sum}
  return %l
}

func @main(%w: f32[4], %x: f32[4]) -> (l: f32[], g: f32[4]) {
  %l, %g = grad @f(%w, %x) {wrt=[2]} : (f32[], f32[4])
  return %l, %g
}
