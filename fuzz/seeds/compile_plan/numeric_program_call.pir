func @affine(%x: f32[3,4], %s: f32[]) -> (f32[3,4], f32[3,4]) {
  %sb = broadcast %s : f32[3,4]
  %y = mul %x, %sb : f32[3,4]
  %z = add %y, %sb : f32[3,4]
  return %y, %z
}

func @main(%x: f32[3,4], %s: f32[]) -> (y: f32[3,4], z: f32[3,4]) {
  %y, %z = call @affine(%x, %s) : (f32[3,4], f32[3,4])
  return %y, %z
}
