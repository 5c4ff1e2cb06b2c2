// test: error
// Batch dimensions must have equal sizes (4 vs 5).
func @main(%a: f32[4,2,3], %b: f32[5,3,6]) -> (y: f32[4,2,6]) {
  %y = dot_general %a, %b {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]}
  return %y
}
