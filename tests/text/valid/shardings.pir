// test: fmt
// Shardings: axis groups, '?', '_', constraints inside a func body.
mesh [data=2, model=2, pipe=2]

func @main(%x: f32[16,8] on [(data, model), _], %w: f32[8,4] on [_, pipe]) -> (y: f32[16,4] on [(data,model), pipe], s: f32[] on []) {
  %h = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[16,4] on [?, pipe]
  %y = neg %h : f32[16,4] on [(data, model),pipe]
  %r = reduce %y {dims=[0, 1], kind=sum} : f32[] on []
  %s = abs %r
  return %y, %s
}
