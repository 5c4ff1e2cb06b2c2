func @main(%x: f64[5,6],
           %y: f32[7,5]) -> (a: f64[5,6], b: f32[4,4], c: f32[1,1]) {
  %a = reduce_window %x {kind=sum, window=[2, 2], padding=[[1, 0], [0, 1]]} : f64[5,6]
  %b = reduce_window %y {kind=sum, window=[3, 2], strides=[2, 1], padding=[[1, 1], [0, 0]]} : f32[4,4]
  %c = reduce_window %y {kind=sum, window=[7, 5]} : f32[1,1]
  return %a, %b, %c
}
