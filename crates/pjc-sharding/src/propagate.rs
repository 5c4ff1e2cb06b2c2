//! Sharding propagation over the `func`s of a module (spec section 6): every
//! value gets a sharding, with the reason it got it.
//!
//! The program becomes a set of *links*: one factor rule per instruction
//! (`rules.rs`), plus identity links for `return` (value ↔ declared result) and
//! `call` (arguments ↔ callee parameters, callee results ↔ call results), and
//! for control flow the links and one-sharding groups of `control.rs`. Each
//! (tensor, dimension) is either *closed* (annotated: never changes), *set* (by
//! propagation) or *open*. Propagation runs in rounds of increasing op priority
//! (elementwise, reshape, transpose and calls first; then contractions,
//! reductions and the rest; broadcast last). Within a round it iterates to a
//! fixed point in Jacobi style: every link proposes axes for the open dims it
//! touches from the current state, then all proposals are applied at once, so
//! the result does not depend on the order of instructions or functions.
//!
//! Conflict policy (deterministic): when several tensors of a link disagree on a
//! factor, and when several links propose for the same open dimension, the
//! proposal that wins is the one whose source is (1) an annotation rather than a
//! propagated sharding, (2) the tensor with the most bytes — choosing it leaves
//! the smaller tensor to be resharded, which is the cheaper communication —,
//! (3) split over more devices, (4) first by source name. Axes never divide a
//! dimension unevenly and never appear twice in one sharding; what stays open at
//! the end is replicated. Need-replication factors never propagate.

use crate::rules::{factor_rule, FactorKind, FactorRule};
use pjc_dialects::ShardingRule;
use pjc_ir::{DimSharding, FuncId, FuncKind, Mesh, Module, Sharding, TensorType};
use std::collections::{BTreeMap, BTreeSet, HashMap};

pub use crate::state::{Dim, Path, Propagation, Reason, Slot};


struct Link {
    priority: u8,
    rule: FactorRule,
    tensors: Vec<Slot>,
    label: String,
}

/// Initial state of a slot from its written sharding (`None` = unannotated).
fn initial(s: Option<&Sharding>, rank: usize, default_closed: bool, origin: &str) -> Vec<Dim> {
    match s {
        Some(s) => s
            .dims
            .iter()
            .map(|d| match d {
                DimSharding::Open => Dim::Open,
                DimSharding::Replicated => {
                    Dim::Set { axes: vec![], closed: true, reason: Reason { origin: origin.to_string(), path: Path::default() } }
                }
                DimSharding::Axes(a) => {
                    Dim::Set { axes: a.clone(), closed: true, reason: Reason { origin: origin.to_string(), path: Path::default() } }
                }
            })
            .collect(),
        None if default_closed => (0..rank)
            .map(|_| Dim::Set { axes: vec![], closed: true, reason: Reason { origin: origin.to_string(), path: Path::default() } })
            .collect(),
        None => vec![Dim::Open; rank],
    }
}

/// A candidate sharding for a factor or a dim, with what ranks it.
#[derive(Clone, Debug)]
struct Proposal {
    axes: Vec<String>,
    closed: bool,
    bytes: u64,
    devices: u64,
    source: String,
    reason: Reason,
}

impl Proposal {
    fn key(&self) -> (bool, u64, u64, std::cmp::Reverse<&str>) {
        (self.closed, self.bytes, self.devices, std::cmp::Reverse(self.source.as_str()))
    }
}

fn better(a: &Proposal, b: &Proposal) -> bool {
    a.key() > b.key()
}

fn bytes(t: &TensorType) -> u64 {
    t.num_elements().saturating_mul(t.dtype.size_bytes() as u64)
}

