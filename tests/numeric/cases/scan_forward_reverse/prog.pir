func @step(%h: f32[3], %x: f32[3]) -> (f32[3], f32[3], f32[3]) {
  %k = constant 0.5 : f32[3]
  %hk = mul %h, %k
  %h2 = add %hk, %x
  %xx = mul %x, %x
  %y = sub %h2, %xx
  return %h2, %y, %h
}

func @main(%h: f32[3],
           %xs: f32[5,3]) -> (fh: f32[3], fy: f32[5,3], fs: f32[5,3], rh: f32[3], ry: f32[5,3], rs: f32[5,3]) {
  %fh, %fy, %fs = scan @step(%h, %xs) {length=5, carries=1}
  %rh, %ry, %rs = scan @step(%h, %xs) {length=5, carries=1, reverse=true}
  return %fh, %fy, %fs, %rh, %ry, %rs
}
