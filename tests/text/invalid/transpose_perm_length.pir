// test: error
// perm has one entry per dimension.
func @main(%x: f32[2,3,4]) -> (y: f32[3,2]) {
  %y = transpose %x {perm=[1,0]}
  return %y
}
