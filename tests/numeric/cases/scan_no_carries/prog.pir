func @sq(%x: f32[2], %k: i16[]) -> (f32[2], i16[]) {
  %xx = mul %x, %x
  %one = constant 1 : i16[]
  %k1 = add %k, %one
  return %xx, %k1
}

func @main(%xs: f32[3,2],
           %ks: i16[3]) -> (sq: f32[3,2], k1: i16[3], rsq: f32[3,2], rk1: i16[3]) {
  %sq, %k1 = scan @sq(%xs, %ks) {length=3, carries=0}
  %rsq, %rk1 = scan @sq(%xs, %ks) {length=3, carries=0, reverse=true}
  return %sq, %k1, %rsq, %rk1
}
