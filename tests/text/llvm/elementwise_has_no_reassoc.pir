// test: llvm
// Elementwise arithmetic carries no fast-math flag at all: the same sums in the
// same order as the interpreter.
func @main(%a: f32[64], %b: f32[64], %c: f32[64]) -> (r: f32[64]) {
  %s = add %a, %b
  %r = add %s, %c
  return %r
}
// CHECK-NOT: reassoc
// CHECK-NOT: fast
// CHECK: fadd <8 x float>
// CHECK-NOT: reassoc
// CHECK-NOT: fast
