// test: plan
// A carried parameter (result 'w' is the next value of %w) is updated in
// place: the kernel reads %w only at the element it writes, so its buffer is
// donated to the result.
func @main(%w: f32[64,32], %g: f32[64,32]) -> (w: f32[64,32]) {
  %lr = constant 0.1 : f32[64,32]
  %u = mul %g, %lr
  %w2 = sub %w, %u
  return %w2
}
