func @main(%a: i32[3,5],
           %b: i32[5,4],
           %c: u8[3,4],
           %d: u8[4,2]) -> (ab: i32[3,4], cd: u8[3,2]) {
  %ab = dot_general %a, %b {lhs_contract=[1], rhs_contract=[0]} : i32[3,4]
  %cd = dot_general %c, %d {lhs_contract=[1], rhs_contract=[0]} : u8[3,2]
  return %ab, %cd
}
