// test: ptx
// Integer division with the spec's rules (x/0 = -1, INT_MIN/-1 = INT_MIN): no trap.
// The sm_90 PTX, precisely (moved from pjc-codegen's snapshots).
func @main(%a: i32[4], %b: i32[4]) -> (r: i32[4]) {
  %r = div %a, %b
  return %r
}
