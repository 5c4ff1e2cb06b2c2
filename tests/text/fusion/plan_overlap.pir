// test: plan
// Overlap: the partial sums of %a are all-reduced while the independent
// products run (a start/done pair: `collective start` as soon as its input
// is written, `done` just before the first step that reads its output); the
// list scheduler runs the steps that do not need the all-reduce first, so
// %e, which reads it, goes last although the program computes it second.
mesh [data=2]

func @main(%x: f32[8,16] on [_, data], %w: f32[16,4] on [data, _], %y: f32[8,8], %v: f32[8,8]) -> (r: f32[8,4], s: f32[8,8], t: f32[8,4]) {
  %a = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[8,4]
  %e = exp %a
  %b = dot_general %y, %v {lhs_contract=[1], rhs_contract=[0]} : f32[8,8]
  %c = tanh %b
  %d = dot_general %c, %v {lhs_contract=[1], rhs_contract=[0]} : f32[8,8]
  return %a, %d, %e
}
