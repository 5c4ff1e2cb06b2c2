func @main(%x: f64[47]) -> (x_to_i64: i64[47], x_to_i32: i32[47], x_to_i16: i16[47], x_to_i8: i8[47], x_to_u64: u64[47], x_to_u32: u32[47], x_to_u16: u16[47], x_to_u8: u8[47]) {
  %x_to_i64 = convert %x : i64[47]
  %x_to_i32 = convert %x : i32[47]
  %x_to_i16 = convert %x : i16[47]
  %x_to_i8 = convert %x : i8[47]
  %x_to_u64 = convert %x : u64[47]
  %x_to_u32 = convert %x : u32[47]
  %x_to_u16 = convert %x : u16[47]
  %x_to_u8 = convert %x : u8[47]
  return %x_to_i64, %x_to_i32, %x_to_i16, %x_to_i8, %x_to_u64, %x_to_u32, %x_to_u16, %x_to_u8
}
