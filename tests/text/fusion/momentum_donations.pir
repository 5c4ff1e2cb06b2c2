// test: plan
// SGD with momentum: both carried parameters (%w and %v) are updated in place,
// each donating its buffer to the result of the same name.
func @main(%w: f32[32], %v: f32[32], %g: f32[32]) -> (w: f32[32], v: f32[32]) {
  %mu = constant 0.9 : f32[32]
  %mv = mul %v, %mu
  %v2 = add %mv, %g
  %lr = constant 0.01 : f32[32]
  %u = mul %v2, %lr
  %w2 = sub %w, %u
  return %w2, %v2
}
