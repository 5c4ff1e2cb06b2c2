// Branches that constrain their operand differently: the operand goes to the
// switch replicated, each branch reshards it as it wants, and both bring
// their result to the op's result sharding (branch 0's) inside the branch.
mesh [data=4]

func @b0(%x: f32[8,4] on [data, _], %s: f32[]) -> (f32[8,4]) {
  %y = neg %x
  return %y
}

func @b1(%x: f32[8,4] on [_, data], %s: f32[]) -> (f32[8,4]) {
  %y = exp %x
  %sb = broadcast %s : f32[8,4]
  %z = mul %y, %sb
  return %z
}

func @b2(%x: f32[8,4], %s: f32[]) -> (f32[8,4]) {
  return %x
}

func @main(%x: f32[8,4], %k: i32[4] on [data]) -> (y0: f32[8,4], y1: f32[8,4], y2: f32[8,4]) {
  %kk = reduce %k {dims=[0], kind=sum}
  %two = constant 2.0 : f32[]
  %r0 = switch %kk, @b0, @b1, @b2(%x, %two)
  %one = constant 1 : i32[]
  %r1 = switch %one, @b0, @b1, @b2(%x, %two)
  %big = constant 4000000000 : u32[]
  %r2 = switch %big, @b0, @b1, @b2(%x, %two)
  return %r0, %r1, %r2
}
