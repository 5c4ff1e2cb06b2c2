// test: error
// Updates are shaped like gather's result: [8,16], not [8,15].
func @main(%base: f32[100,16], %idx: i32[8], %upd: f32[8,15]) -> (y: f32[100,16]) {
  %y = scatter_add %base, %idx, %upd {axis=0}
  return %y
}
