// test: error
// No implicit broadcasting: broadcast %b first.
func @main(%a: f32[4,8], %b: f32[8]) -> (y: f32[4,8]) {
  %y = add %a, %b
  return %y
}
