// test: error
// The update must fit inside the operand.
func @main(%x: f32[4], %u: f32[5], %i: i32[]) -> (y: f32[4]) {
  %y = dynamic_update_slice %x, %u, %i
  return %y
}
