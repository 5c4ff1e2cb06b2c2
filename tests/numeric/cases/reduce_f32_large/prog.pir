func @main(%x: f32[1200],
           %y: f32[40,40]) -> (sx: f32[], sy: f32[], sy1: f32[40]) {
  %sx = reduce %x {dims=[0], kind=sum} : f32[]
  %sy = reduce %y {dims=[0, 1], kind=sum} : f32[]
  %sy1 = reduce %y {dims=[1], kind=sum} : f32[40]
  return %sx, %sy, %sy1
}
