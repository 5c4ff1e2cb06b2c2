func @main() -> (f32bits: u32[], f64bits: i64[], f16bits: u16[], bf16bits: u16[]) {
  %a = constant nan : f32[]
  %ab = bitcast_convert %a : u32[]
  %as = constant 22 : u32[]
  %f32bits = shr %ab, %as : u32[]
  %b = constant nan : f64[]
  %bb = bitcast_convert %b : i64[]
  %bs = constant 51 : i64[]
  %f64bits = shr %bb, %bs : i64[]
  %c = constant nan : f16[]
  %cb = bitcast_convert %c : u16[]
  %cs = constant 9 : u16[]
  %f16bits = shr %cb, %cs : u16[]
  %d = constant nan : bf16[]
  %db = bitcast_convert %d : u16[]
  %ds = constant 6 : u16[]
  %bf16bits = shr %db, %ds : u16[]
  return %f32bits, %f64bits, %f16bits, %bf16bits
}
