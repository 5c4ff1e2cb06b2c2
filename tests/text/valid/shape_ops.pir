// test: fmt
// Shape ops with non-default attributes; defaults written out (stride=[1,1],
// interior=[0,0], dims=[] for a scalar) are dropped by fmt, and attributes come
// in the order of the op's declaration.
func @main(%x: f32[4,8], %s: f32[], %i: i32[], %k: i64[]) -> (a: f32[8,4], b: f32[2,3], c: f32[2,4], d: f32[12,8], e: f32[2,2], f: f32[4,8], g: f32[8,23], h: f32[4,8], r: f32[32], t: f32[3,4,8]) {
  %a = transpose %x {perm=[1,0]}
  %b = slice %x {stride=[1,2], limit=[3,8], start=[1,2]}
  %c = slice %x {start=[0,0], limit=[2,4], stride=[1,1]}
  %x2 = slice %x {start=[0,0], limit=[4,8], stride=[1,1]} : f32[4,8]
  %d = concat %x, %x2, %x {dim=0}
  %e = dynamic_slice %x, %i, %k {sizes=[2,2]}
  %f = dynamic_update_slice %x, %e, %k, %i
  %g = pad %x, %s {low=[1,-1], high=[0,2], interior=[1,2]}
  %p0 = pad %x, %s {low=[0,0], high=[0,0], interior=[0,0]}
  %h = reverse %p0 {dims=[0,1]}
  %r = reshape %x : f32[32]
  %sb = broadcast %s {dims=[]} : f32[3,4,8]
  %xb = broadcast %x {dims=[1,2]} : f32[3,4,8]
  %t = add %sb, %xb
  return %a, %b, %c, %d, %e, %f, %g, %h, %r, %t
}
