// test: error
// Start indices are integer scalars.
func @main(%x: f32[8,8], %i: i32[], %j: f32[]) -> (y: f32[2,2]) {
  %y = dynamic_slice %x, %i, %j {sizes=[2,2]}
  return %y
}
