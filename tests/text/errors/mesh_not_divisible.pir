// test: error spmd --mesh data=3
// With --mesh data=3 the split dimension (8 rows) no longer divides evenly:
// the module is invalid under that mesh, reported against the annotation.
mesh [data=2]

func @main(%x: f32[8,2] on [data, _]) -> (y: f32[8,2]) {
  %y = neg %x
  return %y
}
