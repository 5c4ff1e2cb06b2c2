// test: error
// 'mean' is not a reduce kind (sum, then div).
func @main(%x: f32[4,8]) -> (y: f32[4]) {
  %y = reduce %x {dims=[1], kind=mean}
  return %y
}
