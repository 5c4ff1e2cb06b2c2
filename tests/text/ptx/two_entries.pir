// test: ptx
// One `.entry` per kernel, in plan order: the max reduction (with shuffles),
// then the elementwise negation.
func @main(%x: f32[64]) -> (s: f32[], y: f32[64]) {
  %s = reduce %x {dims=[0], kind=max}
  %y = neg %x
  return %s, %y
}
// CHECK: .visible .entry k0_s(
// CHECK: shfl.sync.down.b32
// CHECK: .visible .entry k1_y(
// CHECK-NOT: shfl
// CHECK: neg.f32
// CHECK-NOT: .entry
