// test: error
// A collective in a (global-view) func: collectives belong in spmd funcs only.
mesh [data=2]

func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = all_reduce %x {axes=[data], kind=sum}
  return %y
}
