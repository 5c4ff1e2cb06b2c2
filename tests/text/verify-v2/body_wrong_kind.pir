// test: error
// A body has the kind of the function it is used in: a func in a func, a spmd
// func in a spmd func.
mesh [data=2]

spmd func @local(%x: f32[4]) -> (f32[4]) {
  return %x
}

func @global(%x: f32[4]) -> (f32[4]) {
  return %x
}

func @main(%i: i32[], %x: f32[4]) -> (y: f32[4]) {
  %y = switch %i, @global, @local(%x)
  return %y
}

spmd func @per_device(%i: i32[], %x: f32[4]) -> (y: f32[4]) {
  %y = switch %i, @global(%x)
  return %y
}
