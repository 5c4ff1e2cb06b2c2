// test: fmt
// Calls, including one with several results.
func @stats(%x: f32[8]) -> (sum: f32[], max: f32[]) {
  %sum = reduce %x {dims=[0], kind=sum}
  %max = reduce %x {dims=[0], kind=max}
  return %sum, %max
}

func @scale(%x: f32[8], %k: f32[]) -> (f32[8]) {
  %kb = broadcast %k : f32[8]
  %y = mul %x, %kb
  return %y
}

func @main(%x: f32[8]) -> (y: f32[8], s: f32[], m: f32[]) {
  %s, %m = call @stats(%x) : (f32[], f32[])
  %y = call @scale(%x, %s)
  return %y, %s, %m
}
