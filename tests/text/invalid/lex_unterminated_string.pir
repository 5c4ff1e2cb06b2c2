// test: error
// A string attribute without its closing quote.
func @main(%x: f32[1,8,8,3], %k: f32[3,3,3,4]) -> (y: f32[1,6,6,4]) {
  %y = convolution %x, %k {dims="b01f_01io->b01f} : f32[1,6,6,4]
  return %y
}
