func @main(%b: f32[3,5],
           %i: i32[2,2],
           %u: f32[3,2,2],
           %bb: bf16[2,4,2],
           %ib: u32[4],
           %ub: bf16[2,4,2],
           %bd: f64[4],
           %id: i32[5],
           %ud: f64[5]) -> (r: f32[3,5], rb: bf16[2,4,2], rd: f64[4]) {
  %r = scatter_add %b, %i, %u {axis=1} : f32[3,5]
  %rb = scatter_add %bb, %ib, %ub {axis=1} : bf16[2,4,2]
  %rd = scatter_add %bd, %id, %ud {axis=0} : f64[4]
  return %r, %rb, %rd
}
