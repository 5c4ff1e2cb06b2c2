// test: ptx
// exp comes from CUDA's libdevice (`__nv_expf`), linked and inlined: no call
// remains, only its range reduction (fma) and `ex2.approx` on the reduced
// argument (libdevice with FTZ off: the final scaling keeps subnormals).
// Needs libdevice (bash scripts/ptxas.sh installs it into .venv).
func @main(%x: f32[512]) -> (y: f32[512]) {
  %y = exp %x
  return %y
}
// CHECK-NOT: call
// CHECK: .visible .entry k0_y(
// CHECK: fma.rn.f32
// CHECK: ex2.approx
// CHECK-NOT: call
// CHECK-NOT: .extern
