// test: eval
// max/min propagate NaN and order -0.0 below +0.0; comparisons with NaN are
// false except ne; sign keeps -0.0 and NaN.
func @main() -> (mx: f32[3], mn: f32[3], ne: pred[2], eq: pred[2], s: f32[3]) {
  %a = constant [nan, -0.0, 1.0] : f32[3]
  %b = constant [1.0, 0.0, 2.0] : f32[3]
  %mx = max %a, %b
  %mn = min %a, %b
  %n = constant [nan, 1.0] : f32[2]
  %o = constant [nan, 1.0] : f32[2]
  %ne = compare %n, %o {dir=ne}
  %eq = compare %n, %o {dir=eq}
  %v = constant [-0.0, nan, -3.5] : f32[3]
  %s = sign %v
  return %mx, %mn, %ne, %eq, %s
}
