// test: error
// An error in one function does not hide the errors of the next one.
func @f(%a: f32[4]) -> (b: f32[4]) {
  %b = neg %a,
  return %b
}

func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = neg %q
  return %y
}
