// test: ptx
// float -> int: `cvt.rzi.s32.f32` truncates toward zero, saturates and maps NaN
// to 0 by definition, exactly the spec's convert.
func @main(%x: f32[64]) -> (y: i32[64]) {
  %y = convert %x : i32[64]
  return %y
}
// CHECK: .visible .entry k0_y(
// CHECK: cvt.rzi.s32.f32
