// test: plan
// The attention output projection as this benchmark writes it: values
// [batch, heads, seq, head_dim] contracted over (heads, head_dim) with the
// weights. Heads and head_dim are not one strided dimension (seq lies between
// them), so a kernel copies the values into (batch, seq, heads, head_dim)
// order first and the product runs as GEMM in place (cuBLAS on GPUs).
func @main(%v: f32[2,4,8,16], %w: f32[4,16,32]) -> (o: f32[2,8,32]) {
  %o = dot_general %v, %w {lhs_contract=[1,3], rhs_contract=[0,1]} : f32[2,8,32]
  return %o
}
