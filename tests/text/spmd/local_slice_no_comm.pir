// test: spmd
// A replicated input whose result is wanted split: each device slices its own
// block at its position (axis_index), with no communication at all.
mesh [data=4]

func @main(%x: f32[8,6]) -> (y: f32[8,6] on [data, _]) {
  %y = abs %x
  return %y
}
