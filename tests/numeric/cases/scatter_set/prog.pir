func @main(%b: f32[5,3],
           %i: i32[9],
           %u: f32[9,3],
           %bb: bf16[2,4],
           %ib: u32[3,2],
           %ub: bf16[2,3,2],
           %bi: i32[4],
           %ii: i64[7],
           %ui: i32[7],
           %b8: u8[2,2],
           %i8x: u8[3],
           %u8x: u8[2,3],
           %bq: pred[4],
           %iq: i32[5],
           %uq: pred[5]) -> (r: f32[5,3], rb: bf16[2,4], ri: i32[4], r8: u8[2,2], rq: pred[4]) {
  %r = scatter %b, %i, %u {axis=0, kind=set} : f32[5,3]
  %rb = scatter %bb, %ib, %ub {axis=1, kind=set} : bf16[2,4]
  %ri = scatter %bi, %ii, %ui {axis=0, kind=set} : i32[4]
  %r8 = scatter %b8, %i8x, %u8x {axis=1, kind=set} : u8[2,2]
  %rq = scatter %bq, %iq, %uq {axis=0, kind=set} : pred[4]
  return %r, %rb, %ri, %r8, %rq
}
