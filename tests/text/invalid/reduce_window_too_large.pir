// test: error
// A 5x5 window does not fit in a 4x4 array without padding.
func @main(%x: f32[4,4]) -> (y: f32[1,1]) {
  %y = reduce_window %x {kind=max, window=[5,5]}
  return %y
}
