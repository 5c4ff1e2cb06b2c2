// test: error
// grad needs a function returning one float scalar.
func @f(%w: f32[4], %x: f32[4]) -> (l: f32[4]) {
  %l = mul %w, %x
  return %l
}

func @main(%w: f32[4], %x: f32[4]) -> (l: f32[4], g: f32[4]) {
  %l, %g = grad @f(%w, %x) {wrt=[0]} : (f32[4], f32[4])
  return %l, %g
}
