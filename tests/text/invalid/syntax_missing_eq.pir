// test: error
// The '=' between the result name and the op is missing.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y add %x, %x
  return %y
}
