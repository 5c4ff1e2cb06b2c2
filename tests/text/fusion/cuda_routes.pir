// test: plan --device cuda
// Where every step runs on the CUDA backend: cuBLAS takes the f32 product in
// place and the bf16 one (GemmEx, computing in f32); the convolution is
// cuDNN's forward call (its HWIO kernel copied into KRSC order first);
// scatter_add runs as its device kernel; argmax and select_and_scatter_add are kernel sequences on every
// backend; axis_index loads this device's coordinate from an axis-index buffer.
mesh [x=2]

spmd func @main(%a: f32[8,16], %b: f32[16,4], %h: bf16[4,8], %g: bf16[8,3],
                %img: f32[1,6,6,2], %k: f32[3,3,2,4], %base: f32[5,3], %idx: i32[4], %upd: f32[4,3])
    -> (mm: f32[8,4], hb: f32[4,3], cv: f32[1,4,4,4], sa: f32[5,3], am: i32[8], gp: f32[1,6,6,2], ix: i32[]) {
  %mm = dot_general %a, %b {lhs_contract=[1], rhs_contract=[0]} : f32[8,4]
  %hb = dot_general %h, %g {lhs_contract=[1], rhs_contract=[0]} : f32[4,3]
  %cv = convolution %img, %k {dims="b01f_01io->b01f"} : f32[1,4,4,4]
  %sa = scatter_add %base, %idx, %upd {axis=0} : f32[5,3]
  %am = argmax %a {dim=1} : i32[8]
  %mp = reduce_window %img {kind=max, window=[1,2,2,1], strides=[1,2,2,1]} : f32[1,3,3,2]
  %gp = select_and_scatter_add %mp, %img {window=[1,2,2,1], strides=[1,2,2,1]} : f32[1,6,6,2]
  %i0 = axis_index {axis=x} : i32[]
  %ix = all_reduce %i0 {axes=[x], kind=max}
  return %mm, %hb, %cv, %sa, %am, %gp, %ix
}
