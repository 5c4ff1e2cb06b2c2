func @main(%a: f32[2,3], %b: f32[3,4]) -> (f32[2,4]) {
  %y = dot_general %a, %b {rhs_contract=[0], lhs_contract=[1]}
  return %y
}
