// test: error
// The last function is not closed.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = add %x, %x
  return %y
