// test: error
// A switch result varies along the axes any branch's result varies along: @b1 adds
// the device's 'model' index, so %y may differ along 'model' even though the index
// and the operand are the same on every device.
mesh [data=2, model=2]

spmd func @b0(%x: f32[]) -> (f32[]) {
  return %x
}

spmd func @b1(%x: f32[]) -> (f32[]) {
  %m = axis_index {axis=model} : i32[]
  %f = convert %m : f32[]
  %y = add %x, %f
  return %y
}

spmd func @main(%i: i32[], %x: f32[]) -> (y: f32[]) {
  %y = switch %i, @b0, @b1(%x)
  return %y
}
