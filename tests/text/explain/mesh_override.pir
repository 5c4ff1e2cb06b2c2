// test: explain --mesh data=4
// --mesh changes the axis sizes: per-device shapes, tiles and bytes follow
// the 4-device mesh, not the module's 2.
mesh [data=2]

func @main(%x: f32[8,2] on [data, _]) -> (s: f32[2]) {
  %s = reduce %x {dims=[0], kind=sum}
  return %s
}
