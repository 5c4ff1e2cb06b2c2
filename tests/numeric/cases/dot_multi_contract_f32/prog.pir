func @main(%a: f32[3,4,5],
           %b: f32[5,2,4],
           %c: f32[2,3,4,5],
           %d: f32[3,2,5,6]) -> (ab: f32[3,2], ab2: f32[3,2], cd: f32[2,3,4,6]) {
  %ab = dot_general %a, %b {lhs_contract=[1, 2], rhs_contract=[2, 0]} : f32[3,2]
  %ab2 = dot_general %a, %b {lhs_contract=[2, 1], rhs_contract=[0, 2]} : f32[3,2]
  %cd = dot_general %c, %d {lhs_batch=[0, 1], rhs_batch=[1, 0], lhs_contract=[3], rhs_contract=[2]} : f32[2,3,4,6]
  return %ab, %ab2, %cd
}
