// test: error pir --accumulate 2
// A program that takes no gradient has no step to accumulate: unsupported,
// at the entry function (exit 1).
mesh [data=2]

func @main(%x: f32[8,4] on [data, _]) -> (y: f32[8,4]) {
  %y = exp %x
  return %y
}
