// test: error
// 'length' must be at least 1.
func @step(%h: f32[4]) -> (f32[4]) {
  return %h
}

func @main(%h: f32[4]) -> (h: f32[4]) {
  %h2 = scan @step(%h) {length=0, carries=1}
  return %h2
}