/// Runs propagation on every `func` of `m` with `entry` as the entry function.
pub fn propagate(m: &Module, entry: FuncId) -> Propagation {
    let mesh = m.mesh_or_single();
    let mut dims: HashMap<Slot, Vec<Dim>> = HashMap::new();
    let mut types: HashMap<Slot, TensorType> = HashMap::new();
    let mut names: HashMap<Slot, String> = HashMap::new();
    let mut links: Vec<Link> = vec![];
    for (id, f) in m.funcs.iter() {
        let is_entry = id == entry;
        // A spmd func's signature is a fixed point: its global view is closed.
        let closed_sig = is_entry || f.kind == FuncKind::Spmd;
        for (i, &p) in f.params.iter().enumerate() {
            let v = &f.values[p];
            let slot = Slot::Value(id, p);
            let origin = match (&v.sharding, f.kind) {
                (_, FuncKind::Spmd) => format!("signature of spmd func @{}", f.name),
                (Some(_), _) => format!("annotation on %{}", v.name),
                (None, _) => format!("default: entry parameter %{} is replicated", v.name),
            };
            let ty = match f.kind {
                FuncKind::Spmd => pjc_ir::infer::global_type(&v.ty, v.sharding.as_ref(), &mesh),
                FuncKind::Global => v.ty.clone(),
            };
            dims.insert(slot, initial(v.sharding.as_ref(), ty.rank(), closed_sig, &origin));
            names.insert(slot, format!("%{}", f.param_name(i)));
            types.insert(slot, ty);
        }
        for (k, r) in f.results.iter().enumerate() {
            let slot = Slot::Result(id, k);
            let origin = match (&r.sharding, f.kind) {
                (_, FuncKind::Spmd) => format!("signature of spmd func @{}", f.name),
                (Some(_), _) => format!("annotation on result '{}'", f.result_name(k)),
                (None, _) => format!("default: entry result '{}' is replicated", f.result_name(k)),
            };
            let ty = match f.kind {
                FuncKind::Spmd => pjc_ir::infer::global_type(&r.ty, r.sharding.as_ref(), &mesh),
                FuncKind::Global => r.ty.clone(),
            };
            dims.insert(slot, initial(r.sharding.as_ref(), ty.rank(), closed_sig, &origin));
            names.insert(slot, format!("result '{}' of @{}", f.result_name(k), f.name));
            types.insert(slot, ty);
        }
        if f.kind == FuncKind::Spmd {
            continue; // no propagation inside: per-device view
        }
        for &i in &f.body {
            let inst = &f.insts[i];
            for &r in &inst.results {
                let v = &f.values[r];
                let slot = Slot::Value(id, r);
                let origin = format!("annotation on %{}", v.name);
                dims.insert(slot, initial(v.sharding.as_ref(), v.ty.rank(), false, &origin));
                names.insert(slot, format!("%{}", v.name));
                types.insert(slot, v.ty.clone());
            }
            let def = inst.op.def();
            match def.sharding {
                ShardingRule::Call => {
                    let Some(g) = inst.callee().and_then(|c| m.func_by_name(c)) else { continue };
                    let gf = &m.funcs[g];
                    for (k, &a) in inst.operands.iter().enumerate() {
                        links.push(Link {
                            priority: 0,
                            rule: FactorRule::identity(f.ty(a)),
                            tensors: vec![Slot::Value(id, a), Slot::Value(g, gf.params[k])],
                            label: format!("call @{}", gf.name),
                        });
                    }
                    for (k, &r) in inst.results.iter().enumerate() {
                        links.push(Link {
                            priority: 0,
                            rule: FactorRule::identity(f.ty(r)),
                            tensors: vec![Slot::Result(g, k), Slot::Value(id, r)],
                            label: format!("call @{}", gf.name),
                        });
                    }
                }
                // Control flow: links and groups for the whole module, below.
                ShardingRule::Manual | ShardingRule::Transform | ShardingRule::ControlFlow => {}
                rule => {
                    let tensors =
                        inst.operands.iter().chain(inst.results.iter()).map(|&v| Slot::Value(id, v)).collect();
                    links.push(Link {
                        priority: rule.priority(),
                        rule: factor_rule(f, inst),
                        tensors,
                        label: inst.op.name().to_string(),
                    });
                }
            }
        }
        for (k, &v) in f.ret.iter().enumerate() {
            links.push(Link {
                priority: 0,
                rule: FactorRule::identity(f.ty(v)),
                tensors: vec![Slot::Value(id, v), Slot::Result(id, k)],
                label: "return".to_string(),
            });
        }
    }
    // Control flow (`control.rs`): one sharding per carried value, seeded by
    // its annotations; soft links to what is resharded once, outside the loop.
    let control = crate::control::control_links(m);
    crate::control::seed(&control.groups, &mut dims);
    for l in control.links {
        links.push(Link { priority: 0, rule: l.rule, tensors: l.tensors, label: l.label });
    }
    let cx = Cx { mesh: &mesh, types: &types, names: &names };
    // The links touching each slot. After the first round of a level, only
    // links one of whose tensors changed in the previous round can propose
    // anything (every proposal of a round is applied, so an unchanged link
    // would only repeat proposals for dims that are no longer open): running
    // just those, in link order, gives the same rounds as running all links,
    // in time proportional to the changes instead of links × rounds.
    let mut links_of: HashMap<Slot, Vec<usize>> = HashMap::new();
    for (k, link) in links.iter().enumerate() {
        for &t in &link.tensors {
            links_of.entry(t).or_default().push(k);
        }
    }
    for level in 0..=2u8 {
        let mut active: BTreeSet<usize> = (0..links.len()).filter(|&k| links[k].priority <= level).collect();
        loop {
            let mut proposals: BTreeMap<(Slot, usize), Proposal> = BTreeMap::new();
            for &k in &active {
                cx.propose(&links[k], &dims, &mut proposals);
            }
            if proposals.is_empty() {
                break;
            }
            active = proposals
                .keys()
                .flat_map(|(slot, _)| links_of.get(slot).into_iter().flatten().copied())
                .filter(|&k| links[k].priority <= level)
                .collect();
            for ((slot, d), p) in proposals {
                let mut axes = p.axes;
                // Never reuse an axis another dim of this tensor already uses.
                let used: Vec<String> = dims[&slot]
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| *k != d)
                    .flat_map(|(_, x)| match x {
                        Dim::Set { axes, .. } => axes.clone(),
                        Dim::Open => vec![],
                    })
                    .collect();
                if let Some(pos) = axes.iter().position(|a| used.contains(a)) {
                    axes.truncate(pos);
                }
                let entry = dims.get_mut(&slot).unwrap();
                // An empty proposal still settles the dim (replicated), which ends the loop.
                entry[d] = Dim::Set { axes, closed: false, reason: p.reason };
            }
        }
    }
    crate::control::unify(&control.groups, &mut dims, &mesh);
    Propagation { dims }
}

