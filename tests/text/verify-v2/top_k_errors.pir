// test: error
// top_k: 1 <= k <= the last dimension's size, an operand of rank >= 1; its indices
// are i32.
func @main(%x: f32[4,3], %s: f32[]) -> (y: f32[4,3]) {
  %a, %b = top_k %x {k=4}
  %c, %d = top_k %s {k=1}
  %e, %f = top_k %x {k=2} : (f32[4,2], i64[4,2])
  %g, %h = top_k %x {k=0}
  return %x
}
