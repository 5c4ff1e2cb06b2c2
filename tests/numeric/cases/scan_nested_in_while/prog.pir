func @keep(%x: f32[3]) -> (f32[3]) {
  return %x
}

func @inner(%h: f32[3], %x: f32[3], %t: i32[]) -> (f32[3], f32[3]) {
  %ht = switch %t, @keep(%h)
  %s = add %ht, %x
  return %s, %s
}

func @inner_step(%h: f32[3], %x: f32[3]) -> (f32[3], f32[3]) {
  %t = constant 5 : i32[]
  %s, %y = call @inner(%h, %x, %t) : (f32[3], f32[3])
  return %s, %y
}

func @trips(%i: i32[], %h: f32[3], %xs: f32[4,3], %ys: f32[4,3]) -> (pred[]) {
  %three = constant 3 : i32[]
  %p = compare %i, %three {dir=lt}
  return %p
}

func @outer(%i: i32[], %h: f32[3], %xs: f32[4,3], %ys: f32[4,3]) -> (i32[], f32[3], f32[4,3], f32[4,3]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %h2, %ys2 = scan @inner_step(%h, %xs) {length=4, carries=1}
  return %j, %h2, %xs, %ys2
}

func @main(%h: f32[3],
           %xs: f32[4,3],
           %ys0: f32[4,3]) -> (n: i32[], hf: f32[3], ys: f32[4,3]) {
  %zero = constant 0 : i32[]
  %n, %hf, %xs2, %ys = while @trips, @outer(%zero, %h, %xs, %ys0)
  return %n, %hf, %ys
}
