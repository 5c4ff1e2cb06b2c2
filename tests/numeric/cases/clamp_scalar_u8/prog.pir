func @main(%lo: u8[],
           %x: u8[8],
           %hi: u8[]) -> (y: u8[8]) {
  %y = clamp %lo, %x, %hi : u8[8]
  return %y
}
