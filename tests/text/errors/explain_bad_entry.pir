// test: error explain --entry nope
// explain takes --entry like compile; a missing entry is the same error.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = neg %x
  return %y
}
