// test: check --entry step
// With --entry, the module needs no @main.
func @step(%w: f32[4], %g: f32[4]) -> (w: f32[4]) {
  %w2 = sub %w, %g
  return %w2
}
