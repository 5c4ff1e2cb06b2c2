// test: explain
// Shardings propagate into a called func and back out: @scale's values are
// listed with the reasons they got from the caller's annotation.
mesh [data=2]

func @scale(%v: f32[8,4]) -> (f32[8,4]) {
  %two = constant 2.0 : f32[8,4]
  %r = mul %v, %two
  return %r
}

func @main(%x: f32[8,4] on [data, _]) -> (y: f32[8,4] on [data, _]) {
  %s = call @scale(%x)
  %y = neg %s
  return %y
}
