// test: spmd
// The split moves from dimension 0 to dimension 1: one all_to_all (each device
// keeps a quarter of its block and sends the rest), never a gather of the whole
// array.
mesh [data=4]

func @main(%a: f32[8,12] on [data, _]) -> (y: f32[8,12] on [_, data]) {
  %t = tanh %a
  %y = neg %t
  return %y
}
