// test: fmt
// A valid spmd func with control flow. The loop runs while the global sum of
// squares (an all_reduce over 'data', so the same on every device) is large; the
// carried %x stays split over 'data', so the result is split too. The scan's
// carry adds the device's 'data' index each step and is returned split, and so is
// the stacked output computed from it; the 'on's on @mix say what the analysis
// infers at the call site (a replicated slice of %xs for %x). The switch index is
// a parameter, the same on every device.
mesh [data=2]

spmd func @large(%x: f32[4]) -> (pred[]) {
  %sq = mul %x, %x
  %part = reduce %sq {dims=[0], kind=sum}
  %total = all_reduce %part {axes=[data], kind=sum}
  %limit = constant 1.0 : f32[]
  %p = compare %total, %limit {dir=gt}
  return %p
}

spmd func @shrink(%x: f32[4]) -> (f32[4]) {
  %half = constant 0.5 : f32[4]
  %y = mul %x, %half
  return %y
}

spmd func @mix(%h: f32[2] on [data], %x: f32[] on []) -> (f32[2] on [data], f32[]) {
  %d = axis_index {axis=data} : i32[]
  %df = convert %d : f32[]
  %db = broadcast %df : f32[2]
  %xb = broadcast %x : f32[2]
  %h1 = add %h, %db
  %h2 = add %h1, %xb
  %y = reduce %h2 {dims=[0], kind=sum}
  return %h2, %y
}

spmd func @keep(%x: f32[4]) -> (f32[4]) {
  return %x
}

spmd func @flip(%x: f32[4]) -> (f32[4]) {
  %y = reverse %x {dims=[0]}
  return %y
}

spmd func @main(%x: f32[4] on [data], %h0: f32[2] on [data], %xs: f32[3], %i: i32[]) -> (y: f32[4] on [data], h: f32[2] on [data], ys: f32[3] on [data], z: f32[4] on [data], w: f32[4]) {
  %y = while @large, @shrink(%x)
  // The same bodies on a value that is the same on every device: so is the result.
  %two = constant 2.0 : f32[4]
  %w = while @large, @shrink(%two)
  %h, %ys = scan @mix(%h0, %xs) {length=3, carries=1}
  %z = switch %i, @keep, @flip(%y)
  return %y, %h, %ys, %z, %w
}
