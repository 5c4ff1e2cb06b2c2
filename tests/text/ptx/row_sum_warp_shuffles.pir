// test: ptx
// A row reduction: blocks take rows (grid-stride over %ctaid.x), each thread
// sums a strided part of its row, then warp shuffles (offsets 16, 8, 4, 2, 1)
// reduce each warp, the warps' sums meet in shared memory, and one more round
// of shuffles gives the row's sum.
func @main(%x: f32[16,1000]) -> (s: f32[16]) {
  %s = reduce %x {dims=[1], kind=sum}
  return %s
}
// CHECK: .visible .entry k0_s(
// CHECK: .maxntid 256
// CHECK: .shared .align 8 .b8 k0_s_$_smem0
// CHECK: %ctaid.x;
// CHECK: ld.global.b32
// CHECK-NEXT: add.rn.f32
// CHECK: shfl.sync.down.b32
// CHECK-NEXT: add.rn.f32
// CHECK: , 1, 31, -1;
// CHECK: st.shared.b32
// CHECK: bar.sync
// CHECK: ld.shared.b32
// CHECK: shfl.sync.down.b32
// CHECK: st.global.b32
