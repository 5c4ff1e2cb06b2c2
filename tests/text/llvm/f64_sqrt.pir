// test: llvm
// f64 kernels vectorize 4 wide; sqrt is LLVM's correctly rounded intrinsic.
func @main(%a: f64[256]) -> (y: f64[256]) {
  %s = sqrt %a
  %y = mul %s, %a
  return %y
}
// CHECK: load <4 x double>
// CHECK: @llvm.sqrt.v4f64(<4 x double>
// CHECK-NEXT: fmul <4 x double>
// CHECK: store <4 x double>
