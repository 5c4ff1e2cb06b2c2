func @main(%a_i64: i64[148],
           %b_i64: i64[148],
           %a_i32: i32[148],
           %b_i32: i32[148],
           %a_i16: i16[148],
           %b_i16: i16[148],
           %a_i8: i8[148],
           %b_i8: i8[148],
           %a_u64: u64[85],
           %b_u64: u64[85],
           %a_u32: u32[85],
           %b_u32: u32[85],
           %a_u16: u16[85],
           %b_u16: u16[85],
           %a_u8: u8[85],
           %b_u8: u8[85]) -> (eq_i64: pred[148], ne_i64: pred[148], lt_i64: pred[148], le_i64: pred[148], gt_i64: pred[148], ge_i64: pred[148], eq_i32: pred[148], ne_i32: pred[148], lt_i32: pred[148], le_i32: pred[148], gt_i32: pred[148], ge_i32: pred[148], eq_i16: pred[148], ne_i16: pred[148], lt_i16: pred[148], le_i16: pred[148], gt_i16: pred[148], ge_i16: pred[148], eq_i8: pred[148], ne_i8: pred[148], lt_i8: pred[148], le_i8: pred[148], gt_i8: pred[148], ge_i8: pred[148], eq_u64: pred[85], ne_u64: pred[85], lt_u64: pred[85], le_u64: pred[85], gt_u64: pred[85], ge_u64: pred[85], eq_u32: pred[85], ne_u32: pred[85], lt_u32: pred[85], le_u32: pred[85], gt_u32: pred[85], ge_u32: pred[85], eq_u16: pred[85], ne_u16: pred[85], lt_u16: pred[85], le_u16: pred[85], gt_u16: pred[85], ge_u16: pred[85], eq_u8: pred[85], ne_u8: pred[85], lt_u8: pred[85], le_u8: pred[85], gt_u8: pred[85], ge_u8: pred[85]) {
  %eq_i64 = compare %a_i64, %b_i64 {dir=eq} : pred[148]
  %ne_i64 = compare %a_i64, %b_i64 {dir=ne} : pred[148]
  %lt_i64 = compare %a_i64, %b_i64 {dir=lt} : pred[148]
  %le_i64 = compare %a_i64, %b_i64 {dir=le} : pred[148]
  %gt_i64 = compare %a_i64, %b_i64 {dir=gt} : pred[148]
  %ge_i64 = compare %a_i64, %b_i64 {dir=ge} : pred[148]
  %eq_i32 = compare %a_i32, %b_i32 {dir=eq} : pred[148]
  %ne_i32 = compare %a_i32, %b_i32 {dir=ne} : pred[148]
  %lt_i32 = compare %a_i32, %b_i32 {dir=lt} : pred[148]
  %le_i32 = compare %a_i32, %b_i32 {dir=le} : pred[148]
  %gt_i32 = compare %a_i32, %b_i32 {dir=gt} : pred[148]
  %ge_i32 = compare %a_i32, %b_i32 {dir=ge} : pred[148]
  %eq_i16 = compare %a_i16, %b_i16 {dir=eq} : pred[148]
  %ne_i16 = compare %a_i16, %b_i16 {dir=ne} : pred[148]
  %lt_i16 = compare %a_i16, %b_i16 {dir=lt} : pred[148]
  %le_i16 = compare %a_i16, %b_i16 {dir=le} : pred[148]
  %gt_i16 = compare %a_i16, %b_i16 {dir=gt} : pred[148]
  %ge_i16 = compare %a_i16, %b_i16 {dir=ge} : pred[148]
  %eq_i8 = compare %a_i8, %b_i8 {dir=eq} : pred[148]
  %ne_i8 = compare %a_i8, %b_i8 {dir=ne} : pred[148]
  %lt_i8 = compare %a_i8, %b_i8 {dir=lt} : pred[148]
  %le_i8 = compare %a_i8, %b_i8 {dir=le} : pred[148]
  %gt_i8 = compare %a_i8, %b_i8 {dir=gt} : pred[148]
  %ge_i8 = compare %a_i8, %b_i8 {dir=ge} : pred[148]
  %eq_u64 = compare %a_u64, %b_u64 {dir=eq} : pred[85]
  %ne_u64 = compare %a_u64, %b_u64 {dir=ne} : pred[85]
  %lt_u64 = compare %a_u64, %b_u64 {dir=lt} : pred[85]
  %le_u64 = compare %a_u64, %b_u64 {dir=le} : pred[85]
  %gt_u64 = compare %a_u64, %b_u64 {dir=gt} : pred[85]
  %ge_u64 = compare %a_u64, %b_u64 {dir=ge} : pred[85]
  %eq_u32 = compare %a_u32, %b_u32 {dir=eq} : pred[85]
  %ne_u32 = compare %a_u32, %b_u32 {dir=ne} : pred[85]
  %lt_u32 = compare %a_u32, %b_u32 {dir=lt} : pred[85]
  %le_u32 = compare %a_u32, %b_u32 {dir=le} : pred[85]
  %gt_u32 = compare %a_u32, %b_u32 {dir=gt} : pred[85]
  %ge_u32 = compare %a_u32, %b_u32 {dir=ge} : pred[85]
  %eq_u16 = compare %a_u16, %b_u16 {dir=eq} : pred[85]
  %ne_u16 = compare %a_u16, %b_u16 {dir=ne} : pred[85]
  %lt_u16 = compare %a_u16, %b_u16 {dir=lt} : pred[85]
  %le_u16 = compare %a_u16, %b_u16 {dir=le} : pred[85]
  %gt_u16 = compare %a_u16, %b_u16 {dir=gt} : pred[85]
  %ge_u16 = compare %a_u16, %b_u16 {dir=ge} : pred[85]
  %eq_u8 = compare %a_u8, %b_u8 {dir=eq} : pred[85]
  %ne_u8 = compare %a_u8, %b_u8 {dir=ne} : pred[85]
  %lt_u8 = compare %a_u8, %b_u8 {dir=lt} : pred[85]
  %le_u8 = compare %a_u8, %b_u8 {dir=le} : pred[85]
  %gt_u8 = compare %a_u8, %b_u8 {dir=gt} : pred[85]
  %ge_u8 = compare %a_u8, %b_u8 {dir=ge} : pred[85]
  return %eq_i64, %ne_i64, %lt_i64, %le_i64, %gt_i64, %ge_i64, %eq_i32, %ne_i32, %lt_i32, %le_i32, %gt_i32, %ge_i32, %eq_i16, %ne_i16, %lt_i16, %le_i16, %gt_i16, %ge_i16, %eq_i8, %ne_i8, %lt_i8, %le_i8, %gt_i8, %ge_i8, %eq_u64, %ne_u64, %lt_u64, %le_u64, %gt_u64, %ge_u64, %eq_u32, %ne_u32, %lt_u32, %le_u32, %gt_u32, %ge_u32, %eq_u16, %ne_u16, %lt_u16, %le_u16, %gt_u16, %ge_u16, %eq_u8, %ne_u8, %lt_u8, %le_u8, %gt_u8, %ge_u8
}
