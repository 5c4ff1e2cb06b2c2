// test: check
// Results named like parameters carry state to the next step (same type and sharding).
mesh [data=2]

func @main(%w: f32[8,4] on [data, _], %step: i32[], %x: f32[4]) -> (w: f32[8,4] on [data, _], step: i32[], loss: f32[]) {
  %one = constant 1 : i32[]
  %step2 = add %step, %one
  %lr = constant 0.01 : f32[8,4]
  %d = mul %w, %lr
  %w2 = sub %w, %d
  %loss = reduce %w2 {dims=[0, 1], kind=sum}
  return %w2, %step2, %loss
}
