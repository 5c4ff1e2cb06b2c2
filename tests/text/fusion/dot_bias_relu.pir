// test: plan
// A dense layer: the matmul is a library call (GEMM), and the bias broadcast,
// the add and the relu after it are one loop kernel reading the GEMM's output.
func @main(%x: f32[8,16], %w: f32[16,4], %b: f32[4]) -> (y: f32[8,4]) {
  %h = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]}
  %bb = broadcast %b {dims=[1]} : f32[8,4]
  %a = add %h, %bb
  %z = constant 0.0 : f32[8,4]
  %y = max %a, %z
  return %y
}
