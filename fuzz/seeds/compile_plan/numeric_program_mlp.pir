// Data-parallel x tensor-parallel MLP layer: 8 devices as a 4x2 mesh.
mesh [data=4, model=2]

func @main(%x: f32[8,12] on [data, _],
           %w: f32[12,6] on [_, model],
           %b: f32[6]    on [model]) -> (h: f32[8,6]) {
  %xw = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[8,6]
  %bb = broadcast %b {dims=[1]} : f32[8,6]
  %s  = add %xw, %bb
  %z  = constant 0.0 : f32[8,6]
  %h  = max %s, %z
  return %h
}
