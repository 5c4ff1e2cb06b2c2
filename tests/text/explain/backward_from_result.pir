// test: explain
// A result annotation propagates backward: the intermediate values take the
// result's split ("annotation on result y"), and the replicated parameter is
// sliced locally for free: no collective.
mesh [data=2]

func @main(%x: f32[8,4]) -> (y: f32[8,4] on [data, _]) {
  %a = abs %x
  %y = sqrt %a
  return %y
}
