// test: explain
// A reshape merging [8,6] into [48]: the split of the major dimension carries
// over to the merged one (the common refinement of both shapes).
mesh [data=4]

func @main(%x: f32[8,6] on [data, _]) -> (y: f32[48]) {
  %r = reshape %x : f32[48]
  %y = exp %r
  return %y
}
