// test: plan --device cuda
// sort, top_k and scatter are library steps: the CPU runs the host library's
// sort and scatter; on CUDA each runs its device kernels instead, so no step
// runs on the host. sort and top_k rank every element of a row against the
// others (k*_rank_device, a sum per element), invert the ranks
// (k*_perm_device) and gather every result through the permutation
// (k*_device: one kernel with an output per result; floats move as unsigned
// integers of their width, bit for bit). scatter set finds the last update
// landing on each element (k*_winner_device) then writes it; the combining
// kinds are one reduction per element over every update and the base.
func @main(%k: f32[4,6], %v: i32[4,6], %b: bf16[5,3], %i: i32[4], %u: bf16[4,3]) -> (a: f32[4,6], av: i32[4,6], t: f32[4,2], ti: i32[4,2], s: bf16[5,3], m: bf16[5,3]) {
  %a, %av = sort %k, %v {dim=1, num_keys=2, descending=true}
  %t, %ti = top_k %k {k=2}
  %s = scatter %b, %i, %u {axis=0, kind=set}
  %m = scatter %b, %i, %u {axis=0, kind=max}
  return %a, %av, %t, %ti, %s, %m
}
