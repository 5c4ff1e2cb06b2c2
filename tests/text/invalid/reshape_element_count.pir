// test: error
// 4x8 = 32 elements cannot become 5x6 = 30.
func @main(%x: f32[4,8]) -> (y: f32[5,6]) {
  %y = reshape %x : f32[5,6]
  return %y
}
