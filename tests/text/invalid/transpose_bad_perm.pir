// test: error
// perm must be a permutation of 0..rank-1.
func @main(%x: f32[2,3,4]) -> (y: f32[4,3,2]) {
  %y = transpose %x {perm=[2,1,1]}
  return %y
}
