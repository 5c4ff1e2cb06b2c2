// test: ptx
// Integer div and rem: the PTX `div.s32`/`rem.s32` on a divisor made safe
// first (0 and -1 replaced), one kernel per result.
func @main(%a: i32[64], %b: i32[64]) -> (q: i32[64], r: i32[64]) {
  %q = div %a, %b
  %r = rem %a, %b
  return %q, %r
}
// CHECK: .visible .entry k0_q(
// CHECK: div.s32
// CHECK-NOT: rem.s32
// CHECK: .visible .entry k1_r(
// CHECK-NOT: div.s32
// CHECK: rem.s32
