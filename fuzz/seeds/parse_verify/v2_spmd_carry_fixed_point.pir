// test: error
// The body shifts its carries: (a, b, c) -> (b, c, c + this device's 'data' index).
// All three start the same on every device, but after one iteration c differs
// along 'data', after two b, after three a: the carried results vary along 'data'
// (the fixed point), so 'a' cannot be a replicated result. The counter 'n' never
// depends on them and stays invariant.
mesh [data=4]

spmd func @cond(%n: i32[], %a: f32[], %b: f32[], %c: f32[]) -> (pred[]) {
  %k = constant 10 : i32[]
  %p = compare %n, %k {dir=lt}
  return %p
}

spmd func @body(%n: i32[], %a: f32[], %b: f32[], %c: f32[]) -> (i32[], f32[], f32[], f32[]) {
  %one = constant 1 : i32[]
  %n2 = add %n, %one
  %d = axis_index {axis=data} : i32[]
  %df = convert %d : f32[]
  %c2 = add %c, %df
  return %n2, %b, %c, %c2
}

spmd func @main(%x: f32[]) -> (n: i32[], a: f32[]) {
  %zero = constant 0 : i32[]
  %n, %a, %b, %c = while @cond, @body(%zero, %x, %x, %x)
  return %n, %a
}
