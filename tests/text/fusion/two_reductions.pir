// test: plan
// A reduction of a reduction: two reduction kernels, the first one's result
// stored for the second (a reduction is never recomputed inside another).
func @main(%x: f32[4,5,6]) -> (s: f32[4]) {
  %a = reduce %x {dims=[2], kind=sum}
  %e = exp %a
  %s = reduce %e {dims=[1], kind=max}
  return %s
}
