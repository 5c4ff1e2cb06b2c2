// test: explain
// The "why" column summarises: a path of more than three ops is its length
// and its first and last op, and dimensions with the same reason are named
// together (--why full prints every reason as propagation keeps it:
// long_path_elided.pir).
mesh [data=2, model=2]

func @main(%x: f32[4,6] on [data, model], %w: f32[6,8] on [model, _]) -> (y: f32[4,8]) {
  %a1 = exp %x
  %a2 = neg %a1
  %a3 = abs %a2
  %a4 = tanh %a3
  %a5 = exp %a4
  %h = dot_general %a5, %w {lhs_contract=[1], rhs_contract=[0]}
  %y = neg %h
  return %y
}
