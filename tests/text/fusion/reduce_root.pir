// test: plan
// A sum of squares: the square is fused into the reduction kernel (input
// fusion), so %sq never exists in memory; the kernel's root is the reduction.
func @main(%x: f32[6,32]) -> (s: f32[6]) {
  %sq = mul %x, %x
  %s = reduce %sq {dims=[1], kind=sum}
  return %s
}
