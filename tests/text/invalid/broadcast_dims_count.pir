// test: error
// dims needs one entry per operand dimension.
func @main(%b: f32[4,8]) -> (y: f32[2,4,8]) {
  %y = broadcast %b {dims=[1]} : f32[2,4,8]
  return %y
}
