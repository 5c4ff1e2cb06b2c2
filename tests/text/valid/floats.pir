// test: fmt
// Float literals print in the shortest form that reads back as the same value.
func @main() -> (a: f32[8], b: f64[6], c: bf16[4], d: f16[4], e: f32[3], s: f64[]) {
  %a = constant [0.00001, 1e16, -0.0, inf, -inf, nan, 0.1, 123456.5] : f32[8]
  %b = constant [1.0e-5, 1.5e300, 0.0001, 1e15, 2.5E-3, 3] : f64[6]
  %c = constant [0.1, 3.14159, 1e-8, 65504] : bf16[4]
  %d = constant [0.1, 3.14159, 6.1e-5, 65504] : f16[4]
  %e = constant [16777217, -7, 1.00000001] : f32[3]
  %s = constant -2.5e-3 : f64[]
  return %a, %b, %c, %d, %e, %s
}
