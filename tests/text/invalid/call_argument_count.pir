// test: error
// @f takes two arguments.
func @f(%a: f32[4], %b: f32[4]) -> (c: f32[4]) {
  %c = add %a, %b
  return %c
}

func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = call @f(%x) : f32[4]
  return %y
}
