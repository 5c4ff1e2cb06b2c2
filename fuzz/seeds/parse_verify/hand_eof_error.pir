func @f() -> (f32[]) {
  %a = constant 1.5 : f32[]
  return %a
}
%