func @main(%x: f32[3,4],
           %i: i64[2,3],
           %s: f32[],
           %q: pred[2,3],
           %o: bf16[1,1]) -> (a: f32[2,6], b: f32[12], c: f32[2,2,3], d: f32[4,3,1], e: i64[6], f: f32[1,1], g: pred[3,2], h: bf16[]) {
  %a = reshape %x : f32[2,6]
  %b = reshape %x : f32[12]
  %c = reshape %x : f32[2,2,3]
  %d = reshape %x : f32[4,3,1]
  %e = reshape %i : i64[6]
  %f = reshape %s : f32[1,1]
  %g = reshape %q : pred[3,2]
  %h = reshape %o : bf16[]
  return %a, %b, %c, %d, %e, %f, %g, %h
}
