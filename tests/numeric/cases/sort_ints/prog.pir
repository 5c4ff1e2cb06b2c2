func @main(%x_i64: i64[3,5],
           %x_i32: i32[3,5],
           %x_i16: i16[3,5],
           %x_i8: i8[3,5],
           %x_u64: u64[3,5],
           %x_u32: u32[3,5],
           %x_u16: u16[3,5],
           %x_u8: u8[3,5]) -> (s0_i64: i64[3,5], s1_i64: i64[3,5], s0_i32: i32[3,5], s1_i32: i32[3,5], s0_i16: i16[3,5], s1_i16: i16[3,5], s0_i8: i8[3,5], s1_i8: i8[3,5], s0_u64: u64[3,5], s1_u64: u64[3,5], s0_u32: u32[3,5], s1_u32: u32[3,5], s0_u16: u16[3,5], s1_u16: u16[3,5], s0_u8: u8[3,5], s1_u8: u8[3,5]) {
  %s0_i64 = sort %x_i64 {dim=0, descending=true} : i64[3,5]
  %s1_i64 = sort %x_i64 {dim=1} : i64[3,5]
  %s0_i32 = sort %x_i32 {dim=0, descending=true} : i32[3,5]
  %s1_i32 = sort %x_i32 {dim=1} : i32[3,5]
  %s0_i16 = sort %x_i16 {dim=0, descending=true} : i16[3,5]
  %s1_i16 = sort %x_i16 {dim=1} : i16[3,5]
  %s0_i8 = sort %x_i8 {dim=0, descending=true} : i8[3,5]
  %s1_i8 = sort %x_i8 {dim=1} : i8[3,5]
  %s0_u64 = sort %x_u64 {dim=0, descending=true} : u64[3,5]
  %s1_u64 = sort %x_u64 {dim=1} : u64[3,5]
  %s0_u32 = sort %x_u32 {dim=0, descending=true} : u32[3,5]
  %s1_u32 = sort %x_u32 {dim=1} : u32[3,5]
  %s0_u16 = sort %x_u16 {dim=0, descending=true} : u16[3,5]
  %s1_u16 = sort %x_u16 {dim=1} : u16[3,5]
  %s0_u8 = sort %x_u8 {dim=0, descending=true} : u8[3,5]
  %s1_u8 = sort %x_u8 {dim=1} : u8[3,5]
  return %s0_i64, %s1_i64, %s0_i32, %s1_i32, %s0_i16, %s1_i16, %s0_i8, %s1_i8, %s0_u64, %s1_u64, %s0_u32, %s1_u32, %s0_u16, %s1_u16, %s0_u8, %s1_u8
}
