//! TEMPORARY: the hand-written rules as they were, the oracle the declared
//! rules are checked against while they replace them.
#![allow(dead_code)]

enum Family { Elementwise, Source, Broadcast, Reshape, Transpose, Slice, Concat, DynamicSlice, DynamicUpdateSlice, Pad, Reverse, Reduce, ArgReduce, Dot, Convolution, Window, Gather, ScatterAdd, None }

fn family(op: pjc_ir::Opcode) -> Family {
    use pjc_ir::Opcode::*;
    match op {
        _ if op.def().elementwise => Family::Elementwise,
        Constant | Iota => Family::Source,
        Broadcast => Family::Broadcast,
        Reshape => Family::Reshape,
        Transpose => Family::Transpose,
        Slice => Family::Slice,
        Concat => Family::Concat,
        DynamicSlice => Family::DynamicSlice,
        DynamicUpdateSlice => Family::DynamicUpdateSlice,
        Pad => Family::Pad,
        Reverse => Family::Reverse,
        Reduce => Family::Reduce,
        Argmax | Argmin => Family::ArgReduce,
        DotGeneral => Family::Dot,
        Convolution => Family::Convolution,
        ReduceWindow | SelectAndScatterAdd => Family::Window,
        Gather => Family::Gather,
        ScatterAdd => Family::ScatterAdd,
        _ => Family::None,
    }
}

use pjc_ir::infer::{parse_conv_labels, resolved_attr};
use pjc_ir::{Function, InstData, TensorType};

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum FactorKind {
    /// Sharding it on one tensor shards it the same way on all tensors it appears in.
    Pass,
    /// Appears only in operands; sharding it leaves partial results to reduce.
    Reduction,
    /// Cannot be split: such dims stay replicated unless annotated.
    NeedReplication,
    /// Splitting needs neighbour exchange (halo, reversal); still propagated.
    Permutation,
}

/// A factor rule instance: `dims[t][d]` lists the factors (major to minor) that
/// dimension `d` of tensor `t` (operands first, then results) is made of.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FactorRule {
    pub kinds: Vec<FactorKind>,
    /// The size of each factor.
    pub sizes: Vec<u64>,
    pub dims: Vec<Vec<Vec<usize>>>,
}

impl FactorRule {
    fn with_tensors(types: &[&TensorType]) -> FactorRule {
        FactorRule { kinds: vec![], sizes: vec![], dims: types.iter().map(|t| vec![vec![]; t.rank()]).collect() }
    }
    fn factor(&mut self, kind: FactorKind, size: u64) -> usize {
        self.kinds.push(kind);
        self.sizes.push(size);
        self.kinds.len() - 1
    }
    /// A new factor of dimension `d` of tensor `t` and of every other (tensor, dim) listed.
    fn link(&mut self, kind: FactorKind, size: u64, at: &[(usize, usize)]) {
        if size <= 1 {
            return; // a size-1 dimension cannot be split
        }
        let f = self.factor(kind, size);
        for &(t, d) in at {
            self.dims[t][d].push(f);
        }
    }

    /// Identity between two tensors of the same shape (calls, returns).
    pub fn identity(t: &TensorType) -> FactorRule {
        let mut r = FactorRule::with_tensors(&[t, t]);
        for d in 0..t.rank() {
            r.link(FactorKind::Pass, t.shape[d], &[(0, d), (1, d)]);
        }
        r
    }
}

/// Splits the axes of a dimension among its factors (major first): each factor
/// takes axes while their product divides it, and a minor factor gets axes only
/// once the major ones are split completely (there are no sub-axes).
pub fn split_axes(mesh: &pjc_ir::Mesh, axes: &[String], factors: &[usize], sizes: &[u64]) -> Vec<Vec<String>> {
    let mut out = vec![vec![]; factors.len()];
    let (mut k, mut prod) = (0, 1);
    for a in axes {
        while k < factors.len() && prod == sizes[factors[k]] {
            k += 1;
            prod = 1;
        }
        if k >= factors.len() {
            break;
        }
        let s = mesh.size(a).unwrap_or(1);
        if sizes[factors[k]] % (prod * s) != 0 {
            break;
        }
        prod *= s;
        out[k].push(a.clone());
    }
    out
}

