func @main(%x: f16[16],
           %y: bf16[17]) -> (x_to_i64: i64[16], x_to_i32: i32[16], x_to_i16: i16[16], x_to_i8: i8[16], x_to_u16: u16[16], x_to_u8: u8[16], y_to_i64: i64[17], y_to_i32: i32[17], y_to_i16: i16[17], y_to_i8: i8[17], y_to_u64: u64[17], y_to_u16: u16[17]) {
  %x_to_i64 = convert %x : i64[16]
  %x_to_i32 = convert %x : i32[16]
  %x_to_i16 = convert %x : i16[16]
  %x_to_i8 = convert %x : i8[16]
  %x_to_u16 = convert %x : u16[16]
  %x_to_u8 = convert %x : u8[16]
  %y_to_i64 = convert %y : i64[17]
  %y_to_i32 = convert %y : i32[17]
  %y_to_i16 = convert %y : i16[17]
  %y_to_i8 = convert %y : i8[17]
  %y_to_u64 = convert %y : u64[17]
  %y_to_u16 = convert %y : u16[17]
  return %x_to_i64, %x_to_i32, %x_to_i16, %x_to_i8, %x_to_u16, %x_to_u8, %y_to_i64, %y_to_i32, %y_to_i16, %y_to_i8, %y_to_u64, %y_to_u16
}
