// test: error
// A slice cannot be larger than the array.
func @main(%x: f32[8,8], %i: i32[], %j: i32[]) -> (y: f32[2,9]) {
  %y = dynamic_slice %x, %i, %j {sizes=[2,9]}
  return %y
}
