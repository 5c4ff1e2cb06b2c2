func @main(%x: f32[],
           %u: u8[],
           %q: pred[],
           %b: bf16[]) -> (xb: f32[3,5], ub: u8[2,3], qb: pred[4], bb: bf16[2,1,3]) {
  %xb = broadcast %x : f32[3,5]
  %ub = broadcast %u {dims=[]} : u8[2,3]
  %qb = broadcast %q : pred[4]
  %bb = broadcast %b : bf16[2,1,3]
  return %xb, %ub, %qb, %bb
}
