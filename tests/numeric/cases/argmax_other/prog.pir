func @main(%i: i32[4,6],
           %u: u8[4,6],
           %b: bf16[3,5],
           %d: f64[6]) -> (i_argmax0_i32: i32[6], i_argmin0_i32: i32[6], i_argmax1_i64: i64[4], i_argmin1_i64: i64[4], u_argmax1_i32: i32[4], u_argmin1_i32: i32[4], b_argmax1_i32: i32[3], b_argmin1_i32: i32[3], b_argmax0_i32: i32[5], b_argmin0_i32: i32[5], d_argmax0_i64: i64[], d_argmin0_i64: i64[]) {
  %i_argmax0_i32 = argmax %i {dim=0} : i32[6]
  %i_argmin0_i32 = argmin %i {dim=0} : i32[6]
  %i_argmax1_i64 = argmax %i {dim=1} : i64[4]
  %i_argmin1_i64 = argmin %i {dim=1} : i64[4]
  %u_argmax1_i32 = argmax %u {dim=1} : i32[4]
  %u_argmin1_i32 = argmin %u {dim=1} : i32[4]
  %b_argmax1_i32 = argmax %b {dim=1} : i32[3]
  %b_argmin1_i32 = argmin %b {dim=1} : i32[3]
  %b_argmax0_i32 = argmax %b {dim=0} : i32[5]
  %b_argmin0_i32 = argmin %b {dim=0} : i32[5]
  %d_argmax0_i64 = argmax %d {dim=0} : i64[]
  %d_argmin0_i64 = argmin %d {dim=0} : i64[]
  return %i_argmax0_i32, %i_argmin0_i32, %i_argmax1_i64, %i_argmin1_i64, %u_argmax1_i32, %u_argmin1_i32, %b_argmax1_i32, %b_argmin1_i32, %b_argmax0_i32, %b_argmin0_i32, %d_argmax0_i64, %d_argmin0_i64
}
