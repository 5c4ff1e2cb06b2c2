func @main(%x: f32[3,4],
           %i: i16[2,3,4],
           %q: pred[5]) -> (a: f32[3,4], b: f32[3,4], c: i16[2,3,4], d: pred[5]) {
  %a = reverse %x {dims=[0, 1]} : f32[3,4]
  %b = reverse %x {dims=[1]} : f32[3,4]
  %c = reverse %i {dims=[0, 2]} : i16[2,3,4]
  %d = reverse %q {dims=[0]} : pred[5]
  return %a, %b, %c, %d
}
