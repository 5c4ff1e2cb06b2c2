// test: sharded
// Propagation crosses calls: into the callee's unannotated parameters and back
// out through its results.
mesh [data=4]

func @layer(%h: f32[32,8], %w: f32[8,8]) -> (f32[32,8]) {
  %y = dot_general %h, %w {lhs_contract=[1], rhs_contract=[0]}
  %t = tanh %y
  return %t
}

func @main(%x: f32[32,8] on [data, _], %w: f32[8,8]) -> (out: f32[32,8]) {
  %h = call @layer(%x, %w) : f32[32,8]
  %o = exp %h
  return %o
}
