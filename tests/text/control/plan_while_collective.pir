// test: plan
// A data-parallel loop: the gradient's all_reduce is a collective step inside
// the body's block.
mesh [data=2]

func @cond(%i: i32[], %w: f32[16,4], %x: f32[8,16], %y: f32[8,4]) -> (pred[]) {
  %n = constant 3 : i32[]
  %p = compare %i, %n {dir=lt}
  return %p
}

func @step(%i: i32[], %w: f32[16,4], %x: f32[8,16], %y: f32[8,4]) -> (i32[], f32[16,4], f32[8,16], f32[8,4]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %p = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[8,4]
  %e = sub %p, %y
  %g = dot_general %x, %e {lhs_contract=[0], rhs_contract=[0]} : f32[16,4]
  %lr = constant 0.01 : f32[16,4]
  %d = mul %lr, %g
  %w2 = sub %w, %d
  return %j, %w2, %x, %y
}

func @main(%w: f32[16,4], %x: f32[8,16] on [data, _], %y: f32[8,4] on [data, _]) -> (w: f32[16,4], steps: i32[]) {
  %zero = constant 0 : i32[]
  %n, %w2, %x2, %y2 = while @cond, @step(%zero, %w, %x, %y)
  return %w2, %n
}
