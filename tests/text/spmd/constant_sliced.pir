// test: spmd
// A dense constant used with a split operand is sliced to each device's block
// at its position; a splat constant just takes the local shape.
mesh [data=2]

func @main(%x: f32[4] on [data]) -> (y: f32[4] on [data]) {
  %c = constant [1.0, 2.0, 3.0, 4.0] : f32[4]
  %h = constant 0.5 : f32[4]
  %m = mul %x, %c
  %y = add %m, %h
  return %y
}
