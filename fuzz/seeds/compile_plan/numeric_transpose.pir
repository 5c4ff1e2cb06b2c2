func @main(%x: f32[2,3,4],
           %u: u16[3,5],
           %b: bf16[2,3,1,2],
           %q: pred[2,3]) -> (a: f32[4,2,3], c: f32[3,4,2], d: f32[2,3,4], e: u16[5,3], f: bf16[2,3,2,1], g: pred[3,2]) {
  %a = transpose %x {perm=[2, 0, 1]} : f32[4,2,3]
  %c = transpose %x {perm=[1, 2, 0]} : f32[3,4,2]
  %d = transpose %x {perm=[0, 1, 2]} : f32[2,3,4]
  %e = transpose %u {perm=[1, 0]} : u16[5,3]
  %f = transpose %b {perm=[3, 1, 0, 2]} : bf16[2,3,2,1]
  %g = transpose %q {perm=[1, 0]} : pred[3,2]
  return %a, %c, %d, %e, %f, %g
}
