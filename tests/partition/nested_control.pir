// Control flow inside control flow: a while whose body scans and switches,
// with a call inlined inside a body and a spmd func (shard_map) called from
// one; collectives run inside the nested bodies. One body (@inc) is used by
// two loops and partitioned once.
mesh [data=2, model=2]

func @more(%i: i32[], %h: f32[8,8], %w: f32[3,8,8]) -> (pred[]) {
  %n = constant 2 : i32[]
  %p = compare %i, %n {dir=lt}
  return %p
}

func @act(%x: f32[8,8]) -> (f32[8,8]) {
  %t = tanh %x
  return %t
}

spmd func @rownorm(%x: f32[4,8] on [data, _]) -> (f32[4,8] on [data, _]) {
  %sq = mul %x, %x
  %s = reduce %sq {dims=[1], kind=sum}
  %one = constant 1.0 : f32[4]
  %d = add %s, %one
  %r = rsqrt %d
  %rb = broadcast %r {dims=[0]} : f32[4,8]
  %y = mul %x, %rb
  return %y
}

func @layer(%h: f32[8,8], %w: f32[8,8]) -> (f32[8,8], f32[]) {
  %y = dot_general %h, %w {lhs_contract=[1], rhs_contract=[0]} : f32[8,8]
  %a = call @act(%y) : f32[8,8]
  %n = call @rownorm(%a) : f32[8,8]
  %s = reduce %n {dims=[0, 1], kind=max}
  return %n, %s
}

func @keep(%h: f32[8,8]) -> (f32[8,8]) {
  return %h
}

func @flip(%h: f32[8,8]) -> (f32[8,8]) {
  %t = transpose %h {perm=[1, 0]}
  return %t
}

func @inc(%i: i32[], %h: f32[8,8], %w: f32[3,8,8]) -> (i32[], f32[8,8], f32[3,8,8]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %h2, %ms = scan @layer(%h, %w) {length=3, carries=1}
  %m = reduce %ms {dims=[0], kind=max}
  %half = constant 0.5 : f32[]
  %c = compare %m, %half {dir=gt}
  %k = convert %c : i32[]
  %h3 = switch %k, @keep, @flip(%h2)
  return %j, %h3, %w
}

func @main(%h: f32[8,8] on [data, _], %w: f32[3,8,8] on [_, _, model]) -> (hout: f32[8,8], n: i32[], g: f32[8,8]) {
  %zero = constant 0 : i32[]
  %n, %h2, %w2 = while @more, @inc(%zero, %h, %w)
  %m, %g, %w3 = while @more, @inc(%zero, %h2, %w)
  return %h2, %n, %g
}
