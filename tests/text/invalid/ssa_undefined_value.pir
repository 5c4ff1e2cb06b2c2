// test: error
// %z is never defined.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = add %x, %z
  return %y
}
