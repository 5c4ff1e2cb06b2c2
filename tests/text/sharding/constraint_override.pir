// test: sharded
// A sharding constraint inside the body wins over what would propagate, and
// what follows it is propagated from the constraint.
mesh [data=4]

func @main(%x: f32[16,16] on [data, _]) -> (y: f32[16,16]) {
  %a = exp %x
  %b = neg %a : f32[16,16] on [_, data]
  %c = tanh %b
  %y = abs %c
  return %y
}
