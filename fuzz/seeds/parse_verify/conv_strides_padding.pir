func @main(%x: f32[2,7,6,3],
           %k: f32[3,2,3,4]) -> (y: f32[2,4,3,4], z: f32[2,3,5,4]) {
  %y = convolution %x, %k {dims="b01f_01io->b01f", window_strides=[2, 2], padding=[[1, 1], [1, 0]]} : f32[2,4,3,4]
  %z = convolution %x, %k {dims="b01f_01io->b01f", window_strides=[3, 1], padding=[[0, 2], [-1, 1]]} : f32[2,3,5,4]
  return %y, %z
}
