func @main(%a: f16[4,6],
           %b: f16[6,3]) -> (c: f16[4,3]) {
  %c = dot_general %a, %b {lhs_contract=[1], rhs_contract=[0]} : f16[4,3]
  return %c
}
