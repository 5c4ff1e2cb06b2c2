// test: error
// Dimensions are positive.
func @main(%x: f32[4,0]) -> (y: f32[4,0]) {
  return %x
}
