// test: error
// The source has the shape of the max-pool output: 2x2 windows, stride 2 on 8x8 give 4x4.
func @main(%src: f32[3,3], %x: f32[8,8]) -> (y: f32[8,8]) {
  %y = select_and_scatter_add %src, %x {window=[2,2], strides=[2,2]}
  return %y
}
