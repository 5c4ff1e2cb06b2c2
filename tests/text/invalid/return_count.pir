// test: error
// @main declares two results; return gives one.
func @main(%x: f32[4]) -> (y: f32[4], z: f32[4]) {
  %y = neg %x
  return %y
}
