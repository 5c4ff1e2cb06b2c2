// test: error
// vmap over a dimension the operand does not have (rank 2, in_dims=[2]).
func @f(%x: f32[3]) -> (f32[]) {
  %s = reduce %x {dims=[0], kind=sum}
  return %s
}

func @main(%x: f32[4,3]) -> (y: f32[4]) {
  %y = vmap @f(%x) {in_dims=[2], out_dims=[0]}
  return %y
}
