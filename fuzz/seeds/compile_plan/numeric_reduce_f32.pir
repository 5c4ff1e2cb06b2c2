func @main(%x: f32[5,7,3],
           %w: f32[5,7,3]) -> (sum1: f32[5,3], prod02: f32[7], max_all: f32[], min2: f32[5,7], sum20: f32[7]) {
  %sum1 = reduce %x {dims=[1], kind=sum} : f32[5,3]
  %prod02 = reduce %w {dims=[0, 2], kind=prod} : f32[7]
  %max_all = reduce %x {dims=[0, 1, 2], kind=max} : f32[]
  %min2 = reduce %x {dims=[2], kind=min} : f32[5,7]
  %sum20 = reduce %x {dims=[2, 0], kind=sum} : f32[7]
  return %sum1, %prod02, %max_all, %min2, %sum20
}
