// test: error
// The kernel labels name the input feature twice and the output feature not at all.
func @main(%x: f32[1,8,8,3], %k: f32[3,3,3,4]) -> (y: f32[1,6,6,4]) {
  %y = convolution %x, %k {dims="b01f_01ii->b01f"}
  return %y
}
