func @main(%x: f32[5,7],
           %b: u8[4,3,6],
           %i: i32[],
           %j: i32[],
           %k: i32[]) -> (y: f32[2,3], z: u8[2,2,4]) {
  %y = dynamic_slice %x, %i, %j {sizes=[2, 3]} : f32[2,3]
  %z = dynamic_slice %b, %i, %k, %j {sizes=[2, 2, 4]} : u8[2,2,4]
  return %y, %z
}
