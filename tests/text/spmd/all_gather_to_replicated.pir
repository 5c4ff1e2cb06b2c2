// test: spmd
// A split value that the result wants whole: one all_gather over data of the
// rows, after the elementwise work ran on the local block.
mesh [data=4]

func @main(%x: f32[8,3] on [data, _]) -> (y: f32[8,3] on [_, _]) {
  %e = exp %x
  %y = neg %e
  return %y
}
