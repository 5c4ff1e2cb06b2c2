func @inc(%x: f32[3], %k: i32[]) -> (f32[3], i32[]) {
  %one = constant 1.0 : f32[3]
  %y = add %x, %one
  return %y, %k
}

func @dbl(%x: f32[3], %k: i32[]) -> (f32[3], i32[]) {
  %y = add %x, %x
  %two = constant 2 : i32[]
  %k2 = mul %k, %two
  return %y, %k2
}

func @flip(%x: f32[3], %k: i32[]) -> (f32[3], i32[]) {
  %y = neg %x
  %k2 = neg %k
  return %y, %k2
}

func @main(%x: f32[3],
           %k: i32[],
           %i_neg: i32[],
           %i_one: i32[],
           %i_big: i32[],
           %i_u32: u32[],
           %i_u8: u8[],
           %i_zero: u8[],
           %i_imin: i64[],
           %i_imax: i64[],
           %i_u64: u64[],
           %i_one_branch: i32[]) -> (y_neg: f32[3], k_neg: i32[], y_one: f32[3], k_one: i32[], y_big: f32[3], k_big: i32[], y_u32: f32[3], k_u32: i32[], y_u8: f32[3], k_u8: i32[], y_zero: f32[3], k_zero: i32[], y_imin: f32[3], k_imin: i32[], y_imax: f32[3], k_imax: i32[], y_u64: f32[3], k_u64: i32[], y_only: f32[3], k_only: i32[]) {
  %y_neg, %k_neg = switch %i_neg, @inc, @dbl, @flip(%x, %k)
  %y_one, %k_one = switch %i_one, @inc, @dbl, @flip(%x, %k)
  %y_big, %k_big = switch %i_big, @inc, @dbl, @flip(%x, %k)
  %y_u32, %k_u32 = switch %i_u32, @inc, @dbl, @flip(%x, %k)
  %y_u8, %k_u8 = switch %i_u8, @inc, @dbl, @flip(%x, %k)
  %y_zero, %k_zero = switch %i_zero, @inc, @dbl, @flip(%x, %k)
  %y_imin, %k_imin = switch %i_imin, @inc, @dbl, @flip(%x, %k)
  %y_imax, %k_imax = switch %i_imax, @inc, @dbl, @flip(%x, %k)
  %y_u64, %k_u64 = switch %i_u64, @inc, @dbl, @flip(%x, %k)
  %y_only, %k_only = switch %i_one_branch, @dbl(%x, %k)
  return %y_neg, %k_neg, %y_one, %k_one, %y_big, %k_big, %y_u32, %k_u32, %y_u8, %k_u8, %y_zero, %k_zero, %y_imin, %k_imin, %y_imax, %k_imax, %y_u64, %k_u64, %y_only, %k_only
}
