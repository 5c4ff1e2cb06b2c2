// test: sharded --auto-shard --memory-limit 1G
// No annotations but the mesh: a small weight and a large batch. The optimum
// by hand is data parallel (x split by rows, w replicated: one all-reduce of
// the 1 KiB gradient); every value of @main gets its chosen sharding written.
mesh [data=4]
func @loss(%w: f32[16,16], %x: f32[65536,16]) -> (f32[]) {
  %y = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[65536,16]
  %sq = mul %y, %y
  %l = reduce %sq {dims=[0,1], kind=sum} : f32[]
  return %l
}
func @main(%w: f32[16,16], %x: f32[65536,16]) -> (loss: f32[], w: f32[16,16]) {
  %l, %g = grad @loss(%w, %x) {wrt=[0]} : (f32[], f32[16,16])
  %lr = constant 0.01 : f32[16,16]
  %u = mul %g, %lr
  %wn = sub %w, %u
  return %l, %wn
}