fn ints(inst: &InstData, name: &str, ops: &[&TensorType]) -> Vec<i64> {
    resolved_attr(inst, name, ops).and_then(|v| v.as_ints()).unwrap_or_default()
}

fn pairs(inst: &InstData, name: &str, ops: &[&TensorType]) -> Vec<(i64, i64)> {
    resolved_attr(inst, name, ops).and_then(|v| v.as_pairs()).unwrap_or_default()
}

/// The factor rule of `inst` in `f` (operands, then results). Ops without
/// propagation (collectives, calls, transforms) get a rule with no factors.
pub fn factor_rule(f: &Function, inst: &InstData) -> FactorRule {
    use FactorKind::*;
    let ops: Vec<&TensorType> = inst.operands.iter().map(|&v| f.ty(v)).collect();
    let res: Vec<&TensorType> = inst.results.iter().map(|&v| f.ty(v)).collect();
    let all: Vec<&TensorType> = ops.iter().chain(res.iter()).copied().collect();
    let mut r = FactorRule::with_tensors(&all);
    let n = ops.len(); // index of the (first) result
    let out = res.first().copied();
    match family(inst.op) {
        Family::Elementwise => {
            let out = out.unwrap();
            for d in 0..out.rank() {
                let mut at: Vec<(usize, usize)> = (0..n).filter(|&t| ops[t].rank() == out.rank()).map(|t| (t, d)).collect();
                at.push((n, d));
                r.link(Pass, out.shape[d], &at);
            }
        }
        Family::Source => {
            let out = out.unwrap();
            for d in 0..out.rank() {
                r.link(Pass, out.shape[d], &[(n, d)]);
            }
        }
        Family::Broadcast => {
            let out = out.unwrap();
            let dims = ints(inst, "dims", &ops);
            for d in 0..out.rank() {
                match dims.iter().position(|&x| x as usize == d) {
                    Some(i) if ops[0].shape[i] == out.shape[d] => r.link(Pass, out.shape[d], &[(0, i), (n, d)]),
                    _ => r.link(Pass, out.shape[d], &[(n, d)]),
                }
            }
        }
        Family::Reshape => reshape_rule(&mut r, ops[0], out.unwrap(), n),
        Family::Transpose => {
            let perm = ints(inst, "perm", &ops);
            for (i, &p) in perm.iter().enumerate() {
                r.link(Pass, ops[0].shape[p as usize], &[(0, p as usize), (n, i)]);
            }
        }
        Family::Slice | Family::DynamicSlice => {
            let out = out.unwrap();
            let unchanged = |d: usize| {
                if inst.op == pjc_ir::Opcode::Slice {
                    let (s, l, st) = (ints(inst, "start", &ops), ints(inst, "limit", &ops), ints(inst, "stride", &ops));
                    s[d] == 0 && l[d] as u64 == ops[0].shape[d] && st[d] == 1
                } else {
                    ops[0].shape[d] == out.shape[d]
                }
            };
            for d in 0..out.rank() {
                if unchanged(d) {
                    r.link(Pass, out.shape[d], &[(0, d), (n, d)]);
                } else {
                    r.link(NeedReplication, ops[0].shape[d], &[(0, d)]);
                    r.link(NeedReplication, out.shape[d], &[(n, d)]);
                }
            }
        }
        Family::Concat => {
            let out = out.unwrap();
            let dim = resolved_attr(inst, "dim", &ops).and_then(|v| v.as_int()).unwrap_or(0) as usize;
            for d in 0..out.rank() {
                if d == dim {
                    for t in 0..n {
                        r.link(NeedReplication, ops[t].shape[d], &[(t, d)]);
                    }
                    r.link(NeedReplication, out.shape[d], &[(n, d)]);
                } else {
                    let at: Vec<(usize, usize)> = (0..=n).map(|t| (t, d)).collect();
                    r.link(Pass, out.shape[d], &at);
                }
            }
        }
        Family::DynamicUpdateSlice => {
            let out = out.unwrap();
            for d in 0..out.rank() {
                if ops[1].shape[d] == out.shape[d] {
                    r.link(Pass, out.shape[d], &[(0, d), (1, d), (n, d)]);
                } else {
                    // Where the update is smaller, which device it lands on depends
                    // on run-time indices: the dim cannot be split.
                    r.link(NeedReplication, out.shape[d], &[(0, d), (n, d)]);
                    r.link(NeedReplication, ops[1].shape[d], &[(1, d)]);
                }
            }
        }
        Family::Pad => {
            let out = out.unwrap();
            let (lo, hi, int) = (ints(inst, "low", &ops), ints(inst, "high", &ops), ints(inst, "interior", &ops));
            for d in 0..out.rank() {
                if lo[d] == 0 && hi[d] == 0 && int[d] == 0 {
                    r.link(Pass, out.shape[d], &[(0, d), (n, d)]);
                } else {
                    r.link(NeedReplication, ops[0].shape[d], &[(0, d)]);
                    r.link(NeedReplication, out.shape[d], &[(n, d)]);
                }
            }
        }
        Family::Reverse => {
            let out = out.unwrap();
            let dims = ints(inst, "dims", &ops);
            for d in 0..out.rank() {
                let kind = if dims.contains(&(d as i64)) { Permutation } else { Pass };
                r.link(kind, out.shape[d], &[(0, d), (n, d)]);
            }
        }
        Family::Reduce | Family::ArgReduce => {
            let reduced: Vec<usize> = if inst.op == pjc_ir::Opcode::Reduce {
                ints(inst, "dims", &ops).iter().map(|&d| d as usize).collect()
            } else {
                vec![resolved_attr(inst, "dim", &ops).and_then(|v| v.as_int()).unwrap_or(0) as usize]
            };
            let kind = if inst.op == pjc_ir::Opcode::Reduce { Reduction } else { NeedReplication };
            let mut k = 0;
            for d in 0..ops[0].rank() {
                if reduced.contains(&d) {
                    r.link(kind, ops[0].shape[d], &[(0, d)]);
                } else {
                    r.link(Pass, ops[0].shape[d], &[(0, d), (n, k)]);
                    k += 1;
                }
            }
        }
        Family::Dot => {
            let (l, rr) = (ops[0], ops[1]);
            let (lb, rb) = (ints(inst, "lhs_batch", &ops), ints(inst, "rhs_batch", &ops));
            let (lc, rc) = (ints(inst, "lhs_contract", &ops), ints(inst, "rhs_contract", &ops));
            let mut k = 0;
            for (&a, &b) in lb.iter().zip(&rb) {
                r.link(Pass, l.shape[a as usize], &[(0, a as usize), (1, b as usize), (n, k)]);
                k += 1;
            }
            for d in 0..l.rank() as i64 {
                if !lb.contains(&d) && !lc.contains(&d) {
                    r.link(Pass, l.shape[d as usize], &[(0, d as usize), (n, k)]);
                    k += 1;
                }
            }
            for d in 0..rr.rank() as i64 {
                if !rb.contains(&d) && !rc.contains(&d) {
                    r.link(Pass, rr.shape[d as usize], &[(1, d as usize), (n, k)]);
                    k += 1;
                }
            }
            for (&a, &b) in lc.iter().zip(&rc) {
                r.link(Reduction, l.shape[a as usize], &[(0, a as usize), (1, b as usize)]);
            }
        }
        Family::Convolution => conv_rule(&mut r, inst, &ops, out.unwrap(), n),
        Family::Window => {
            let (window, strides, padding) = (ints(inst, "window", &ops), ints(inst, "strides", &ops), pairs(inst, "padding", &ops));
            let out = out.unwrap();
            // reduce_window: (operand) -> result; select_and_scatter_add: (source, operand) -> result.
            let operand = if inst.op == pjc_ir::Opcode::SelectAndScatterAdd { 1 } else { 0 };
            for d in 0..out.rank() {
                let trivial = window[d] == 1 && strides[d] == 1 && padding[d] == (0, 0);
                let kind = if trivial { Pass } else { Permutation };
                let at: Vec<(usize, usize)> = (0..=n).map(|t| (t, d)).collect();
                r.link(kind, ops[operand].shape[d], &at);
            }
        }
        Family::Gather | Family::ScatterAdd => {
            let axis = resolved_attr(inst, "axis", &ops).and_then(|v| v.as_int()).unwrap_or(0) as usize;
            let (table, idx) = (ops[0], ops[1]);
            let ir = idx.rank();
            let scatter = inst.op == pjc_ir::Opcode::ScatterAdd;
            // The gathered shape is table[:axis] + idx + table[axis+1:]: the result
            // for gather, the updates (operand 2) for scatter_add.
            let g = if scatter { 2 } else { n };
            for d in 0..table.rank() {
                if d == axis {
                    let mut at = vec![(0, d)];
                    if scatter {
                        at.push((n, d));
                    }
                    r.link(NeedReplication, table.shape[d], &at);
                } else {
                    let gd = if d < axis { d } else { d - 1 + ir };
                    let mut at = vec![(0, d), (g, gd)];
                    if scatter {
                        at.push((n, d));
                    }
                    r.link(Pass, table.shape[d], &at);
                }
            }
            for d in 0..ir {
                let kind = if scatter { Reduction } else { Pass };
                r.link(kind, idx.shape[d], &[(1, d), (g, axis + d)]);
            }
        }
        Family::None => {}
    }
    r
}

