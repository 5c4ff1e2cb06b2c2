// test: sharded
// The same MLP annotated only on its result: propagation runs backwards and
// every activation gets the batch split, as in dp_mlp.pir.
mesh [data=4]

func @main(%x: f32[64,32], %w1: f32[32,16], %b1: f32[16], %w2: f32[16,8]) -> (y: f32[64,8] on [data, _]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[64,16]
  %bb = broadcast %b1 {dims=[1]} : f32[64,16]
  %hb = add %h, %bb
  %z = constant 0.0 : f32[64,16]
  %r = max %hb, %z
  %y = dot_general %r, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[64,8]
  return %y
}
