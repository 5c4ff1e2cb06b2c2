// test: error
// A spmd func result declared replicated ([_]) that the verifier cannot prove
// equal on every device (a per-device partial sum, no all_reduce).
mesh [data=2]

spmd func @main(%x: f32[2] on [data]) -> (s: f32[] on []) {
  %s = reduce %x {dims=[0], kind=sum}
  return %s
}
