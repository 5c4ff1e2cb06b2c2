func @main() -> (a: f32[3,5], b: i32[3,5], c: u8[2,3,4], d: i64[2,3,4], e: f64[7], f: u64[2,3], g: i8[5,2], h: f16[2,3], k: u16[4,2], m: i16[1,2,6], n: u32[3], o: bf16[2,5,2]) {
  %a = iota {dim=0} : f32[3,5]
  %b = iota {dim=1} : i32[3,5]
  %c = iota {dim=2} : u8[2,3,4]
  %d = iota {dim=1} : i64[2,3,4]
  %e = iota {dim=0} : f64[7]
  %f = iota {dim=1} : u64[2,3]
  %g = iota {dim=0} : i8[5,2]
  %h = iota {dim=1} : f16[2,3]
  %k = iota {dim=0} : u16[4,2]
  %m = iota {dim=2} : i16[1,2,6]
  %n = iota {dim=0} : u32[3]
  %o = iota {dim=1} : bf16[2,5,2]
  return %a, %b, %c, %d, %e, %f, %g, %h, %k, %m, %n, %o
}
