// test: error
// No recursion through other functions either: @step (a scan body) calls @pick,
// whose switch branch @again is a while body that calls @step.
func @cond(%x: f32[4]) -> (pred[]) {
  %p = constant false : pred[]
  return %p
}

func @again(%x: f32[4]) -> (f32[4]) {
  %h, %y = scan @step(%x, %x) {length=4, carries=1}
  return %h
}

func @loop(%x: f32[4]) -> (f32[4]) {
  %y = while @cond, @again(%x)
  return %y
}

func @pick(%x: f32[4]) -> (f32[4]) {
  %i = constant 0 : i32[]
  %y = switch %i, @loop(%x)
  return %y
}

func @step(%h: f32[4], %x: f32[]) -> (f32[4], f32[]) {
  %h2 = call @pick(%h) : f32[4]
  return %h2, %x
}

func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = call @pick(%x) : f32[4]
  return %y
}
