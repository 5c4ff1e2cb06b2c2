func @main(%x: f32[1,5,5,2],
           %k: f32[3,3,2,3]) -> (y: f32[1,3,3,3]) {
  %y = convolution %x, %k {dims="b01f_01io->b01f"} : f32[1,3,3,3]
  return %y
}
