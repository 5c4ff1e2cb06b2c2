// test: error eval --input w=tests/text/errors/nowhere.npy
// --input naming no parameter of the entry: exit 2, listing the parameters.
func @main() -> (y: f32[2]) {
  %y = constant 1.0 : f32[2]
  return %y
}
