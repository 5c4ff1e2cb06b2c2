// test: error
// compare directions are eq ne lt le gt ge.
func @main(%a: f32[4], %b: f32[4]) -> (y: pred[4]) {
  %y = compare %a, %b {dir=less}
  return %y
}
