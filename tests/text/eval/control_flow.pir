// test: eval
// while (condition before every trip: zero trips when it starts false), scan
// (forward; reverse visits length-1 .. 0 and stores output i at position i;
// length-only; no carries), switch (the index clamped in its own dtype: a
// negative i32 picks branch 0, u32 4000000000 the last; one branch).
func @lt(%i: i32[], %n: i32[], %x: f32[2]) -> (pred[]) {
  %p = compare %i, %n {dir=lt}
  return %p
}

func @twice(%i: i32[], %n: i32[], %x: f32[2]) -> (i32[], i32[], f32[2]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %y = add %x, %x
  return %j, %n, %y
}

func @acc(%h: f32[], %x: f32[]) -> (f32[], f32[]) {
  %s = add %h, %x
  return %s, %s
}

func @tick(%c: i32[]) -> (i32[], i32[]) {
  %one = constant 1 : i32[]
  %d = add %c, %one
  %sq = mul %c, %c
  return %d, %sq
}

func @square(%x: f32[]) -> (f32[]) {
  %y = mul %x, %x
  return %y
}

func @first(%x: f32[2]) -> (f32[2]) {
  return %x
}

func @second(%x: f32[2]) -> (f32[2]) {
  %y = neg %x
  return %y
}

func @third(%x: f32[2]) -> (f32[2]) {
  %y = add %x, %x
  return %y
}

func @main() -> (none: i32[], none_x: f32[2], three: i32[], three_x: f32[2],
                 fwd_h: f32[], fwd: f32[4], rev_h: f32[], rev: f32[4],
                 ticks: i32[], squares: i32[3], sq: f32[4],
                 neg: f32[2], big: f32[2], only: f32[2]) {
  %zero = constant 0 : i32[]
  %n3 = constant 3 : i32[]
  %x = constant [1.0, -0.5] : f32[2]
  %none, %m0, %none_x = while @lt, @twice(%n3, %n3, %x)
  %three, %m3, %three_x = while @lt, @twice(%zero, %n3, %x)
  %h = constant 0.0 : f32[]
  %xs = constant [1.0, 2.0, 3.0, 4.0] : f32[4]
  %fwd_h, %fwd = scan @acc(%h, %xs) {length=4, carries=1}
  %rev_h, %rev = scan @acc(%h, %xs) {length=4, carries=1, reverse=true}
  %c = constant 5 : i32[]
  %ticks, %squares = scan @tick(%c) {length=3, carries=1}
  %sq = scan @square(%xs) {length=4, carries=0}
  %minus = constant -7 : i32[]
  %neg = switch %minus, @first, @second, @third(%x)
  %u = constant 4000000000 : u32[]
  %big = switch %u, @first, @second, @third(%x)
  %only = switch %u, @second(%x)
  return %none, %none_x, %three, %three_x, %fwd_h, %fwd, %rev_h, %rev, %ticks, %squares, %sq, %neg, %big, %only
}
