// Producer and consumer agree everywhere: no collective at all.
mesh [data=2, model=2]

func @main(%a: f32[8,8] on [data, model], %b: f32[8,8] on [data, model]) -> (y: f32[8,8] on [data, model]) {
  %s = add %a, %b
  %e = exp %s
  %n = neg %e
  %y = mul %n, %a
  return %y
}
