// Image rows split over data: a 5x5 "same" convolution exchanges 2 rows with
// each neighbour, a 3x3 "same" max pool 1 row; nothing else moves.
mesh [data=4]

func @main(%x: f32[2,16,8,3] on [_, data, _, _], %k: f32[5,5,3,4]) -> (y: f32[2,16,8,4] on [_, data, _, _]) {
  %c = convolution %x, %k {dims="b01f_01io->b01f", padding=[[2,2],[2,2]]} : f32[2,16,8,4]
  %t = tanh %c
  %y = reduce_window %t {kind=max, window=[1,3,3,1], padding=[[0,0],[1,1],[1,1],[0,0]]} : f32[2,16,8,4]
  return %y
}
