// test: error
// Only float operands have gradients; operand 1 is i32.
func @f(%w: f32[4], %idx: i32[]) -> (l: f32[]) {
  %e = dynamic_slice %w, %idx {sizes=[1]}
  %l = reshape %e : f32[]
  return %l
}

func @main(%w: f32[4], %idx: i32[]) -> (l: f32[], gw: f32[4], gi: i32[]) {
  %l, %gw, %gi = grad @f(%w, %idx) {wrt=[0, 1]} : (f32[], f32[4], i32[])
  return %l, %gw, %gi
}
