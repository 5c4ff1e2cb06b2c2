func @main() -> (a: f32[2,3], b: i32[2,2], c: f32[6], d: pred[3], e: i64[3], f: u16[2,1,2], g: f64[3], h: f64[3], k: bf16[4], m: i8[3], n: f16[3], o: f32[2,1]) {
  %a = constant [[1, 2, 3], [4, 5, 6]] : f32[2,3]
  %b = constant [[1, -2], [3, -4]] : i32[2,2]
  %c = constant [inf, -inf, nan, -0.0, 1e-45, 3.4028235e38] : f32[6]
  %d = constant [true, false, true] : pred[3]
  %e = constant [9223372036854775807, -9223372036854775808, 0] : i64[3]
  %f = constant [[[1, 2]], [[3, 65535]]] : u16[2,1,2]
  %g = constant [0.1, 0.2, 0.30000000000000004] : f64[3]
  %h = constant [1, 2.5, -3] : f64[3]
  %k = constant [1.0, 3.14159, -0.5, 1e10] : bf16[4]
  %m = constant [-128, 127, 0] : i8[3]
  %n = constant [nan, 1e5, 6e-8] : f16[3]
  %o = constant [[0.5], [1.5]] : f32[2,1]
  return %a, %b, %c, %d, %e, %f, %g, %h, %k, %m, %n, %o
}
