// test: plan
// Softmax: the row max and the row sum are reduction kernels with their
// producers fused in (input fusion); exp of the shifted logits is computed once
// and stored, because both the sum and the division read it; the division
// fuses the broadcast of the sum.
func @main(%x: f32[8,10]) -> (p: f32[8,10]) {
  %m = reduce %x {dims=[1], kind=max} : f32[8]
  %mb = broadcast %m {dims=[0]} : f32[8,10]
  %d = sub %x, %mb
  %e = exp %d
  %s = reduce %e {dims=[1], kind=sum} : f32[8]
  %sb = broadcast %s {dims=[0]} : f32[8,10]
  %p = div %e, %sb
  return %p
}
