// test: plan --device cuda
// The CUDA view of a switch inside a scan: every block's steps run on the
// device; the switch reads its index back once, the scan nothing.
func @inc(%x: f32[3], %k: i32[]) -> (f32[3], i32[]) {
  %one = constant 1.0 : f32[3]
  %y = add %x, %one
  return %y, %k
}

func @dbl(%x: f32[3], %k: i32[]) -> (f32[3], i32[]) {
  %y = add %x, %x
  %two = constant 2 : i32[]
  %k2 = mul %k, %two
  return %y, %k2
}

func @flip(%x: f32[3], %k: i32[]) -> (f32[3], i32[]) {
  %y = neg %x
  %k2 = neg %k
  return %y, %k2
}

func @pick(%h: f32[3], %k: i32[], %i: i32[]) -> (f32[3], i32[], f32[3]) {
  %h2, %k2 = switch %i, @inc, @dbl, @flip(%h, %k)
  return %h2, %k2, %h2
}

func @main(%h: f32[3],
           %k: i32[],
           %idx: i32[7]) -> (hf: f32[3], kf: i32[], hs: f32[7,3]) {
  %hf, %kf, %hs = scan @pick(%h, %k, %idx) {length=7, carries=2}
  return %hf, %kf, %hs
}
