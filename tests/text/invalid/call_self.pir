// test: error
// A function cannot call itself.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = call @main(%x) : f32[4]
  return %y
}
