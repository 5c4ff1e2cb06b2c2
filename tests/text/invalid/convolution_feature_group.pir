// test: error
// 6 input features with feature_group_count=2 need a kernel input feature of 3, not 2.
func @main(%x: f32[1,8,8,6], %k: f32[3,3,2,4]) -> (y: f32[1,6,6,4]) {
  %y = convolution %x, %k {dims="b01f_01io->b01f", feature_group_count=2}
  return %y
}
