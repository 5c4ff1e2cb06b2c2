// test: plan --mesh data=2,model=2
// The plan is per device: a [data, model] split of f32[8,8] on 2x2 devices
// leaves f32[4,4] blocks, and the kernel's extent is the block.
mesh [data=4, model=1]

func @main(%a: f32[8,8] on [data, model], %b: f32[8,8] on [data, model]) -> (y: f32[8,8] on [data, model]) {
  %s = add %a, %b
  %y = exp %s
  return %y
}
