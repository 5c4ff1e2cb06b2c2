// test: error
// transpose needs 'perm'.
func @main(%x: f32[4,8]) -> (y: f32[8,4]) {
  %y = transpose %x : f32[8,4]
  return %y
}
