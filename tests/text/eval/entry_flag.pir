// test: eval --entry second
// --entry picks the function to run; iota and reduce in the global view.
func @main() -> (y: f32[]) {
  %y = constant 0.0 : f32[]
  return %y
}

func @second() -> (i: i32[2,3], s: i32[3]) {
  %i = iota {dim=1} : i32[2,3]
  %s = reduce %i {dims=[0], kind=sum}
  return %i, %s
}
