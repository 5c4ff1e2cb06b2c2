func @main(%x: f32[2,7,7,2],
           %k: f32[3,2,2,3]) -> (y: f32[2,3,4,3], z: f32[2,4,4,3]) {
  %y = convolution %x, %k {dims="b01f_01io->b01f", rhs_dilation=[2, 3]} : f32[2,3,4,3]
  %z = convolution %x, %k {dims="b01f_01io->b01f", window_strides=[2, 2], padding=[[2, 2], [1, 1]], rhs_dilation=[2, 1]} : f32[2,4,4,3]
  return %y, %z
}
