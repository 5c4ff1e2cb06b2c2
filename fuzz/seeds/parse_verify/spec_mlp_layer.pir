// Data-parallel x tensor-parallel MLP layer: 8 devices as a 4x2 mesh.
mesh [data=4, model=2]

func @main(%x: f32[256,784] on [data, _],
           %w: f32[784,512] on [_, model],
           %b: f32[512]     on [model]) -> (h: f32[256,512]) {
  %xw = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[256,512]
  %bb = broadcast %b {dims=[1]} : f32[256,512]
  %s  = add %xw, %bb
  %z  = constant 0.0 : f32[256,512]
  %h  = max %s, %z
  return %h
}
