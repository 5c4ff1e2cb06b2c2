func @main(%p: pred[],
           %x: f32[3,5],
           %y: f32[3,5],
           %xi: u16[7],
           %yi: u16[7],
           %xb: bf16[4],
           %yb: bf16[4]) -> (r: f32[3,5], ri: u16[7], rb: bf16[4]) {
  %r = select %p, %x, %y : f32[3,5]
  %ri = select %p, %xi, %yi : u16[7]
  %rb = select %p, %xb, %yb : bf16[4]
  return %r, %ri, %rb
}
