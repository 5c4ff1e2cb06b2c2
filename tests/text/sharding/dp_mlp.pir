// test: sharded
// Data parallel: only the batch is split; every activation follows it, the
// weights stay replicated.
mesh [data=4]

func @main(%x: f32[64,32] on [data, _], %w1: f32[32,16], %b1: f32[16], %w2: f32[16,8]) -> (y: f32[64,8] on [data, _]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[64,16]
  %bb = broadcast %b1 {dims=[1]} : f32[64,16]
  %hb = add %h, %bb
  %z = constant 0.0 : f32[64,16]
  %r = max %hb, %z
  %y = dot_general %r, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[64,8]
  return %y
}
