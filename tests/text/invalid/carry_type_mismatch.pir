// test: error
// Result 'w' carries parameter %w to the next step, so it must have %w's type.
func @main(%w: f32[10], %g: f32[10]) -> (w: f64[10]) {
  %d = sub %w, %g
  %w2 = convert %d : f64[10]
  return %w2
}
