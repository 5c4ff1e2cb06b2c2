// test: error
// %b (size 8) must go to the result dimension of size 8, which is 1, not 0.
func @main(%b: f32[8]) -> (y: f32[4,8]) {
  %y = broadcast %b {dims=[0]} : f32[4,8]
  return %y
}
