// test: error
// reduce_window kinds are sum, max and min.
func @main(%x: f32[4,4]) -> (y: f32[2,2]) {
  %y = reduce_window %x {kind=prod, window=[2,2], strides=[2,2]}
  return %y
}
