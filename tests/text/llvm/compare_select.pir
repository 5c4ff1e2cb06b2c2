// test: llvm
// compare + select vectorize to a mask compare and a blend; `lt` is ordered
// (false when either side is NaN).
func @main(%a: f32[64], %b: f32[64]) -> (y: f32[64]) {
  %p = compare %a, %b {dir=lt}
  %y = select %p, %a, %b
  return %y
}
// CHECK: fcmp olt <8 x float>
// CHECK: select <8 x i1>
// CHECK: fcmp olt float
// CHECK-NEXT: select i1
