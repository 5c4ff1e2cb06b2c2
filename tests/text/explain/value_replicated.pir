// test: explain --value y
// A result by its name (without %): replicated, one block every device holds.
mesh [data=4]

func @main(%x: f32[8] on [data]) -> (y: f32[8]) {
  %h = neg %x
  return %h
}
