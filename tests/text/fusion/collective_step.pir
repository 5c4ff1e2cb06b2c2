// test: plan
// A data-parallel mean: the plan of the per-device program (local shapes) has
// the reduction kernel, then the all_reduce as a collective step, then the
// scaling kernel.
mesh [data=4]

func @main(%x: f32[16,8] on [data, _]) -> (m: f32[8]) {
  %s = reduce %x {dims=[0], kind=sum}
  %n = constant 0.0625 : f32[8]
  %m = mul %s, %n
  return %m
}
