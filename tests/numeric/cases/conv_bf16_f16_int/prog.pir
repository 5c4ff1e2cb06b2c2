func @main(%x: bf16[1,5,5,2],
           %k: bf16[3,3,2,2],
           %h: f16[1,4,4,2],
           %kh: f16[2,2,2,3],
           %xi: i32[1,4,4,2],
           %ki: i32[2,2,2,2]) -> (y: bf16[1,5,5,2], y32: f32[1,3,3,2], z: f16[1,2,2,3], w: i32[1,3,3,2]) {
  %y = convolution %x, %k {dims="b01f_01io->b01f", padding=[[1, 1], [1, 1]]} : bf16[1,5,5,2]
  %y32 = convolution %x, %k {dims="b01f_01io->b01f"} : f32[1,3,3,2]
  %z = convolution %h, %kh {dims="b01f_01io->b01f", window_strides=[2, 2]} : f16[1,2,2,3]
  %w = convolution %xi, %ki {dims="b01f_01io->b01f"} : i32[1,3,3,2]
  return %y, %y32, %z, %w
}
