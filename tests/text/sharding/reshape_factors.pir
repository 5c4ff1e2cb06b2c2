// test: sharded
// Reshape splits and merges dimensions into common factors; a split survives
// when its factor is whole on both sides:
// - %m: [8,6] -> [48]: the split major dim survives the merge;
// - %s: [8,6] -> [4,12]: factors 4·2 and 6; data (4) covers the factor 4;
// - %n: [6,8] split on the minor dim -> [48]: a minor split cannot survive a
//   merge behind an unsplit major dim;
// - %r: [8,6] -> [6,8]: no common factoring, so replicated;
// - %t: [24] -> [4,6] splits; %u: [24] -> [6,4] cannot (4 does not divide 6).
mesh [data=4]

func @main(%a: f32[8,6] on [data, _], %b: f32[6,8] on [_, data], %c: f32[24] on [data]) -> (m: f32[48], s: f32[4,12], n: f32[48], r: f32[6,8], t: f32[4,6], u: f32[6,4]) {
  %m = reshape %a : f32[48]
  %s = reshape %a : f32[4,12]
  %n = reshape %b : f32[48]
  %r = reshape %a : f32[6,8]
  %t = reshape %c : f32[4,6]
  %u = reshape %c : f32[6,4]
  return %m, %s, %n, %r, %t, %u
}