struct Cx<'a> {
    mesh: &'a Mesh,
    types: &'a HashMap<Slot, TensorType>,
    names: &'a HashMap<Slot, String>,
}

impl Cx<'_> {
    fn size(&self, a: &str) -> u64 {
        self.mesh.size(a).unwrap_or(1)
    }

    fn propose(&self, link: &Link, dims: &HashMap<Slot, Vec<Dim>>, out: &mut BTreeMap<(Slot, usize), Proposal>) {
        let r = &link.rule;
        // 1. A candidate per factor, from the tensors whose dims are set.
        let mut best: Vec<Option<Proposal>> = vec![None; r.kinds.len()];
        for (t, slot) in link.tensors.iter().enumerate() {
            let Some(state) = dims.get(slot) else { continue };
            for (d, fs) in r.dims[t].iter().enumerate() {
                let Some(Dim::Set { axes, closed, reason }) = state.get(d) else { continue };
                if fs.is_empty() {
                    continue;
                }
                let split = crate::rules::split_axes(self.mesh, axes, fs, &r.sizes);
                for (k, &f) in fs.iter().enumerate() {
                    if r.kinds[f] == FactorKind::NeedReplication || split[k].is_empty() {
                        continue;
                    }
                    // Ranked before it is built: cloning the reason and the
                    // source name of every candidate, most of which lose, was
                    // most of propagation's allocations (issue 17).
                    let source = self.names[slot].as_str();
                    let key = (*closed, bytes(&self.types[slot]), split[k].iter().map(|a| self.size(a)).product::<u64>(), std::cmp::Reverse(source));
                    if best[f].as_ref().is_none_or(|b| key > b.key()) {
                        best[f] = Some(Proposal {
                            axes: split[k].clone(),
                            closed: key.0,
                            bytes: key.1,
                            devices: key.2,
                            source: source.to_string(),
                            reason: reason.clone(),
                        });
                    }
                }
            }
        }
        // 2. Proposals for open dims composed of known factors.
        for (t, slot) in link.tensors.iter().enumerate() {
            let Some(state) = dims.get(slot) else { continue };
            let ty = &self.types[slot];
            for (d, fs) in r.dims[t].iter().enumerate() {
                if !matches!(state.get(d), Some(Dim::Open)) || fs.is_empty() {
                    continue;
                }
                let mut axes: Vec<String> = vec![];
                let mut lead: Option<&Proposal> = None;
                for &f in fs {
                    if r.kinds[f] == FactorKind::NeedReplication {
                        break;
                    }
                    let Some(p) = &best[f] else { break };
                    axes.extend(p.axes.iter().cloned());
                    if lead.is_none_or(|l| better(p, l)) {
                        lead = Some(p);
                    }
                    let n: u64 = p.axes.iter().map(|a| self.size(a)).product();
                    if n != r.sizes[f] {
                        break; // a partially split factor ends the dim's sharding
                    }
                }
                // Keep the longest prefix that divides the dim and repeats no axis.
                let mut prod = 1;
                let mut keep = 0;
                for (i, a) in axes.iter().enumerate() {
                    prod *= self.size(a);
                    if ty.shape[d] % prod != 0 || axes[..i].contains(a) {
                        break;
                    }
                    keep = i + 1;
                }
                axes.truncate(keep);
                let Some(lead) = lead else { continue };
                if axes.is_empty() {
                    continue;
                }
                // The proposal ranks as its lead does: compare first, and
                // build its reason (a clone and a label) only if it wins.
                let key = (*slot, d);
                if out.get(&key).is_none_or(|q| better(lead, q)) {
                    let mut reason = lead.reason.clone();
                    if link.label != "return" {
                        reason.path.push(link.label.clone());
                    }
                    let p = Proposal {
                        axes,
                        closed: lead.closed,
                        bytes: lead.bytes,
                        devices: lead.devices,
                        source: lead.source.clone(),
                        reason,
                    };
                    out.insert(key, p);
                }
            }
        }
    }
}
