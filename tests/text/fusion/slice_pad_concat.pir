// test: plan
// Data movement (slice, pad, concat) is index arithmetic inside the consuming
// kernel, not separate copies.
func @main(%x: f32[10], %y: f32[4]) -> (z: f32[12]) {
  %s = slice %x {start=[2], limit=[8]}
  %zero = constant 0.0 : f32[]
  %p = pad %y, %zero {low=[1], high=[1], interior=[0]}
  %c = concat %s, %p {dim=0}
  %z = neg %c
  return %z
}
