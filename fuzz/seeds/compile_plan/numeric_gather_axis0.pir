func @main(%t: f32[5,3],
           %i: i32[6],
           %ti: i32[6],
           %j: i64[3,2]) -> (g: f32[6,3], gi: i32[3,2]) {
  %g = gather %t, %i {axis=0} : f32[6,3]
  %gi = gather %ti, %j {axis=0} : i32[3,2]
  return %g, %gi
}
