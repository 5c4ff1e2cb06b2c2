// test: explain
// Two annotated operands of the same size disagree on dimension 0: the split
// over more devices (model, 4) wins, and %a is resharded (an all_to_all or
// gather, with its reason).
mesh [data=2, model=4]

func @main(%a: f32[16,8] on [data, _], %b: f32[16,8] on [model, _]) -> (s: f32[16,8] on [model, _]) {
  %s = add %a, %b
  return %s
}
