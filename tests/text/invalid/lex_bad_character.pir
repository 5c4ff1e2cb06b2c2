// test: error
// A character that is not part of PIR.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = add %x, $x
  return %y
}
