func @main(%x: u16[4,6]) -> (sx: u16[4,6], si: i32[4,6]) {
  %i = iota {dim=1} : i32[4,6]
  %sx, %si = sort %x, %i {dim=1} : (u16[4,6], i32[4,6])
  return %sx, %si
}
