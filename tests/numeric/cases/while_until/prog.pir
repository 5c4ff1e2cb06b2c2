func @small(%x: f32[5], %k: u8[], %q: pred[5]) -> (pred[]) {
  %m = reduce %x {dims=[0], kind=max}
  %lim = constant 1000.0 : f32[]
  %p = compare %m, %lim {dir=lt}
  return %p
}

func @double(%x: f32[5], %k: u8[], %q: pred[5]) -> (f32[5], u8[], pred[5]) {
  %y = add %x, %x
  %one = constant 1 : u8[]
  %j = add %k, %one
  %nq = not %q
  return %y, %j, %nq
}

func @main(%x: f32[5],
           %q: pred[5]) -> (y: f32[5], k: u8[], nq: pred[5]) {
  %k0 = constant 250 : u8[]
  %y, %k, %nq = while @small, @double(%x, %k0, %q)
  return %y, %k, %nq
}
