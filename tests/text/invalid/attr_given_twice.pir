// test: error
// An attribute may be given once.
func @main(%x: f32[4,8]) -> (y: f32[8,4]) {
  %y = transpose %x {perm=[1,0], perm=[0,1]}
  return %y
}
