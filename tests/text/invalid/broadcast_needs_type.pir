// test: error
// broadcast needs its result type written.
func @main(%b: f32[8]) -> (y: f32[4,8]) {
  %y = broadcast %b {dims=[1]}
  return %y
}