/// Reshape: dims are split into the common refinement of the two shapes; where
/// no refinement exists (e.g. [6,4] -> [4,6]) the dims involved need replication.
fn reshape_rule(r: &mut FactorRule, a: &TensorType, b: &TensorType, n: usize) {
    use FactorKind::*;
    // Walk both shapes, ignoring size-1 dims, in groups between common boundaries.
    let (sa, sb) = (&a.shape, &b.shape);
    let (mut i, mut j) = (0, 0);
    loop {
        while i < sa.len() && sa[i] == 1 {
            i += 1;
        }
        while j < sb.len() && sb[j] == 1 {
            j += 1;
        }
        if i >= sa.len() || j >= sb.len() {
            break;
        }
        // Grow a group until the products match.
        let (gi, gj) = (i, j);
        let (mut pa, mut pb) = (sa[i], sb[j]);
        i += 1;
        j += 1;
        while pa != pb {
            if pa < pb {
                pa *= sa[i];
                i += 1;
            } else {
                pb *= sb[j];
                j += 1;
            }
        }
        // Boundaries of running products inside the group, from both sides.
        let mut bounds: Vec<u64> = vec![];
        let mut p = 1;
        for &s in &sa[gi..i] {
            p *= s;
            bounds.push(p);
        }
        p = 1;
        for &s in &sb[gj..j] {
            p *= s;
            bounds.push(p);
        }
        bounds.sort_unstable();
        bounds.dedup();
        let mut prev = 1;
        let ok = bounds.iter().all(|&q| {
            let good = q % prev == 0;
            prev = q;
            good
        });
        if !ok {
            for d in gi..i {
                r.link(NeedReplication, sa[d], &[(0, d)]);
            }
            for d in gj..j {
                r.link(NeedReplication, sb[d], &[(n, d)]);
            }
            continue;
        }
        // One factor per refinement step, attached to the dim of each side that contains it.
        let mut prev = 1;
        let (mut da, mut db) = (gi, gj);
        let (mut ea, mut eb) = (sa[gi], sb[gj]); // running product at the end of the current dim
        for &q in &bounds {
            let size = q / prev;
            if size > 1 {
                let f = r.factor(Pass, size);
                r.dims[0][da].push(f);
                r.dims[n][db].push(f);
            }
            prev = q;
            if q == ea && da + 1 < i {
                da += 1;
                while da < i && sa[da] == 1 {
                    da += 1;
                }
                ea *= sa[da.min(i - 1)];
            }
            if q == eb && db + 1 < j {
                db += 1;
                while db < j && sb[db] == 1 {
                    db += 1;
                }
                eb *= sb[db.min(j - 1)];
            }
        }
    }
}

