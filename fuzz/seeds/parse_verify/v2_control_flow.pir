// test: fmt
// The canonical text of while, scan and switch: result types printed (one result
// as ': T', several as ': (T, U)'), scan's attributes in the order length,
// carries, reverse with reverse=false dropped, comments kept where they were.

// The loop's condition.
func @cond(%i: i32[], %x: f32[4]) -> (pred[]) {
  %n = constant 3 : i32[]
  %p = compare %i, %n {dir=lt}
  return %p
}

func @body(%i: i32[], %x: f32[4]) -> (i32[], f32[4]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %y = add %x, %x
  return %j, %y
}

func @step(%h: f32[4], %x: f32[4]) -> (f32[4], f32[4]) {
  %s = add %h, %x
  return %s, %s
}

func @carry_only(%h: f32[4]) -> (f32[4]) {
  %s = mul %h, %h
  return %s
}

func @slice_only(%x: f32[4]) -> (f32[]) {
  %s = reduce %x {dims=[0], kind=max}
  return %s
}

func @b0(%x: f32[4]) -> (f32[4]) {
  return %x
}

func @b1(%x: f32[4]) -> (f32[4]) {
  %y = neg %x
  return %y
}

// Control flow nests: a switch inside a while body.
func @nested_body(%i: i32[], %x: f32[4]) -> (i32[], f32[4]) {
  %one = constant 1 : i32[]
  %j = add %i, %one
  %y = switch %i, @b0, @b1(%x)
  return %j, %y
}

func @main(%x: f32[4], %xs: f32[3,4], %i: i32[]) -> (a: i32[], b: f32[4], c: f32[4], d: f32[3,4], e: f32[4], f: f32[4], g: f32[4], h: f32[3], k: f32[4], m: i32[], n: f32[4]) {
  %zero = constant 0 : i32[]
  // Before the while.
  %i2, %x2 = while @cond, @body(%zero, %x)  // at the end of its line
  %h, %ys = scan @step(%x, %xs) {carries=1, length=3, reverse=false}
  %hr, %ysr = scan @step(%x, %xs) {reverse=true, length=3, carries=1}
  %r = switch %i, @b0, @b1(%x) : f32[4]
  %only = switch %i, @b1(%x)
  %c = scan @carry_only(%x) {length=5, carries=1}
  %m = scan @slice_only(%xs) {length=3, carries=0}
  %i3, %x3 = while @cond, @nested_body(%zero, %x)
  return %i2, %x2, %h, %ys, %r, %only, %c, %m, %hr, %i3, %x3
}
