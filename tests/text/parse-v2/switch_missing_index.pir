// test: error
// The index comes first: 'switch %i, @b0, @b1(...)'.
func @b0(%x: f32[4]) -> (f32[4]) {
  return %x
}

func @main(%i: i32[], %x: f32[4]) -> (y: f32[4]) {
  %y = switch @b0(%x)
  return %y
}
