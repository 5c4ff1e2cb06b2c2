// test: plan
// argmax has no generated kernel yet: it is a library step (host code) reading
// the stored output of the kernel that scales its input.
func @main(%x: f32[4,9]) -> (i: i32[4]) {
  %two = constant 2.0 : f32[4,9]
  %s = mul %x, %two
  %i = argmax %s {dim=1} : i32[4]
  return %i
}
