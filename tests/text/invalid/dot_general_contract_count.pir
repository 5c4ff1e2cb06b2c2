// test: error
// lhs_contract and rhs_contract list the same number of dimensions.
func @main(%x: f32[4,8], %w: f32[8,4]) -> (y: f32[]) {
  %y = dot_general %x, %w {lhs_contract=[0,1], rhs_contract=[0]}
  return %y
}
