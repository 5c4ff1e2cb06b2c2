//! Instantiates an op's factor rule for one instruction: which factors each
//! dimension of each operand and result is made of, what kind each factor is,
//! and how split reductions are completed. Most ops declare their rule in the
//! op table (`pjc_dialects::sharding`: an [`Einsum`] or a [`PerDim`] rule,
//! instantiated here from the instruction's attributes and types); reshape,
//! convolution, gather and scatter_add are written by hand in `rules/`.
//! Propagation, the partitioner and `pjc explain`'s notation
//! ([`FactorRule::notation`]) all use this one instance.

mod conv;
mod gather;
mod reshape;

pub use crate::factor::{Completion, FactorRule};
pub use pjc_dialects::FactorKind;
use pjc_dialects::sharding::{Combine, Custom, DimTest, Dims, Einsum, Otherwise, PerDim, Place, ShardingRule, Tensor};
use pjc_ir::{AttrError, Attrs, Function, InstData, ReduceKind, TensorType};

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

/// The factor rule of `inst` in `f` (operands, then results). Ops without
/// propagation (collectives, calls, transforms) get a rule with no factors, as
/// does an instruction whose attributes do not fit its rule (verified
/// instructions always fit).
pub fn factor_rule(f: &Function, inst: &InstData) -> FactorRule {
    let ops: Vec<&TensorType> = inst.operands.iter().map(|&v| f.ty(v)).collect();
    let all: Vec<&TensorType> = inst.operands.iter().chain(&inst.results).map(|&v| f.ty(v)).collect();
    let n = ops.len();
    let a = Attrs::new(inst, &ops);
    let mut r = FactorRule::with_tensors(n, &all);
    let built = match inst.op.def().sharding {
        ShardingRule::Einsum(e) => einsum(&mut r, &e, &a, &all),
        ShardingRule::PerDim(p) => per_dim(&mut r, &p, &a, &all, n),
        ShardingRule::Custom(Custom::Reshape) => {
            reshape::rule(&mut r, all[0], all[n], n);
            Ok(())
        }
        ShardingRule::Custom(Custom::Convolution) => conv::rule(&mut r, &a, &ops, all[n], n),
        ShardingRule::Custom(Custom::Gather) => gather::rule(&mut r, &a, &ops, n, false),
        ShardingRule::Custom(Custom::ScatterAdd) => gather::rule(&mut r, &a, &ops, n, true),
        ShardingRule::Call | ShardingRule::ControlFlow | ShardingRule::Manual | ShardingRule::Transform => Ok(()),
    };
    match built {
        Ok(()) => r,
        Err(_) => FactorRule::with_tensors(n, &all),
    }
}

fn bad(what: String) -> AttrError {
    AttrError(what)
}

/// Instantiates an [`Einsum`]: labels every dim of every tensor with a group
/// element, then makes one factor per element, in the order of the groups,
/// named after its group.
fn einsum(r: &mut FactorRule, e: &Einsum, a: &Attrs, all: &[&TensorType]) -> Result<(), AttrError> {
    let layouts: Vec<&Dims> = e.operands.iter().chain(e.results).collect();
    if layouts.len() != all.len() {
        return Err(bad(format!("{} tensors for a rule of {}", all.len(), layouts.len())));
    }
    // The dims each attribute places, in the order of their group's elements.
    let placed = |p: &Place| -> Result<Vec<usize>, AttrError> {
        Ok(match p {
            Place::List(name) => a.indices(name)?,
            Place::Set(name) => {
                let mut v = a.indices(name)?;
                v.sort_unstable();
                v
            }
            Place::One(name) => vec![a.index(name)?],
        })
    };
    // How many elements each group has, from the tensors that define it.
    let mut count: Vec<Option<usize>> = vec![None; e.groups.len()];
    let group = |c: char| e.groups.iter().position(|g| g.letter == c).ok_or_else(|| bad(format!("undeclared group {c}")));
    for (t, l) in layouts.iter().enumerate() {
        match l {
            Dims::All(c) => {
                count[group(*c)?].get_or_insert(all[t].rank());
            }
            Dims::Placed { at, rest } => {
                let mut used = 0;
                for (c, p) in at.iter() {
                    let k = placed(p)?.len();
                    used += k;
                    count[group(*c)?].get_or_insert(k);
                }
                if let Some(c) = rest {
                    count[group(*c)?].get_or_insert(all[t].rank().saturating_sub(used));
                }
            }
            Dims::Seq(_) => {}
        }
    }
    // The (group, element) of each dim of each tensor.
    fn set(lab: &mut [Option<(usize, usize)>], d: usize, ge: (usize, usize)) -> Result<(), AttrError> {
        match lab.get_mut(d) {
            Some(x @ None) => {
                *x = Some(ge);
                Ok(())
            }
            _ => Err(bad(format!("dim {d} placed twice or out of range"))),
        }
    }
    let mut label: Vec<Vec<(usize, usize)>> = vec![];
    for (t, l) in layouts.iter().enumerate() {
        let rank = all[t].rank();
        let mut lab: Vec<Option<(usize, usize)>> = vec![None; rank];
        match l {
            Dims::All(c) => {
                let g = group(*c)?;
                for d in 0..rank {
                    set(&mut lab, d, (g, d))?;
                }
            }
            Dims::Seq(cs) => {
                let mut d = 0;
                for &c in cs.iter() {
                    let g = group(c)?;
                    for k in 0..count[g].ok_or_else(|| bad(format!("group {c} has no size")))? {
                        set(&mut lab, d, (g, k))?;
                        d += 1;
                    }
                }
            }
            Dims::Placed { at, rest } => {
                for (c, p) in at.iter() {
                    let g = group(*c)?;
                    for (k, d) in placed(p)?.into_iter().enumerate() {
                        set(&mut lab, d, (g, k))?;
                    }
                }
                if let Some(c) = rest {
                    let g = group(*c)?;
                    let free: Vec<usize> = (0..rank).filter(|&d| lab[d].is_none()).collect();
                    for (k, d) in free.into_iter().enumerate() {
                        set(&mut lab, d, (g, k))?;
                    }
                }
            }
        }
        label.push(lab.into_iter().collect::<Option<Vec<_>>>().ok_or_else(|| bad(format!("tensor {t} has dims no group covers")))?);
    }
    // One factor per group element, of its largest dim's size, on the dims of that size.
    for (g, grp) in e.groups.iter().enumerate() {
        for k in 0..count[g].unwrap_or(0) {
            let members: Vec<(usize, usize)> = (0..all.len())
                .flat_map(|t| (0..all[t].rank()).map(move |d| (t, d)))
                .filter(|&(t, d)| label[t][d] == (g, k))
                .collect();
            let size = members.iter().map(|&(t, d)| all[t].shape[d]).max().unwrap_or(0);
            let at: Vec<(usize, usize)> = members.into_iter().filter(|&(t, d)| all[t].shape[d] == size).collect();
            let before = r.kinds.len();
            r.link(grp.kind, size, &at);
            if r.kinds.len() > before {
                r.names.push(if count[g] == Some(1) { grp.letter.to_string() } else { format!("{}{k}", grp.letter) });
            }
        }
    }
    r.completion = match e.reduction.map(|x| (x.combine, x.what)) {
        Some((Combine::Sum, what)) => Some(Completion { kind: ReduceKind::Sum, what }),
        Some((Combine::Kind, what)) => a.reduce_kind()?.collective_for(all[0].dtype).map(|kind| Completion { kind, what }),
        None => None,
    };
    Ok(())
}

