// test: fmt
// Value names may start with a digit and contain dots and underscores.
func @f.v2(%0: f32[2]) -> (r_1: f32[2]) {
  %1 = neg %0
  %h.1 = abs %1
  return %h.1
}

func @main(%x: f32[2]) -> (y: f32[2]) {
  %0 = call @f.v2(%x)
  %grad_w1 = add %0, %x
  return %grad_w1
}
