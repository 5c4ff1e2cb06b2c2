// test: error
// Values are visible only in their own function.
func @f(%a: f32[4]) -> (b: f32[4]) {
  %b = neg %a
  return %b
}

func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = add %x, %b
  return %y
}
