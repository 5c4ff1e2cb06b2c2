// test: error
// @f returns f32[4]; the call site says f32[8].
func @f(%a: f32[4]) -> (c: f32[4]) {
  %c = neg %a
  return %c
}

func @main(%x: f32[4]) -> (y: f32[8]) {
  %y = call @f(%x) : f32[8]
  return %y
}