fn conv_rule(r: &mut FactorRule, inst: &InstData, ops: &[&TensorType], out: &TensorType, n: usize) {
    use FactorKind::*;
    let (x, k) = (ops[0], ops[1]);
    let Some(labels) = resolved_attr(inst, "dims", ops).and_then(|v| v.as_str().map(str::to_string)) else { return };
    let Ok(l) = parse_conv_labels(&labels, x.rank()) else { return };
    let int = |name: &str| resolved_attr(inst, name, ops).and_then(|v| v.as_int()).unwrap_or(1);
    let (fgc, bgc) = (int("feature_group_count"), int("batch_group_count"));
    let (strides, padding) = (ints(inst, "window_strides", ops), pairs(inst, "padding", ops));
    let (ld, rd) = (ints(inst, "lhs_dilation", ops), ints(inst, "rhs_dilation", ops));
    if bgc == 1 {
        r.link(Pass, x.shape[l.in_batch], &[(0, l.in_batch), (n, l.out_batch)]);
    } else {
        r.link(NeedReplication, x.shape[l.in_batch], &[(0, l.in_batch)]);
        r.link(NeedReplication, out.shape[l.out_batch], &[(n, l.out_batch)]);
    }
    if fgc == 1 && bgc == 1 {
        r.link(Reduction, x.shape[l.in_feature], &[(0, l.in_feature), (1, l.k_in)]);
        r.link(Pass, k.shape[l.k_out], &[(1, l.k_out), (n, l.out_feature)]);
    } else {
        r.link(NeedReplication, x.shape[l.in_feature], &[(0, l.in_feature)]);
        r.link(NeedReplication, k.shape[l.k_in], &[(1, l.k_in)]);
        r.link(NeedReplication, k.shape[l.k_out], &[(1, l.k_out)]);
        r.link(NeedReplication, out.shape[l.out_feature], &[(n, l.out_feature)]);
    }
    for s in 0..l.in_spatial.len() {
        let trivial = k.shape[l.k_spatial[s]] == 1 && strides[s] == 1 && padding[s] == (0, 0) && ld[s] == 1 && rd[s] == 1;
        let kind = if trivial { Pass } else { Permutation };
        r.link(kind, x.shape[l.in_spatial[s]], &[(0, l.in_spatial[s]), (n, l.out_spatial[s])]);
        r.link(NeedReplication, k.shape[l.k_spatial[s]], &[(1, l.k_spatial[s])]);
    }
}


