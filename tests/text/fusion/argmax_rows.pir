// test: plan
// argmax is two reduction kernels over the stored output of the kernel that
// scales its input: the row maximum, then the first index holding it.
func @main(%x: f32[4,9]) -> (i: i32[4]) {
  %two = constant 2.0 : f32[4,9]
  %s = mul %x, %two
  %i = argmax %s {dim=1} : i32[4]
  return %i
}
