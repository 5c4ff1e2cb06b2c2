func @main(%a: f32[2,3],
           %b: f32[4,3],
           %c: f32[1,3],
           %d: i32[2,1],
           %e: i32[2,4],
           %f: i32[2,2],
           %g: pred[3],
           %h: pred[1],
           %k: bf16[2,1,2],
           %m: bf16[2,1,3],
           %s: f64[3]) -> (r0: f32[7,3], r1: i32[2,7], r2: pred[7], r3: bf16[2,1,7], r4: f64[3]) {
  %r0 = concat %a, %b, %c {dim=0} : f32[7,3]
  %r1 = concat %d, %e, %f {dim=1} : i32[2,7]
  %r2 = concat %g, %h, %g {dim=0} : pred[7]
  %r3 = concat %k, %m, %k {dim=2} : bf16[2,1,7]
  %r4 = concat %s {dim=0} : f64[3]
  return %r0, %r1, %r2, %r3, %r4
}