/// TEMPORARY: compares the declared rules with the legacy ones on every
/// instruction of every func of `m`: the same factors (up to numbering), on
/// the same dims in the same major-to-minor order, of the same kinds and
/// sizes; reduction factors in the same relative order; and the same
/// completion as the partitioner's old `reduction_kind`.
pub fn compare(m: &pjc_ir::Module) -> Result<usize, String> {
    let mut n = 0;
    for f in m.funcs.values() {
        if f.kind == pjc_ir::FuncKind::Spmd {
            continue;
        }
        for &i in &f.body {
            let inst = &f.insts[i];
            let old = factor_rule(f, inst);
            let new = crate::rules::factor_rule(f, inst);
            n += 1;
            // Canonical numbering: by first appearance (tensor, dim, position).
            let canon = |dims: &Vec<Vec<Vec<usize>>>, nf: usize| {
                let mut map = vec![usize::MAX; nf];
                let mut next = 0;
                for t in dims {
                    for d in t {
                        for &x in d {
                            if map[x] == usize::MAX {
                                map[x] = next;
                                next += 1;
                            }
                        }
                    }
                }
                map
            };
            let (mo, mn) = (canon(&old.dims, old.kinds.len()), canon(&new.dims, new.kinds.len()));
            let ren = |dims: &Vec<Vec<Vec<usize>>>, map: &Vec<usize>| -> Vec<Vec<Vec<usize>>> {
                dims.iter().map(|t| t.iter().map(|d| d.iter().map(|&x| map[x]).collect()).collect()).collect()
            };
            let kind_of = |k: FactorKind| match k {
                FactorKind::Pass => crate::rules::FactorKind::Pass,
                FactorKind::Reduction => crate::rules::FactorKind::Reduction,
                FactorKind::NeedReplication => crate::rules::FactorKind::NeedReplication,
                FactorKind::Permutation => crate::rules::FactorKind::Permutation,
            };
            let by = |kinds: Vec<crate::rules::FactorKind>, sizes: &Vec<u64>, map: &Vec<usize>| {
                let mut v = vec![(crate::rules::FactorKind::Pass, 0u64); kinds.len()];
                for (f, &c) in map.iter().enumerate() {
                    if c != usize::MAX {
                        v[c] = (kinds[f], sizes[f]);
                    }
                }
                v
            };
            let ok_dims = ren(&old.dims, &mo) == ren(&new.dims, &mn);
            let ok_kinds = old.kinds.len() == new.kinds.len()
                && by(old.kinds.iter().map(|&k| kind_of(k)).collect(), &old.sizes, &mo) == by(new.kinds.clone(), &new.sizes, &mn);
            let red = |kinds: Vec<crate::rules::FactorKind>, map: &Vec<usize>| -> Vec<usize> {
                (0..kinds.len()).filter(|&f| kinds[f] == crate::rules::FactorKind::Reduction).map(|f| map[f]).collect()
            };
            let ok_red = red(old.kinds.iter().map(|&k| kind_of(k)).collect(), &mo) == red(new.kinds.clone(), &mn);
            // The old reduction_kind of the partitioner.
            let old_completion: Option<&str> = match inst.op {
                pjc_ir::Opcode::DotGeneral | pjc_ir::Opcode::Convolution => Some("sum"),
                pjc_ir::Opcode::Reduce => {
                    let dt = f.ty(inst.operands[0]).dtype;
                    match inst.attr("kind").and_then(|k| k.as_ident()) {
                        Some("sum") if !dt.is_pred() => Some("sum"),
                        Some("prod") if !dt.is_pred() => Some("prod"),
                        Some("max") => Some("max"),
                        Some("min") => Some("min"),
                        Some("sum") | Some("or") if dt.is_pred() => Some("max"),
                        Some("prod") | Some("and") if dt.is_pred() => Some("min"),
                        _ => None,
                    }
                }
                _ => None,
            };
            let has_red = new.kinds.contains(&crate::rules::FactorKind::Reduction);
            let ok_comp = !has_red || new.completion.map(|c| c.kind.name()) == old_completion;
            let old_priority = match family(inst.op) {
                Family::Elementwise | Family::Reshape | Family::Transpose | Family::Source => Some(0),
                Family::Broadcast => Some(2),
                Family::None => None,
                _ => Some(1),
            };
            let ok_prio = old_priority.is_none_or(|p| p == inst.op.def().sharding.priority());
            if !ok_prio {
                return Err(format!("{} in @{}: priority {:?} vs {}", inst.op, f.name, old_priority, inst.op.def().sharding.priority()));
            }
            if !(ok_dims && ok_kinds && ok_red && ok_comp) {
                return Err(format!(
                    "{} in @{}: legacy {:?} vs declared {:?} (dims {ok_dims}, kinds {ok_kinds}, reductions {ok_red}, completion {ok_comp})",
                    inst.op, f.name, old, new
                ));
            }
        }
    }
    Ok(n)
}
