func @main(%a: f64[5,3],
           %b: f64[7,5]) -> (c: f64[3,7], d: f64[7,3]) {
  %c = dot_general %a, %b {lhs_contract=[0], rhs_contract=[1]} : f64[3,7]
  %d = dot_general %b, %a {lhs_contract=[1], rhs_contract=[0]} : f64[7,3]
  return %c, %d
}
