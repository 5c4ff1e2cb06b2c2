// test: spmd
// Both operands of `mul %t, %t` need the same reshard ([data, _] -> [_, data]).
// Today each use gets its own all_to_all (twice the bytes of one shared
// reshard): this test records that, so a partitioner that reshards a value
// once per target shows up here as an improvement to bless.
mesh [data=4]

func @main(%a: f32[8,12] on [data, _]) -> (y: f32[8,12] on [_, data]) {
  %t = tanh %a
  %y = mul %t, %t
  return %y
}
