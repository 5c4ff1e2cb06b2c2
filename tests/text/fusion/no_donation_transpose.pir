// test: plan
// A carried parameter that the kernel reads at other elements than it writes
// (a transpose) cannot be updated in place: no donation, the result gets its
// own buffer.
func @main(%w: f32[16,16]) -> (w: f32[16,16]) {
  %t = transpose %w {perm=[1,0]}
  %w2 = add %w, %t
  return %w2
}
