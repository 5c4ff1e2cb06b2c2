// test: error
// Contracting dimensions must have equal sizes (784 vs 512).
func @main(%x: f32[64,784], %w: f32[512,128]) -> (y: f32[64,128]) {
  %y = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]}
  return %y
}
