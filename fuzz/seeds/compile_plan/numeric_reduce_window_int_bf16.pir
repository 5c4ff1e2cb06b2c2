func @main(%xi: i32[5,6],
           %xb: bf16[6,6]) -> (imax: i32[5,3], isum: i32[2,2], imin: i32[1,6], bsum: bf16[6,6], bmax: bf16[3,3]) {
  %imax = reduce_window %xi {kind=max, window=[2, 3], strides=[1, 2], padding=[[1, 0], [1, 1]]} : i32[5,3]
  %isum = reduce_window %xi {kind=sum, window=[3, 3], strides=[2, 2]} : i32[2,2]
  %imin = reduce_window %xi {kind=min, window=[5, 1]} : i32[1,6]
  %bsum = reduce_window %xb {kind=sum, window=[3, 3], strides=[1, 1], padding=[[1, 1], [1, 1]]} : bf16[6,6]
  %bmax = reduce_window %xb {kind=max, window=[2, 2], strides=[2, 2]} : bf16[3,3]
  return %imax, %isum, %imin, %bsum, %bmax
}
