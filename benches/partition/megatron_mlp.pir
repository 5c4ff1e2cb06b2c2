// Megatron MLP forward on a data x model mesh: batch over data, hidden over model.
mesh [data=2, model=2]

func @main(%x: f32[64,256] on [data, _], %w1: f32[256,1024] on [_, model], %w2: f32[1024,256] on [model, _]) -> (y: f32[64,256] on [data, _]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[64,1024]
  %a = tanh %h
  %y = dot_general %a, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[64,256]
  return %y
}
