mesh [data=2, model=2]

spmd func @local_sum(%x: f32[2,3] on [data, _]) -> (f32[1,3] on [data, _]) {
  %s = reduce %x {dims=[0], kind=sum} : f32[3]
  %r = reshape %s : f32[1,3]
  return %r
}

func @main(%x: f32[4,3]) -> (y: f32[2,3]) {
  %y = call @local_sum(%x) : f32[2,3]
  return %y
}
