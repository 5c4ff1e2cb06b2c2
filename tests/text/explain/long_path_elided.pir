// test: explain --why full
// With --why full, a split that travels through more than eight ops shows
// the first four and the last four, and the count between (the result is
// replicated, so the split comes from %x alone). why_summary.pir: the default.
mesh [data=2]

func @main(%x: f32[4,2] on [data, _]) -> (y: f32[4,2]) {
  %a1 = exp %x
  %a2 = neg %a1
  %a3 = abs %a2
  %a4 = tanh %a3
  %a5 = exp %a4
  %a6 = neg %a5
  %a7 = abs %a6
  %a8 = tanh %a7
  %a9 = exp %a8
  %a10 = neg %a9
  %a11 = abs %a10
  %y = sqrt %a11
  return %y
}
