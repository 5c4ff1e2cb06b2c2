// test: sharded
// Transpose permutes the split; reduce keeps the splits of the kept dimensions
// and drops the reduced one (a partial sum when it was split).
mesh [data=2, model=4]

func @main(%x: f32[8,16] on [data, model]) -> (t: f32[16,8], r1: f32[8], r0: f32[16]) {
  %t = transpose %x {perm=[1,0]}
  %r1 = reduce %x {dims=[1], kind=sum}
  %r0 = reduce %x {dims=[0], kind=max}
  return %t, %r1, %r0
}
