// test: ptx
// `mul` then `add` stay `mul.rn` and `add.rn` on the GPU too: ptxas would fuse
// a plain mul/add pair into an fma, the `.rn` forms it must not.
func @main(%a: f32[256], %b: f32[256], %c: f32[256]) -> (r: f32[256]) {
  %m = mul %a, %b
  %r = add %m, %c
  return %r
}
// CHECK-NOT: fma
// CHECK: mul.rn.f32
// CHECK-NEXT: add.rn.f32
// CHECK-NOT: fma
