// test: error
// convert changes the dtype only.
func @main(%x: f32[4]) -> (y: bf16[2,2]) {
  %y = convert %x : bf16[2,2]
  return %y
}
