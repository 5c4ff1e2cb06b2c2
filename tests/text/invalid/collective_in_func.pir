// test: error
// Collectives are only for spmd funcs; in a func pjc inserts communication itself.
mesh [data=4]

func @main(%x: f32[16,8] on [data, _]) -> (y: f32[16,8]) {
  %y = all_reduce %x {axes=[data], kind=sum}
  return %y
}
