// test: error
// @f calls @g which calls @f: PIR has no recursion.
func @f(%a: f32[4]) -> (b: f32[4]) {
  %b = call @g(%a) : f32[4]
  return %b
}

func @g(%a: f32[4]) -> (b: f32[4]) {
  %b = call @f(%a) : f32[4]
  return %b
}

func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = call @f(%x) : f32[4]
  return %y
}
