// test: explain
// A sharding constraint in the body (`: TYPE on [...]`) is closed like an
// annotation: it is the reason of the values around it.
mesh [model=2]

func @main(%x: f32[6,8]) -> (y: f32[6,8]) {
  %a = exp %x : f32[6,8] on [_, model]
  %y = neg %a
  return %y
}
