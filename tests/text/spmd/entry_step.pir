// test: spmd --entry step
// --entry picks the function to partition: @step's data-parallel mean (one
// all_reduce), not @main, which is left out of the output.
mesh [data=2]

func @step(%x: f32[4,2] on [data, _]) -> (m: f32[2]) {
  %s = reduce %x {dims=[0], kind=sum}
  %n = constant 0.25 : f32[2]
  %m = mul %s, %n
  return %m
}

func @main(%x: f32[4,2] on [data, _]) -> (y: f32[4,2]) {
  %y = exp %x
  return %y
}
