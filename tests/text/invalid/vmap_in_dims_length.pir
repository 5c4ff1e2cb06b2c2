// test: error
// in_dims has one entry per operand (2), not 1.
func @dot(%a: f32[16], %b: f32[16]) -> (c: f32[]) {
  %c = dot_general %a, %b {lhs_contract=[0], rhs_contract=[0]}
  return %c
}

func @main(%as: f32[8,16], %b: f32[16]) -> (ys: f32[8]) {
  %ys = vmap @dot(%as, %b) {in_dims=[0], out_dims=[0]} : f32[8]
  return %ys
}
