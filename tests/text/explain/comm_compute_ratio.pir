// test: explain --device-gflops 0.5 --device-gbps 1000000 --link-gbps 0.768 --link-latency-us 0
// The communication/compute block, with peaks chosen so that every figure is
// checked by hand. Each of the 4 devices multiplies x's 8x16 block by w's
// 16x16 block (the contraction is split over data): 2*8*16*16 = 4096 FLOP, at
// 0.5 GFLOP/s 8.192 us (its 2048 bytes at 10^6 GB/s take no time). The partial
// sums travel in one all_reduce of y's f32[8,16], 512 bytes: ring
// 2*(4-1)/4*512 = 768 B per device, at 0.768 GB/s and no latency 1 us. So
// 1:8.19, within the seed's 1:5 to 1:10.
mesh [data=4]

func @main(%x: f32[8,64] on [_, data], %w: f32[64,16] on [data, _]) -> (y: f32[8,16]) {
  %y = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]}
  return %y
}

// CHECK: communication/compute per step (cost model; cpu peaks 0.5 GFLOP/s, 1000000 GB/s per device; link 0.768 GB/s, 0 us per message):
// CHECK-NEXT:   compute      ~8.19 us (4.1 kFLOP, 2.05 kB moved; each step at its roofline)
// CHECK-NEXT:   collectives  ~1 us (768 B per device in 1 collective, ring formulas)
// CHECK-NEXT:   ratio 1:8.19 (communication:compute) — the seed's rule of thumb keeps it between 1:5 and 1:10; within the range
// CHECK-NOT: while loop
