func @main(%o: f32[6,6],
           %s: f32[3,3],
           %s2: f32[6,6]) -> (r: f32[6,6], r2: f32[6,6]) {
  %r = select_and_scatter_add %s, %o {window=[2, 2], strides=[2, 2]} : f32[6,6]
  %r2 = select_and_scatter_add %s2, %o {window=[3, 3], strides=[1, 1], padding=[[1, 1], [1, 1]]} : f32[6,6]
  return %r, %r2
}
