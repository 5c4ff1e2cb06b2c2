func @main(%x: f32[39]) -> (x_to_i64: i64[39], x_to_i32: i32[39], x_to_i16: i16[39], x_to_i8: i8[39], x_to_u64: u64[39], x_to_u32: u32[39], x_to_u16: u16[39], x_to_u8: u8[39]) {
  %x_to_i64 = convert %x : i64[39]
  %x_to_i32 = convert %x : i32[39]
  %x_to_i16 = convert %x : i16[39]
  %x_to_i8 = convert %x : i8[39]
  %x_to_u64 = convert %x : u64[39]
  %x_to_u32 = convert %x : u32[39]
  %x_to_u16 = convert %x : u16[39]
  %x_to_u8 = convert %x : u8[39]
  return %x_to_i64, %x_to_i32, %x_to_i16, %x_to_i8, %x_to_u64, %x_to_u32, %x_to_u16, %x_to_u8
}
