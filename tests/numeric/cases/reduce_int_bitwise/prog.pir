func @main(%x: i32[5,7],
           %y: u8[4,9]) -> (x_and1: i32[5], x_or0: i32[7], y_and1: u8[4], y_or01: u8[]) {
  %x_and1 = reduce %x {dims=[1], kind=and} : i32[5]
  %x_or0 = reduce %x {dims=[0], kind=or} : i32[7]
  %y_and1 = reduce %y {dims=[1], kind=and} : u8[4]
  %y_or01 = reduce %y {dims=[0, 1], kind=or} : u8[]
  return %x_and1, %x_or0, %y_and1, %y_or01
}
