// test: explain
// No mesh: one device holds everything, nothing is split or communicated.
func @main(%x: f32[3,4], %w: f32[4,2]) -> (y: f32[3,2]) {
  %y = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]}
  return %y
}
