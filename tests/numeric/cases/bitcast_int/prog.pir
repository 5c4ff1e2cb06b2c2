func @main(%a: i32[12],
           %b: u32[9],
           %c: u8[9],
           %d: i64[12],
           %e: i16[12],
           %f: u64[9]) -> (a_u32: u32[12], b_i32: i32[9], c_i8: i8[9], d_u64: u64[12], e_u16: u16[12], f_i64: i64[9]) {
  %a_u32 = bitcast_convert %a : u32[12]
  %b_i32 = bitcast_convert %b : i32[9]
  %c_i8 = bitcast_convert %c : i8[9]
  %d_u64 = bitcast_convert %d : u64[12]
  %e_u16 = bitcast_convert %e : u16[12]
  %f_i64 = bitcast_convert %f : i64[9]
  return %a_u32, %b_i32, %c_i8, %d_u64, %e_u16, %f_i64
}
