func @main(%a: f32[2,3,5],
           %b: f32[2,5,4],
           %c: f32[3,2,5],
           %d: f32[5,4,2]) -> (ab: f32[2,3,4], cd: f32[2,3,4]) {
  %ab = dot_general %a, %b {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]} : f32[2,3,4]
  %cd = dot_general %c, %d {lhs_batch=[1], rhs_batch=[2], lhs_contract=[2], rhs_contract=[0]} : f32[2,3,4]
  return %ab, %cd
}
