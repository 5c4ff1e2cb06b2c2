// test: fmt
// Every elementwise op, result types left for inference where allowed.
func @main(%x: f32[2,3], %y: f32[2,3], %i: i32[2,3], %j: i32[2,3], %u: u8[2,3], %p: pred[2,3], %q: pred[]) -> (f: f32[2,3], n: i32[2,3], b: pred[2,3], c: bf16[2,3], w: u32[2,3]) {
  %neg = neg %x
  %abs = abs %neg
  %exp = exp %abs
  %log = log %exp
  %log1p = log1p %log
  %expm1 = expm1 %log1p
  %sqrt = sqrt %expm1
  %rsqrt = rsqrt %sqrt
  %tanh = tanh %rsqrt
  %logistic = logistic %tanh
  %erf = erf %logistic
  %sin = sin %erf
  %cos = cos %sin
  %floor = floor %cos
  %ceil = ceil %floor
  %round = round %ceil
  %round_even = round_even %round
  %sign = sign %round_even
  %add = add %sign, %y
  %sub = sub %add, %y
  %mul = mul %sub, %y
  %div = div %mul, %y
  %rem = rem %div, %y
  %max = max %rem, %y
  %min = min %max, %y
  %pow = pow %min, %y
  %atan2 = atan2 %pow, %y
  %lo = constant -1.0 : f32[]
  %hi = constant 1.0 : f32[]
  %clamp = clamp %lo, %atan2, %hi
  %lt = compare %clamp, %y {dir=lt}
  %fin = is_finite %clamp
  %both = and %lt, %fin
  %sel = select %both, %clamp, %y
  %f = select %q, %sel, %x
  %ineg = neg %i
  %iabs = abs %ineg
  %isign = sign %iabs
  %inot = not %isign
  %iand = and %inot, %j
  %ior = or %iand, %j
  %ixor = xor %ior, %j
  %ishl = shl %ixor, %j
  %ishr = shr %ishl, %j
  %irem = rem %ishr, %j
  %n = div %irem, %j
  %ushr = shr %u, %u
  %eq = compare %i, %j {dir=eq}
  %ne = compare %ushr, %u {dir=ne}
  %pnot = not %p
  %por = or %pnot, %eq
  %pxor = xor %por, %ne
  %padd = add %pxor, %p
  %pmul = mul %padd, %p
  %pmax = max %pmul, %p
  %b = min %pmax, %p
  %c = convert %f : bf16[2,3]
  %w = bitcast_convert %x : u32[2,3]
  return %f, %n, %b, %c, %w
}
