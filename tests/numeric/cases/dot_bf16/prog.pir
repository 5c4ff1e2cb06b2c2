func @main(%a: bf16[3,16],
           %b: bf16[16,5]) -> (c: bf16[3,5]) {
  %c = dot_general %a, %b {lhs_contract=[1], rhs_contract=[0]} : bf16[3,5]
  return %c
}
