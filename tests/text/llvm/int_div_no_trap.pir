// test: llvm
// Integer div and rem never trap: a divisor of 0 or -1 is replaced by 1 before
// the `sdiv`/`srem`, then x/0 = -1, x/-1 = -x (INT_MIN/-1 wraps to INT_MIN),
// x rem 0 = x, x rem -1 = 0 are selected.
func @main(%a: i32[64], %b: i32[64]) -> (q: i32[64], r: i32[64]) {
  %q = div %a, %b
  %r = rem %a, %b
  return %q, %r
}
// CHECK: define void @k0_q(
// CHECK: icmp eq i32
// CHECK: icmp ult i32
// CHECK-NEXT: select i1
// CHECK-NEXT: sdiv i32
// CHECK-NEXT: sub i32 0,
// CHECK: select i1
// CHECK: i32 -1,
// CHECK: define void @k1_r(
// CHECK: srem i32
