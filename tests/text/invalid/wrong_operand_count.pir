// test: error
// 'add' takes two operands.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = add %x, %x, %x
  return %y
}
