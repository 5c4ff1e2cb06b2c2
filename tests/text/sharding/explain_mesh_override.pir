// test: explain --mesh data=4,model=1
mesh [data=2, model=2]

func @main(%x: f32[8,4] on [data, _], %w: f32[4,6] on [_, model]) -> (h: f32[8,6]) {
  %xw = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]}
  %h = tanh %xw
  return %h
}
