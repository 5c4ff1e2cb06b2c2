// test: error
// 'float32' is not a PIR dtype (write f32).
func @main(%x: float32[4]) -> (y: f32[4]) {
  return %x
}
