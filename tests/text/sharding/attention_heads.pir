// test: sharded
// Attention with heads split over model: scores, softmax and the weighted sum
// all keep the head split; the output projection contracts over heads.
mesh [data=2, model=4]

func @main(%q: f32[4,8,16,32] on [data, model, _, _], %k: f32[4,8,16,32] on [data, model, _, _], %v: f32[4,8,16,32] on [data, model, _, _], %wo: f32[8,32,64] on [model, _, _]) -> (o: f32[4,16,64] on [data, _, _]) {
  %s = dot_general %q, %k {lhs_batch=[0,1], rhs_batch=[0,1], lhs_contract=[3], rhs_contract=[3]} : f32[4,8,16,16]
  %m = reduce %s {dims=[3], kind=max} : f32[4,8,16]
  %mb = broadcast %m {dims=[0,1,2]} : f32[4,8,16,16]
  %d = sub %s, %mb
  %e = exp %d
  %z = reduce %e {dims=[3], kind=sum} : f32[4,8,16]
  %zb = broadcast %z {dims=[0,1,2]} : f32[4,8,16,16]
  %p = div %e, %zb
  %c = dot_general %p, %v {lhs_batch=[0,1], rhs_batch=[0,1], lhs_contract=[3], rhs_contract=[2]} : f32[4,8,16,32]
  %o = dot_general %c, %wo {lhs_contract=[1,3], rhs_contract=[0,1]} : f32[4,16,64]
  return %o
}
