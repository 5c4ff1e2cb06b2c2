func @main(%x: f32[2,5,5,3],
           %dy: f32[2,3,3,4]) -> (dk: f32[3,3,3,4]) {
  %dk = convolution %x, %dy {dims="f01b_i01o->01bf"} : f32[3,3,3,4]
  return %dk
}
