// test: spmd
// Both operands of `mul %t, %t` need the same reshard ([data, _] -> [_, data]):
// one all_to_all serves both uses (a value is resharded once per target in a
// function, as XLA's CSE merges equal collectives).
mesh [data=4]

func @main(%a: f32[8,12] on [data, _]) -> (y: f32[8,12] on [_, data]) {
  %t = tanh %a
  %y = mul %t, %t
  return %y
}
