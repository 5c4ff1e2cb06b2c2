mesh [ring=3]

spmd func @main(%x: f32[2,3] on [ring, _]) -> (rs: f32[2,1] on [_, ring],
                                              cp: f32[2,3] on [ring, _],
                                              ag: f32[6,3],
                                              ar: f32[2,3],
                                              a2a: f32[2,3] on [ring, _]) {
  %rs = reduce_scatter %x {axes=[ring], dim=1, kind=sum} : f32[2,1]
  %cp = collective_permute %x {axes=[ring], shift=2} : f32[2,3]
  %ag = all_gather %x {axes=[ring], dim=0} : f32[6,3]
  %ar = all_reduce %x {axes=[ring], kind=max} : f32[2,3]
  %a2a = all_to_all %x {axes=[ring], split_dim=1, concat_dim=1} : f32[2,3]
  return %rs, %cp, %ag, %ar, %a2a
}
