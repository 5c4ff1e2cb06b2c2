func @main(%x: f32[1,6,6,2]) -> (y: f32[1,3,3,2], z: f32[1,3,3,2]) {
  %y = reduce_window %x {kind=max, window=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding=[[0, 0], [1, 1], [1, 1], [0, 0]]} : f32[1,3,3,2]
  %z = reduce_window %x {kind=max, window=[1, 2, 2, 1], strides=[1, 2, 2, 1]} : f32[1,3,3,2]
  return %y, %z
}
