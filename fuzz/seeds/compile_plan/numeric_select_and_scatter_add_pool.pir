func @main(%o: f32[1,6,6,2],
           %s: f32[1,3,3,2],
           %o2: f64[5,5],
           %s2: f64[3,3],
           %ob: bf16[4,6],
           %sb: bf16[3,5]) -> (r: f32[1,6,6,2], r2: f64[5,5], rb: bf16[4,6]) {
  %r = select_and_scatter_add %s, %o {window=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding=[[0, 0], [1, 1], [1, 1], [0, 0]]} : f32[1,6,6,2]
  %r2 = select_and_scatter_add %s2, %o2 {window=[2, 2], strides=[2, 2], padding=[[1, 0], [1, 0]]} : f64[5,5]
  %rb = select_and_scatter_add %sb, %ob {window=[2, 2]} : bf16[4,6]
  return %r, %r2, %rb
}
