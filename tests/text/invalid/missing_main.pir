// test: error
// pjc check looks for the entry function @main.
func @step(%x: f32[4]) -> (y: f32[4]) {
  %y = neg %x
  return %y
}

func @loss(%x: f32[4]) -> (l: f32[]) {
  %l = reduce %x {dims=[0], kind=sum}
  return %l
}
