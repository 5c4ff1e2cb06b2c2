// test: error
// argmax returns i32 or i64 indices.
func @main(%x: f32[4,8]) -> (y: f32[4]) {
  %y = argmax %x {dim=1} : f32[4]
  return %y
}
