// test: plan
// An elementwise chain with a transpose and a broadcast in the middle is one
// loop kernel; the matmul is a library call; a value used twice (%t) is stored
// once instead of being recomputed.
func @main(%a: f32[16,8], %b: f32[8,16], %c: f32[16]) -> (y: f32[16,16], z: f32[16,16]) {
  %at = transpose %a {perm=[1,0]} : f32[8,16]
  %s = add %at, %b
  %t = tanh %s
  %cb = broadcast %c {dims=[1]} : f32[8,16]
  %u = mul %t, %cb
  %v = exp %t
  %w = add %u, %v
  %y = dot_general %w, %b {lhs_contract=[0], rhs_contract=[0]} : f32[16,16]
  %z = dot_general %t, %b {lhs_contract=[0], rhs_contract=[0]} : f32[16,16]
  return %y, %z
}
