func @main(%x: f32[4,5,5,2],
           %k: f32[3,3,2,4]) -> (y: f32[2,3,3,4]) {
  %y = convolution %x, %k {dims="b01f_01io->b01f", batch_group_count=2} : f32[2,3,3,4]
  return %y
}
