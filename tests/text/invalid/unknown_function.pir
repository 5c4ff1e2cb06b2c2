// test: error
// @g is not defined in this module.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = call @g(%x) : f32[4]
  return %y
}
