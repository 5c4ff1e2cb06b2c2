func @count(%c: i32[2], %s: f64[]) -> (i32[2], f64[], i32[2], f64[]) {
  %three = constant 3 : i32[2]
  %one = constant 1 : i32[2]
  %c3 = mul %c, %three
  %c2 = add %c3, %one
  %h = constant 0.5 : f64[]
  %s2 = mul %s, %h
  return %c2, %s2, %c, %s
}

func @main(%c: i32[2],
           %s: f64[]) -> (cf: i32[2], sf: f64[], cs: i32[4,2], ss: f64[4]) {
  %cf, %sf, %cs, %ss = scan @count(%c, %s) {length=4, carries=2}
  return %cf, %sf, %cs, %ss
}
