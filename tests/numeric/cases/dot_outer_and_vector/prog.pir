func @main(%a: f32[3],
           %b: f32[4],
           %v: f32[7],
           %w: f32[7]) -> (outer: f32[3,4], inner: f32[]) {
  %outer = dot_general %a, %b : f32[3,4]
  %inner = dot_general %v, %w {lhs_contract=[0], rhs_contract=[0]} : f32[]
  return %outer, %inner
}
