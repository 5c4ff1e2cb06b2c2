// test: explain
// Both operands of the matmul are annotated and split their shared contracted
// dimension differently (data on %a, model on %b), over as many devices: the
// split of the tensor with more bytes (%a, 128 KiB against 8 KiB) wins, so %b
// is the one resharded.
mesh [data=2, model=2]

func @main(%a: f32[64,512] on [_, data], %b: f32[512,4] on [model, _]) -> (y: f32[64,4]) {
  %y = dot_general %a, %b {lhs_contract=[1], rhs_contract=[0]}
  return %y
}
