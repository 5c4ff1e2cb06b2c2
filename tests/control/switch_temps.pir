// Branches with temporaries of their own (a softmax, a normalisation):
// only one branch runs, so their temporaries share memory.
func @softmax(%x: f32[4,16]) -> (f32[4,16]) {
  %m = reduce %x {dims=[1], kind=max}
  %mb = broadcast %m {dims=[0]} : f32[4,16]
  %d = sub %x, %mb
  %e = exp %d
  %s = reduce %e {dims=[1], kind=sum}
  %sb = broadcast %s {dims=[0]} : f32[4,16]
  %p = div %e, %sb
  return %p
}

func @norm(%x: f32[4,16]) -> (f32[4,16]) {
  %sq = mul %x, %x
  %s = reduce %sq {dims=[1], kind=sum}
  %one = constant 1.0 : f32[4]
  %t = add %s, %one
  %r = rsqrt %t
  %rb = broadcast %r {dims=[0]} : f32[4,16]
  %y = mul %x, %rb
  %z = exp %y
  %w = reduce %z {dims=[0], kind=sum}
  %wb = broadcast %w {dims=[1]} : f32[4,16]
  %o = div %z, %wb
  return %o
}

func @main(%x: f32[4,16], %i: i32[]) -> (y: f32[4,16]) {
  %y = switch %i, @softmax, @norm(%x)
  return %y
}
