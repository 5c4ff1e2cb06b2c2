// A scan inside a while inside a scan, a switch in the innermost step, and a
// predicate from a float reduction.
func @pick(%h: f32[3], %x: f32[3]) -> (f32[3]) {
  %y = sub %h, %x
  return %y
}

func @add(%h: f32[3], %x: f32[3]) -> (f32[3]) {
  %y = add %h, %x
  return %y
}

func @inner(%h: f32[3], %x: f32[3]) -> (f32[3], f32[]) {
  %s = reduce %x {dims=[0], kind=sum}
  %zero = constant 0.0 : f32[]
  %pos = compare %s, %zero {dir=gt}
  %k = convert %pos : i32[]
  %h2 = switch %k, @pick, @add(%h, %x)
  %m = reduce %h2 {dims=[0], kind=max}
  return %h2, %m
}

func @small(%i: i32[], %h: f32[3], %xs: f32[2,3]) -> (pred[]) {
  %s = reduce %h {dims=[0], kind=sum}
  %lim = constant 40.0 : f32[]
  %a = compare %s, %lim {dir=lt}
  %n = constant 4 : i32[]
  %b = compare %i, %n {dir=lt}
  %p = and %a, %b
  return %p
}

func @grow(%i: i32[], %h: f32[3], %xs: f32[2,3]) -> (i32[], f32[3], f32[2,3]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %h2, %ms = scan @inner(%h, %xs) {length=2, carries=1}
  %m = reduce %ms {dims=[0], kind=sum}
  %mb = broadcast %m : f32[3]
  %h3 = add %h2, %mb
  return %j, %h3, %xs
}

func @outer(%h: f32[3], %xs: f32[2,3]) -> (f32[3], i32[], f32[3]) {
  %zero = constant 0 : i32[]
  %n, %h2, %xs2 = while @small, @grow(%zero, %h, %xs)
  %half = constant 0.5 : f32[3]
  %h3 = mul %h2, %half
  return %h3, %n, %h2
}

func @main(%h: f32[3], %xss: f32[3,2,3]) -> (h: f32[3], ns: i32[3], hs: f32[3,3]) {
  %hf, %ns, %hs = scan @outer(%h, %xss) {length=3, carries=1}
  return %hf, %ns, %hs
}
