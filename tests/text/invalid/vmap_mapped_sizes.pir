// test: error
// Mapped operands agree in the mapped size: 8 vs 4.
func @dot(%a: f32[16], %b: f32[16]) -> (c: f32[]) {
  %c = dot_general %a, %b {lhs_contract=[0], rhs_contract=[0]}
  return %c
}

func @main(%as: f32[8,16], %bs: f32[16,4]) -> (ys: f32[8]) {
  %ys = vmap @dot(%as, %bs) {in_dims=[0, 1], out_dims=[0]} : f32[8]
  return %ys
}
