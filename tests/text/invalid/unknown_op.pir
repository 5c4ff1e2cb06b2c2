// test: error
// There is no 'relu' op (write max with a zero constant).
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = relu %x
  return %y
}
