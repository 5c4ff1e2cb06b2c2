// test: error
// select's first operand is the pred.
func @main(%c: i32[4], %a: f32[4], %b: f32[4]) -> (y: f32[4]) {
  %y = select %c, %a, %b
  return %y
}
