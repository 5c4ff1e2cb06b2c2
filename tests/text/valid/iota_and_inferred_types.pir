// test: fmt
// Result types that may be omitted are printed by fmt.
func @main(%x: f32[3,5]) -> (i: i32[3,5], f: f32[3,5], r: f32[5], s: f32[]) {
  %i = iota {dim=1} : i32[3,5]
  %f0 = iota {dim=0} : f32[3,5]
  %f = add %f0, %x
  %r = reduce %f {dims=[0], kind=max}
  %s = reduce %r {dims=[0], kind=sum}
  return %i, %f, %r, %s
}
