func @main(%x: f32[7,9],
           %i: i8[5],
           %u: u64[6]) -> (a: f32[3,3], b: f32[7,9], c: f32[1,1], d: f32[3,7], e: f32[3,3], f: i8[3], g: u64[1]) {
  %a = slice %x {start=[1, 2], limit=[6, 9], stride=[2, 3]} : f32[3,3]
  %b = slice %x {start=[0, 0], limit=[7, 9]} : f32[7,9]
  %c = slice %x {start=[6, 8], limit=[7, 9], stride=[1, 1]} : f32[1,1]
  %d = slice %x {start=[2, 1], limit=[5, 8]} : f32[3,7]
  %e = slice %x {start=[0, 0], limit=[7, 9], stride=[3, 4]} : f32[3,3]
  %f = slice %i {start=[0], limit=[5], stride=[2]} : i8[3]
  %g = slice %u {start=[1], limit=[3], stride=[5]} : u64[1]
  return %a, %b, %c, %d, %e, %f, %g
}
