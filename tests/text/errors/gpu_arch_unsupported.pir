// test: error ptx --gpu-arch sm_35
// A GPU architecture pjc does not generate PTX for (Kepler, older than Volta):
// one line naming the supported ones, exit 2, before any work.
func @main(%x: f32[4]) -> (y: f32[4]) {
  %y = neg %x
  return %y
}
