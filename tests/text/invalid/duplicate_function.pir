// test: error
// Function names are unique.
func @f(%a: f32[4]) -> (b: f32[4]) {
  return %a
}

func @f(%a: f32[4]) -> (b: f32[4]) {
  %b = neg %a
  return %b
}

func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = call @f(%x) : f32[4]
  return %y
}
