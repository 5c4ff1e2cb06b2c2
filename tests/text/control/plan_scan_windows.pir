// test: plan
// A scan's step writes its stacked outputs in place through window buffers
// (views of slice i of the whole outputs): the product and the fused kernel
// write the windows directly; a slice returned as an output is copied.
func @step(%h: f32[4,4], %w: f32[4,4], %x: f32[4]) -> (f32[4,4], f32[4,4], f32[4], f32[4,4], f32[4]) {
  %y = dot_general %h, %w {lhs_contract=[1], rhs_contract=[0]} : f32[4,4]
  %xb = broadcast %x {dims=[1]} : f32[4,4]
  %z = add %y, %xb
  %t = tanh %z
  %r = reduce %t {dims=[1], kind=sum}
  return %t, %y, %x, %t, %r
}

func @main(%h: f32[4,4], %ws: f32[5,4,4], %xs: f32[5,4]) -> (h: f32[4,4], ys: f32[5,4,4], xs: f32[5,4], ts: f32[5,4,4], rs: f32[5,4]) {
  %h2, %ys, %xs2, %ts, %rs = scan @step(%h, %ws, %xs) {length=5, carries=1, reverse=true}
  return %h2, %ys, %xs2, %ts, %rs
}
