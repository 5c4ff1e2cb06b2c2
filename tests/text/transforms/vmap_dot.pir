// test: pir
// vmap of a matrix-vector product with the matrix unmapped: the batch becomes a
// free dimension of one dot_general, no transpose.
func @mv(%m: f32[3,5], %v: f32[5]) -> (f32[3]) {
  %r = dot_general %m, %v {lhs_contract=[1], rhs_contract=[0]}
  %t = tanh %r
  return %t
}

func @main(%m: f32[3,5], %vs: f32[7,5]) -> (out: f32[3,7]) {
  %r = vmap @mv(%m, %vs) {in_dims=[none, 0], out_dims=[1]} : f32[3,7]
  return %r
}
