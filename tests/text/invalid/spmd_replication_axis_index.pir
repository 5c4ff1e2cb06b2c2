// test: error
// axis_index varies along its axis, so a result computed from it does too.
mesh [data=4, model=2]

spmd func @main(%x: f32[8]) -> (y: f32[8] on [data]) {
  %i = axis_index {axis=model} : i32[]
  %f = convert %i : f32[]
  %b = broadcast %f : f32[8]
  %y = add %x, %b
  return %y
}
