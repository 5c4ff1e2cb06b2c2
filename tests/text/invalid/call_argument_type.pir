// test: error
// @f's second parameter is f32[4], the argument is f32[8].
func @f(%a: f32[4], %b: f32[4]) -> (c: f32[4]) {
  %c = add %a, %b
  return %c
}

func @main(%x: f32[4], %z: f32[8]) -> (y: f32[4]) {
  %y = call @f(%x, %z) : f32[4]
  return %y
}
