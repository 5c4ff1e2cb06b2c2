func @main(%x: i32[5],
           %y: f32[3],
           %z: bf16[3,1],
           %w: f64[2,3],
           %v: u16[1,3],
           %h: f16[1]) -> (xb: i32[3,5], yb: f32[3,4], zb: bf16[3,4], wb: f64[2,4,3], vb: u16[2,3], hb: f16[2,5,3]) {
  %xb = broadcast %x {dims=[1]} : i32[3,5]
  %yb = broadcast %y {dims=[0]} : f32[3,4]
  %zb = broadcast %z {dims=[0, 1]} : bf16[3,4]
  %wb = broadcast %w {dims=[0, 2]} : f64[2,4,3]
  %vb = broadcast %v {dims=[0, 1]} : u16[2,3]
  %hb = broadcast %h {dims=[1]} : f16[2,5,3]
  return %xb, %yb, %zb, %wb, %vb, %hb
}
