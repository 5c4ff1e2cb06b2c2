// test: error
// The condition returns an i32, not the pred[] predicate.
func @cond(%i: i32[]) -> (i32[]) {
  return %i
}

func @body(%i: i32[]) -> (i32[]) {
  return %i
}

func @main(%i: i32[]) -> (j: i32[]) {
  %j = while @cond, @body(%i)
  return %j
}
