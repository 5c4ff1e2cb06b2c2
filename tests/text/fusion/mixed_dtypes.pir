// test: plan
// bf16 storage, f32 arithmetic: the converts on both sides of the arithmetic
// are fused into one kernel that reads bf16 and writes bf16.
func @main(%x: bf16[64], %y: bf16[64]) -> (z: bf16[64]) {
  %xf = convert %x : f32[64]
  %yf = convert %y : f32[64]
  %p = mul %xf, %yf
  %e = exp %p
  %z = convert %e : bf16[64]
  return %z
}
