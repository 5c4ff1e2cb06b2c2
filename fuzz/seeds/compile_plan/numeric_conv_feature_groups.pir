func @main(%x: f32[2,5,5,4],
           %k: f32[3,3,2,6],
           %d: f32[2,5,5,3],
           %kd: f32[3,3,1,6]) -> (y: f32[2,3,3,6], z: f32[2,5,5,6]) {
  %y = convolution %x, %k {dims="b01f_01io->b01f", feature_group_count=2} : f32[2,3,3,6]
  %z = convolution %d, %kd {dims="b01f_01io->b01f", padding=[[1, 1], [1, 1]], feature_group_count=3} : f32[2,5,5,6]
  return %y, %z
}
