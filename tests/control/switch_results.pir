// Branch results: a parameter, a constant, a computed value, in bf16 and i32;
// a one-branch switch; an index out of range both ways; an unsigned index.
func @id(%x: bf16[6], %k: i32[]) -> (bf16[6], i32[]) {
  return %x, %k
}

func @konst(%x: bf16[6], %k: i32[]) -> (bf16[6], i32[]) {
  %c = constant 1.5 : bf16[6]
  %m = constant -7 : i32[]
  return %c, %m
}

func @calc(%x: bf16[6], %k: i32[]) -> (bf16[6], i32[]) {
  %y = mul %x, %x
  %z = add %y, %x
  %two = constant 2 : i32[]
  %k2 = mul %k, %two
  return %z, %k2
}

func @main(%x: bf16[6], %k: i32[], %i: i32[], %u: u8[]) -> (a: bf16[6], ak: i32[], b: bf16[6], bk: i32[], c: bf16[6], ck: i32[], d: bf16[6], dk: i32[], e: bf16[6], ek: i32[]) {
  %a, %ak = switch %i, @id, @konst, @calc(%x, %k)
  %lo = constant -3 : i32[]
  %b, %bk = switch %lo, @id, @konst, @calc(%x, %k)
  %hi = constant 9 : i32[]
  %c, %ck = switch %hi, @id, @konst, @calc(%x, %k)
  %d, %dk = switch %u, @calc, @konst(%x, %k)
  %e, %ek = switch %i, @calc(%x, %k)
  return %a, %ak, %b, %bk, %c, %ck, %d, %dk, %e, %ek
}
