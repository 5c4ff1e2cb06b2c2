func @main(%t: f32[3,5,2],
           %j: i64[2,3],
           %tb: bf16[2,4],
           %u: u32[4],
           %tq: pred[4,3],
           %k: i32[2,1]) -> (g: f32[3,2,3,2], gb: bf16[2,4], gq: pred[4,2,1]) {
  %g = gather %t, %j {axis=1} : f32[3,2,3,2]
  %gb = gather %tb, %u {axis=1} : bf16[2,4]
  %gq = gather %tq, %k {axis=1} : pred[4,2,1]
  return %g, %gb, %gq
}
