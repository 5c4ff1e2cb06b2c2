func @main(%x: f32[2,3]) -> (y: f32[3,2], z: f32[3,4,2]) {
  %y = broadcast %x {dims=[1, 0]} : f32[3,2]
  %z = broadcast %x {dims=[2, 0]} : f32[3,4,2]
  return %y, %z
}
