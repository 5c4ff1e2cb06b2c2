func @main(%lo: f32[],
           %x: f32[3,7],
           %hi: f32[]) -> (y: f32[3,7]) {
  %y = clamp %lo, %x, %hi : f32[3,7]
  return %y
}
