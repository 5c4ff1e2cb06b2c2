// test: error
// 'scan' names one step function.
func @s(%h: f32[4]) -> (f32[4]) {
  return %h
}

func @main(%h: f32[4]) -> (y: f32[4]) {
  %y = scan @s, @s(%h) {length=2, carries=1}
  return %y
}
