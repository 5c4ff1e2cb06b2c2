func @main(%x: f32[1,3,4,2],
           %k: f32[3,3,2,2]) -> (y: f32[1,7,8,2], z: f32[1,4,5,2]) {
  %y = convolution %x, %k {dims="b01f_01io->b01f", padding=[[2, 2], [2, 1]], lhs_dilation=[2, 2]} : f32[1,7,8,2]
  %z = convolution %x, %k {dims="b01f_01io->b01f", window_strides=[2, 1], padding=[[1, 1], [0, 0]], lhs_dilation=[3, 2]} : f32[1,4,5,2]
  return %y, %z
}
