// test: error sharded --mesh model=4
// --mesh must name the module's axes, in its order: a different name is a
// command-line error (exit 2).
mesh [data=2]

func @main(%x: f32[8] on [data]) -> (y: f32[8]) {
  %y = neg %x
  return %y
}
