// test: error
// Two parameters with the same name.
func @main(%x: f32[4], %x: f32[4]) -> (y: f32[4]) {
  %y = add %x, %x
  return %y
}
