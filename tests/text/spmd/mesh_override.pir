// test: spmd --mesh data=8
// --mesh replaces the axis sizes: the same program on 8 devices holds one
// row each and all-reduces over 8.
mesh [data=2]

func @main(%x: f32[8,4] on [data, _]) -> (s: f32[4]) {
  %s = reduce %x {dims=[0], kind=sum}
  return %s
}
