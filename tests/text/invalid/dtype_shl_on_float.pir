// test: error
// Shifts are defined on integers only.
func @main(%x: f32[4], %n: f32[4]) -> (y: f32[4]) {
  %y = shl %x, %n
  return %y
}
