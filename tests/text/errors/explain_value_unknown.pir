// test: error explain --value %nope
// --value names a value or result of the entry function; another name is one
// error line (exit 2).
mesh [data=2]

func @main(%x: f32[4] on [data]) -> (y: f32[4]) {
  %y = neg %x
  return %y
}
