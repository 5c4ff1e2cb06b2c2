func @main(%x: f32[3,4],
           %v: f32[],
           %i: i32[5],
           %iv: i32[],
           %b: bf16[2,3],
           %bv: bf16[],
           %q: pred[2,2],
           %qv: pred[]) -> (a: f32[8,6], c: f32[6,5], d: f32[3,4], e: f32[2,8], f: i32[7], g: i32[17], h: bf16[5,7], k: pred[4,3]) {
  %a = pad %x, %v {low=[1, 2], high=[2, 0], interior=[1, 0]} : f32[8,6]
  %c = pad %x, %v {low=[-1, 0], high=[0, -2], interior=[2, 1]} : f32[6,5]
  %d = pad %x, %v {low=[0, 0], high=[0, 0]} : f32[3,4]
  %e = pad %x, %v {low=[-2, -3], high=[-1, 1], interior=[1, 2]} : f32[2,8]
  %f = pad %i, %iv {low=[-1], high=[3]} : i32[7]
  %g = pad %i, %iv {low=[2], high=[-2], interior=[3]} : i32[17]
  %h = pad %b, %bv {low=[1, 1], high=[1, 1], interior=[1, 1]} : bf16[5,7]
  %k = pad %q, %qv {low=[0, 1], high=[1, 0], interior=[1, 0]} : pred[4,3]
  return %a, %c, %d, %e, %f, %g, %h, %k
}
