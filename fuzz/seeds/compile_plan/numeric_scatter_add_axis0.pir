func @main(%b: f32[5,3],
           %i: i32[6],
           %u: f32[6,3],
           %bi: i32[4],
           %ii: i64[2,2],
           %ui: i32[2,2]) -> (r: f32[5,3], ri: i32[4]) {
  %r = scatter_add %b, %i, %u {axis=0} : f32[5,3]
  %ri = scatter_add %bi, %ii, %ui {axis=0} : i32[4]
  return %r, %ri
}
