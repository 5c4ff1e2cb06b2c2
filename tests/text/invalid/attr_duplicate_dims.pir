// test: error
// reverse lists dimension 0 twice.
func @main(%x: f32[4,8]) -> (y: f32[4,8]) {
  %y = reverse %x {dims=[0,0]}
  return %y
}
