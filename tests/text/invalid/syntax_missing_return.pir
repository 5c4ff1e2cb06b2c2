// test: error
// The body ends without 'return'.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = add %x, %x
}
