func @main(%lo: i32[5,7],
           %x: i32[5,7],
           %hi: i32[5,7],
           %flo: f32[5,7],
           %fx: f32[5,7],
           %fhi: f32[5,7]) -> (y: i32[5,7], fy: f32[5,7]) {
  %y = clamp %lo, %x, %hi : i32[5,7]
  %fy = clamp %flo, %fx, %fhi : f32[5,7]
  return %y, %fy
}
