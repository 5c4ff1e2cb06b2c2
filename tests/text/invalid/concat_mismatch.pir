// test: error
// concat operands agree in every dimension but the concatenated one.
func @main(%a: f32[4,8], %b: f32[2,6]) -> (y: f32[6,8]) {
  %y = concat %a, %b {dim=0}
  return %y
}
