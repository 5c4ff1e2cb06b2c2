func @main(%x: f32[6,7]) -> (mn: f32[3,3], mx: f32[5,6]) {
  %mn = reduce_window %x {kind=min, window=[2, 3], strides=[2, 3], padding=[[0, 0], [1, 1]]} : f32[3,3]
  %mx = reduce_window %x {kind=max, window=[2, 2], strides=[1, 1]} : f32[5,6]
  return %mn, %mx
}
