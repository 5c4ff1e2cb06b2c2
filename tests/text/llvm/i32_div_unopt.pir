// test: llvm-unopt
// Integer division with the spec's rules (x/0 = -1, INT_MIN/-1 = INT_MIN): no trap.
// The IR as pjc's lowering builds it, before LLVM's O3 pipeline.
func @main(%a: i32[4], %b: i32[4]) -> (r: i32[4]) {
  %r = div %a, %b
  return %r
}
