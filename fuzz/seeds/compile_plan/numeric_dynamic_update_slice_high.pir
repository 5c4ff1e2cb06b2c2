func @main(%x: f32[5,7],
           %u: f32[2,3],
           %q: pred[3,6],
           %v: pred[1,4],
           %i: i32[],
           %j: i32[]) -> (y: f32[5,7], r: pred[3,6]) {
  %y = dynamic_update_slice %x, %u, %i, %j : f32[5,7]
  %r = dynamic_update_slice %q, %v, %i, %j : pred[3,6]
  return %y, %r
}
