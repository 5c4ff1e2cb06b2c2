func @main(%a: f32[3,5],
           %b: f32[5,7]) -> (c: f32[3,7]) {
  %c = dot_general %a, %b {lhs_contract=[1], rhs_contract=[0]} : f32[3,7]
  return %c
}
