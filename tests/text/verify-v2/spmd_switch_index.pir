// test: error
// The index comes from this device's position along 'model' (and 'data'): devices
// would take different branches.
mesh [data=2, model=2]

spmd func @b0(%x: f32[4]) -> (f32[4]) {
  return %x
}

spmd func @b1(%x: f32[4]) -> (f32[4]) {
  %y = neg %x
  return %y
}

spmd func @main(%x: f32[4]) -> (y: f32[4]) {
  %m = axis_index {axis=model} : i32[]
  %d = axis_index {axis=data} : i32[]
  %i = add %m, %d
  %y = switch %i, @b0, @b1(%x)
  return %y
}
