// test: eval
// round is half away from zero, round_even half to even; a decimal literal is
// rounded once to its dtype (0.1 in bf16 and f16), and narrowing conversions
// round to nearest even.
func @main() -> (r: f32[4], re: f32[4], b: bf16[1], h: f16[1], c: bf16[2]) {
  %x = constant [0.5, 1.5, 2.5, -2.5] : f32[4]
  %r = round %x
  %re = round_even %x
  %b = constant 0.1 : bf16[1]
  %h = constant 0.1 : f16[1]
  %w = constant [1.00390625, 1.01171875] : f32[2]
  %c = convert %w : bf16[2]
  return %r, %re, %b, %h, %c
}
