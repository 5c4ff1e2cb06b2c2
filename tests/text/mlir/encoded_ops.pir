// test: mlir
// Ops without an exact upstream op are calls of private declarations named
// after the op (pir.op, pir.attrs): sort, top_k, scatter, integer div (x/0 = -1
// in PIR), a bf16 sum (accumulated in f32 in PIR); batch matmul, u32 max and
// pred compare map to upstream ops.
func @main(%k: f32[4,8], %i: i32[4,8], %u: u32[4,8], %h: bf16[4,8], %a: f32[2,4,8], %c: f32[2,8,3]) -> (f32[4,8], i32[4,8], f32[4,4], i32[4,4], i32[4,8], u32[4,8], bf16[4], f32[2,4,3], pred[4,8]) {
  %ks, %is = sort %k, %i {dim=1} : (f32[4,8], i32[4,8])
  %v, %x = top_k %k {k=4} : (f32[4,4], i32[4,4])
  %q = div %i, %i : i32[4,8]
  %m = max %u, %u : u32[4,8]
  %t = reduce %h {dims=[1], kind=sum} : bf16[4]
  %bm = dot_general %a, %c {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]} : f32[2,4,3]
  %p = compare %u, %m {dir=lt} : pred[4,8]
  return %ks, %is, %v, %x, %q, %m, %t, %bm, %p
}
