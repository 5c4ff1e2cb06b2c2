// test: fmt
// Reductions, contractions, windows and indexing with non-default attributes.
func @main(%x: f32[2,8,8,3], %k: f32[3,3,3,4], %m: f32[4,6], %a: f32[5,2,3], %b: f32[5,3,7], %t: f32[10,4], %idx: i32[2,3], %src: f32[4,3], %n: i32[4,6], %xn: f32[2,3,8,8], %kn: f32[4,3,3,3]) -> (s: f32[4], pr: f32[6], mx: i32[4], am: i64[6], ai: i32[4], dg: f32[5,2,7], mm: f32[4,4], cv: f32[2,4,4,4], cg: f32[2,8,8,3], rw: f32[2,3], rs: f32[4,6], sa: f32[4,6], g: f32[2,3,4], sc: f32[10,4], nand: i32[4], cb: f32[1,13,6,4], cn: f32[2,4,6,6]) {
  %s = reduce %m {dims=[1], kind=sum}
  %pr = reduce %m {dims=[0], kind=prod}
  %mx0 = reduce %n {dims=[1], kind=max}
  %mx = reduce %mx0 {dims=[], kind=min}
  %nand = reduce %n {dims=[1], kind=and}
  %am = argmax %m {dim=0} : i64[6]
  %ai = argmin %m {dim=1} : i32[4]
  %dg = dot_general %a, %b {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]}
  %mm = dot_general %m, %m {lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[1]}
  %cv = convolution %x, %k {dims="b01f_01io->b01f", window_strides=[2,2], padding=[[1,1],[1,1]], lhs_dilation=[1,1], rhs_dilation=[1,1], feature_group_count=1, batch_group_count=1}
  %kd = constant 0.5 : f32[3,3,1,3]
  %cg = convolution %x, %kd {dims="b01f_01io->b01f", padding=[[2,2],[1,1]], rhs_dilation=[2,1], feature_group_count=3}
  %cb = convolution %x, %k {dims="b01f_01io->b01f", lhs_dilation=[2,1], batch_group_count=2}
  %cn = convolution %xn, %kn {dims="bf01_oi01->bf01"}
  %rw = reduce_window %m {kind=max, window=[2,2], strides=[2,2], padding=[[0,0],[0,0]]}
  %rs = reduce_window %m {kind=sum, window=[3,3], strides=[1,1], padding=[[1,1],[1,1]]}
  %sa = select_and_scatter_add %src, %m {window=[2,2], strides=[1,2], padding=[[0,1],[0,0]]}
  %g = gather %t, %idx {axis=0}
  %upd = constant 1.0 : f32[2,3,4]
  %sc = scatter_add %t, %idx, %upd {axis=0}
  return %s, %pr, %mx, %am, %ai, %dg, %mm, %cv, %cg, %rw, %rs, %sa, %g, %sc, %nand, %cb, %cn
}
