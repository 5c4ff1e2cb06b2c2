func @main(%x: f32[2,3,6,5],
           %k: f32[4,3,3,2],
           %v: f64[2,11,3],
           %kv: f64[3,3,2]) -> (y: f32[2,4,6,5], w: f64[2,5,2]) {
  %y = convolution %x, %k {dims="bf01_oi01->bf01", padding=[[1, 1], [0, 1]]} : f32[2,4,6,5]
  %w = convolution %v, %kv {dims="b0f_0io->b0f", window_strides=[2], padding=[[1, 2]], rhs_dilation=[2]} : f64[2,5,2]
  return %y, %w
}
