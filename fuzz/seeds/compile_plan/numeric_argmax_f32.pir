func @main(%x: f32[6,7]) -> (x_argmax1_i32: i32[6], x_argmin1_i32: i32[6], x_argmax0_i64: i64[7], x_argmin0_i64: i64[7]) {
  %x_argmax1_i32 = argmax %x {dim=1} : i32[6]
  %x_argmin1_i32 = argmin %x {dim=1} : i32[6]
  %x_argmax0_i64 = argmax %x {dim=0} : i64[7]
  %x_argmin0_i64 = argmin %x {dim=0} : i64[7]
  return %x_argmax1_i32, %x_argmin1_i32, %x_argmax0_i64, %x_argmin0_i64
}
