// test: ptx
// An elementwise kernel is one `.entry` with a grid-stride loop (block and grid
// sizes from %ntid/%nctaid) over 4-float vector accesses, then a scalar tail;
// the adds round to nearest (`.rn`).
func @main(%a: f32[1024], %b: f32[1024]) -> (r: f32[1024]) {
  %r = add %a, %b
  return %r
}
// CHECK: .target sm_90
// CHECK: .visible .entry k0_r(
// CHECK: %ntid.x;
// CHECK: %ctaid.x;
// CHECK: %nctaid.x;
// CHECK: ld.global.v4.b32
// CHECK: add.rn.f32
// CHECK: st.global.v4.b32
// CHECK: ld.global.b32
// CHECK: add.rn.f32
// CHECK: st.global.b32
