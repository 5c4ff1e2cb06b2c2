// test: error llvm --gpu-arch sm90
// --gpu-arch is checked for every compile, --emit llvm too (it would name the
// PTX an executable carries): a misspelt architecture is the same error.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = neg %x
  return %y
}
