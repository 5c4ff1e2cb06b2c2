func @main(%a: f32[2,1200],
           %b: f32[1200,3]) -> (c: f32[2,3]) {
  %c = dot_general %a, %b {lhs_contract=[1], rhs_contract=[0]} : f32[2,3]
  return %c
}