/// Instantiates a [`PerDim`] rule: tensors of the (first) result's rank, dim
/// by dim. Every result takes part: ops with several results (`sort`'s sorted
/// operands, `top_k`'s values and indices) split them all alike.
fn per_dim(r: &mut FactorRule, p: &PerDim, a: &Attrs, all: &[&TensorType], n: usize) -> Result<(), AttrError> {
    let out = all[n];
    let rank = out.rank();
    let tensor = |t: Tensor| match t {
        Tensor::Operand(k) => k,
        Tensor::Result => n,
    };
    let part: Vec<usize> = (0..all.len()).filter(|&t| all[t].rank() == rank).collect();
    let passes: Vec<bool> = match p.pass {
        DimTest::Always => vec![true; rank],
        DimTest::NotLast => (0..rank).map(|d| d + 1 != rank).collect(),
        DimTest::NotAt(name) => {
            let at = a.index(name)?;
            (0..rank).map(|d| d != at).collect()
        }
        DimTest::NotIn(name) => {
            let listed = a.indices(name)?;
            (0..rank).map(|d| !listed.contains(&d)).collect()
        }
        DimTest::SameSize(x, y) => {
            let (x, y) = (all[tensor(x)], all[tensor(y)]);
            (0..rank).map(|d| x.shape.get(d) == y.shape.get(d)).collect()
        }
        DimTest::Zero(names) => {
            let lists = names.iter().map(|name| a.ints(name)).collect::<Result<Vec<_>, _>>()?;
            (0..rank).map(|d| lists.iter().all(|l| l.get(d) == Some(&0))).collect()
        }
        DimTest::TrivialWindow => {
            let (w, s, pad) = (a.ints("window")?, a.ints("strides")?, a.pairs("padding")?);
            (0..rank).map(|d| w.get(d) == Some(&1) && s.get(d) == Some(&1) && pad.get(d) == Some(&(0, 0))).collect()
        }
    };
    for (d, &pass) in passes.iter().enumerate() {
        let every: Vec<(usize, usize)> = part.iter().map(|&t| (t, d)).collect();
        if pass {
            r.link(FactorKind::Pass, out.shape[d], &every);
            continue;
        }
        match p.otherwise {
            Otherwise::Permutation { sized_by } => r.link(FactorKind::Permutation, all[sized_by].shape[d], &every),
            Otherwise::NeedReplication { shared } => {
                let shared: Vec<usize> = shared.iter().map(|&t| tensor(t)).filter(|t| part.contains(t)).collect();
                if let Some(&first) = shared.first() {
                    let at: Vec<(usize, usize)> = shared.iter().map(|&t| (t, d)).collect();
                    r.link(FactorKind::NeedReplication, all[first].shape[d], &at);
                }
                for &t in part.iter().filter(|t| !shared.contains(t)) {
                    r.link(FactorKind::NeedReplication, all[t].shape[d], &[(t, d)]);
                }
            }
        }
    }
    Ok(())
}
