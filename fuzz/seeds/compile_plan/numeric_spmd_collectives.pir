mesh [data=2, model=2]

spmd func @main(%x: f32[2,4] on [data, model],
                %y: f32[2,4] on [_, model],
                %n: i32[1,3] on [_, model]) -> (ar: f32[2,4] on [data, _],
                                                armin: f32[2,4] on [data, _],
                                                armax: f32[2,4],
                                                arprod: f32[2,4] on [_, model],
                                                ag: f32[2,16],
                                                rs: f32[2,2] on [model, data],
                                                a2a: f32[4,2] on [data, model],
                                                cp: f32[2,4] on [data, model],
                                                cp2: f32[2,4] on [data, model],
                                                xi: f32[2,4] on [data, model],
                                                idx: i32[1,1] on [data, model],
                                                nag: i32[1,6]) {
  %ar = all_reduce %x {axes=[model], kind=sum} : f32[2,4]
  %armin = all_reduce %x {axes=[model], kind=min} : f32[2,4]
  %armax = all_reduce %x {axes=[data, model], kind=max} : f32[2,4]
  %arprod = all_reduce %y {axes=[data], kind=prod} : f32[2,4]
  %ag = all_gather %x {axes=[model, data], dim=1} : f32[2,16]
  %rs = reduce_scatter %x {axes=[data], dim=1, kind=sum} : f32[2,2]
  %a2a = all_to_all %x {axes=[model], split_dim=1, concat_dim=0} : f32[4,2]
  %cp = collective_permute %x {axes=[data], shift=1} : f32[2,4]
  %cp2 = collective_permute %x {axes=[data, model], shift=-1} : f32[2,4]
  %m = axis_index {axis=model} : i32[]
  %d = axis_index {axis=data} : i32[]
  %mf = convert %m : f32[]
  %mb = broadcast %mf : f32[2,4]
  %xi = add %x, %mb : f32[2,4]
  %ten = constant 10 : i32[]
  %d10 = mul %d, %ten : i32[]
  %dm = add %d10, %m : i32[]
  %idx = reshape %dm : i32[1,1]
  %nag = all_gather %n {axes=[model], dim=1} : i32[1,6]
  return %ar, %armin, %armax, %arprod, %ag, %rs, %a2a, %cp, %cp2, %xi, %idx, %nag
}
