// test: error
// One start index per dimension of %x (2), not 1.
func @main(%x: f32[8,8], %i: i32[]) -> (y: f32[2,2]) {
  %y = dynamic_slice %x, %i {sizes=[2,2]}
  return %y
}
