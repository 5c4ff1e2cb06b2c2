func @main(%a: i32[16],
           %b: u64[11],
           %c: i8[12],
           %e: u16[9]) -> (a_to_i64: i64[16], a_to_i16: i16[16], a_to_i8: i8[16], a_to_u64: u64[16], a_to_u32: u32[16], a_to_u8: u8[16], b_to_i64: i64[11], b_to_i32: i32[11], b_to_i8: i8[11], b_to_u16: u16[11], b_to_u8: u8[11], c_to_i64: i64[12], c_to_i16: i16[12], c_to_u64: u64[12], c_to_u32: u32[12], c_to_u16: u16[12], c_to_u8: u8[12], e_to_i16: i16[9], e_to_i8: i8[9], e_to_u64: u64[9], e_to_i32: i32[9]) {
  %a_to_i64 = convert %a : i64[16]
  %a_to_i16 = convert %a : i16[16]
  %a_to_i8 = convert %a : i8[16]
  %a_to_u64 = convert %a : u64[16]
  %a_to_u32 = convert %a : u32[16]
  %a_to_u8 = convert %a : u8[16]
  %b_to_i64 = convert %b : i64[11]
  %b_to_i32 = convert %b : i32[11]
  %b_to_i8 = convert %b : i8[11]
  %b_to_u16 = convert %b : u16[11]
  %b_to_u8 = convert %b : u8[11]
  %c_to_i64 = convert %c : i64[12]
  %c_to_i16 = convert %c : i16[12]
  %c_to_u64 = convert %c : u64[12]
  %c_to_u32 = convert %c : u32[12]
  %c_to_u16 = convert %c : u16[12]
  %c_to_u8 = convert %c : u8[12]
  %e_to_i16 = convert %e : i16[9]
  %e_to_i8 = convert %e : i8[9]
  %e_to_u64 = convert %e : u64[9]
  %e_to_i32 = convert %e : i32[9]
  return %a_to_i64, %a_to_i16, %a_to_i8, %a_to_u64, %a_to_u32, %a_to_u8, %b_to_i64, %b_to_i32, %b_to_i8, %b_to_u16, %b_to_u8, %c_to_i64, %c_to_i16, %c_to_u64, %c_to_u32, %c_to_u16, %c_to_u8, %e_to_i16, %e_to_i8, %e_to_u64, %e_to_i32
}
