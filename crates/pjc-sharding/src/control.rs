//! Control flow in propagation (spec sections 6 and 7.1): `while`, `scan` and
//! `switch` in a `func`.
//!
//! GSPMD gives every carried value of a loop one sharding for the whole loop:
//! its body's parameter, its body's result, its condition's parameter and the
//! op's result are one tensor as far as shardings go. Here each such set of
//! slots is a *group*: the slots of one carried value, merged (union-find)
//! with every other group that shares a slot — a body used by two loops ties
//! both loops' carried values together, so the body is partitioned once. A
//! `switch` result that is not annotated forms a group with branch 0's result
//! (the spec's "the written one, or branch 0's").
//!
//! A group starts with the annotations of its members (an annotated dim
//! decides for every member, so an annotation that is replicated keeps the
//! whole loop replicated); two members annotated differently are the error
//! [`check_control`] reports. During the fixed point the members are linked
//! by identity links, and *soft* links tie what may differ and is resharded
//! once, outside the loop: each initial value with its carried value, dims
//! 1.. of a scanned operand (or a stacked output) with the step's slice, and a
//! switch's operands and results with every branch's parameters and results.
//! Dim 0 of scanned operands and stacked outputs takes part in no link: it is
//! never split inside the loop. After the fixed point, [`unify`] settles what
//! two members set differently in the same round (by the most devices, then
//! by name), so every member of a group ends with the same sharding.

use crate::factor::FactorRule;
use crate::state::{Dim, Reason, Slot};
use pjc_dialects::FactorKind;
use pjc_ir::{DimSharding, FuncId, FuncKind, Function, InstData, Mesh, Module, Opcode, Span, TensorType, Value};
use std::collections::{BTreeMap, HashMap};

/// An identity-like link between slots, with the label explanations show.
pub(crate) struct SoftLink {
    pub rule: FactorRule,
    pub tensors: Vec<Slot>,
    pub label: String,
}

/// One member of a group: its slot, what it is (for messages), and the
/// control-flow op that made it one (its span and result name).
#[derive(Clone, Debug)]
pub(crate) struct Member {
    pub slot: Slot,
    pub what: String,
    pub op_span: Span,
    pub op_label: String,
}

/// The groups and soft links of every control-flow op of a module's `func`s.
pub(crate) struct ControlLinks {
    pub links: Vec<SoftLink>,
    /// Sets of slots that end with one sharding, members in a fixed order.
    pub groups: Vec<Vec<Member>>,
}

fn label(f: &Function, inst: &InstData) -> String {
    format!("{} %{}", inst.op, f.values[inst.results[0]].name)
}

/// The rule tying dims 1.. of a stacked tensor (`big`, with dim 0 of the
/// scan's length) to the dims of its slice; dim 0 gets no factor.
fn sliced(big: &TensorType, slice: &TensorType) -> FactorRule {
    let mut r = FactorRule::with_tensors(1, &[big, slice]);
    for d in 0..slice.rank() {
        r.link(FactorKind::Pass, slice.shape[d], &[(0, d + 1), (1, d)]);
    }
    r
}

/// Union-find over members, by slot.
#[derive(Default)]
struct Sets {
    index: HashMap<Slot, usize>,
    members: Vec<Member>,
    parent: Vec<usize>,
}

impl Sets {
    fn add(&mut self, m: Member) -> usize {
        if let Some(&i) = self.index.get(&m.slot) {
            return i;
        }
        let i = self.members.len();
        self.index.insert(m.slot, i);
        self.members.push(m);
        self.parent.push(i);
        i
    }
    fn find(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }
    fn union(&mut self, group: Vec<Member>) {
        let ids: Vec<usize> = group.into_iter().map(|m| self.add(m)).collect();
        for w in ids.windows(2) {
            let (a, b) = (self.find(w[0]), self.find(w[1]));
            if a != b {
                self.parent[b] = a;
            }
        }
    }
}

/// A slot's sort key: independent of the order functions and statements are
/// written in, so that settling a group does not depend on it.
fn order_key(m: &Module, s: Slot) -> (String, u8, usize) {
    match s {
        Slot::Value(f, v) => {
            let g = &m.funcs[f];
            match g.params.iter().position(|&p| p == v) {
                Some(i) => (g.name.clone(), 0, i),
                None => (format!("{}%{}", g.name, g.values[v].name), 1, 0),
            }
        }
        Slot::Result(f, k) => (m.funcs[f].name.clone(), 2, k),
    }
}

/// The groups and links of the control-flow ops of every `func` of `m`.
pub(crate) fn control_links(m: &Module) -> ControlLinks {
    let mut links = vec![];
    let mut sets = Sets::default();
    for (id, f) in m.funcs.iter().filter(|(_, f)| f.kind == FuncKind::Global) {
        for &i in &f.body {
            let inst = &f.insts[i];
            if !inst.op.is_control() {
                continue;
            }
            let Some(bodies) = inst.callees.iter().map(|c| m.func_by_name(c)).collect::<Option<Vec<FuncId>>>() else { continue };
            let lab = label(f, inst);
            let member = |slot: Slot, what: String| Member { slot, what, op_span: inst.span, op_label: lab.clone() };
            let param = |g: FuncId, k: usize| Slot::Value(g, m.funcs[g].params[k]);
            let pname = |g: FuncId, k: usize| format!("parameter %{} of @{}", m.funcs[g].param_name(k), m.funcs[g].name);
            let rname = |g: FuncId, k: usize| format!("result '{}' of @{}", m.funcs[g].result_name(k), m.funcs[g].name);
            let vname = |v: Value| format!("%{}", f.values[v].name);
            let mut soft = |a: Slot, b: Slot, rule: FactorRule| links.push(SoftLink { rule, tensors: vec![a, b], label: lab.clone() });
            match inst.op {
                Opcode::While => {
                    let (c, b) = (bodies[0], bodies[1]);
                    for (k, (&a, &r)) in inst.operands.iter().zip(&inst.results).enumerate() {
                        soft(Slot::Value(id, a), param(b, k), FactorRule::identity(f.ty(a)));
                        sets.union(vec![
                            member(Slot::Value(id, r), vname(r)),
                            member(param(b, k), pname(b, k)),
                            member(Slot::Result(b, k), rname(b, k)),
                            member(param(c, k), pname(c, k)),
                        ]);
                    }
                }
                Opcode::Scan => {
                    let s = bodies[0];
                    let sf = &m.funcs[s];
                    let c = inst.attr("carries").and_then(|a| a.as_int()).unwrap_or(0).max(0) as usize;
                    for (k, &a) in inst.operands.iter().enumerate() {
                        if k < c {
                            soft(Slot::Value(id, a), param(s, k), FactorRule::identity(f.ty(a)));
                            let r = inst.results[k];
                            sets.union(vec![
                                member(Slot::Value(id, r), vname(r)),
                                member(param(s, k), pname(s, k)),
                                member(Slot::Result(s, k), rname(s, k)),
                            ]);
                        } else {
                            soft(Slot::Value(id, a), param(s, k), sliced(f.ty(a), &sf.values[sf.params[k]].ty));
                        }
                    }
                    for (k, &r) in inst.results.iter().enumerate().skip(c) {
                        soft(Slot::Value(id, r), Slot::Result(s, k), sliced(f.ty(r), &sf.results[k].ty));
                    }
                }
                _ => {
                    for &b in &bodies {
                        for (k, &a) in inst.operands_of_bodies().iter().enumerate() {
                            soft(Slot::Value(id, a), param(b, k), FactorRule::identity(f.ty(a)));
                        }
                        for (k, &r) in inst.results.iter().enumerate() {
                            soft(Slot::Value(id, r), Slot::Result(b, k), FactorRule::identity(f.ty(r)));
                        }
                    }
                    for (k, &r) in inst.results.iter().enumerate() {
                        if f.values[r].sharding.is_none() {
                            sets.union(vec![member(Slot::Value(id, r), vname(r)), member(Slot::Result(bodies[0], k), rname(bodies[0], k))]);
                        }
                    }
                }
            }
        }
    }
    let mut classes: BTreeMap<usize, Vec<Member>> = BTreeMap::new();
    for i in 0..sets.members.len() {
        let root = sets.find(i);
        classes.entry(root).or_default().push(sets.members[i].clone());
    }
    let mut groups: Vec<Vec<Member>> = classes.into_values().filter(|g| g.len() > 1).collect();
    for g in &mut groups {
        g.sort_by_key(|mb| order_key(m, mb.slot));
    }
    groups.sort_by_key(|g| order_key(m, g[0].slot));
    // Members are tied by identity links (a star around the first).
    for g in &groups {
        for mb in &g[1..] {
            let ty = slot_type(m, g[0].slot);
            links.push(SoftLink { rule: FactorRule::identity(&ty), tensors: vec![g[0].slot, mb.slot], label: mb.op_label.clone() });
        }
    }
    ControlLinks { links, groups }
}

/// The global type of a slot of a `func`.
fn slot_type(m: &Module, s: Slot) -> TensorType {
    match s {
        Slot::Value(f, v) => m.funcs[f].values[v].ty.clone(),
        Slot::Result(f, k) => m.funcs[f].results[k].ty.clone(),
    }
}

/// The sharding written on a slot, if any.
fn written(m: &Module, s: Slot) -> Option<&pjc_ir::Sharding> {
    match s {
        Slot::Value(f, v) => m.funcs[f].values[v].sharding.as_ref(),
        Slot::Result(f, k) => m.funcs[f].results[k].sharding.as_ref(),
    }
}

/// A carried value annotated two ways: two members of one group whose written
/// shardings disagree on a dimension.
#[derive(Clone, Debug, PartialEq)]
pub struct ControlError {
    /// The control-flow op of the second annotation.
    pub span: Span,
    pub msg: String,
}

impl std::fmt::Display for ControlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.msg)
    }
}

/// Checks that the annotations of each group agree (spec section 11: in a
/// `func`, a body signature `on` that disagrees with the loop's one carried
/// sharding is an error naming the value).
pub fn check_control(m: &Module) -> Result<(), Vec<ControlError>> {
    let cl = control_links(m);
    let mut errors = vec![];
    for g in &cl.groups {
        // The first annotation of each dim decides; a later one that differs is the error.
        let rank = slot_type(m, g[0].slot).rank();
        let mut first: Vec<Option<&Member>> = vec![None; rank];
        for mb in g {
            let Some(s) = written(m, mb.slot) else { continue };
            let clash = s.dims.iter().enumerate().find_map(|(d, ds)| {
                if *ds == DimSharding::Open {
                    return None;
                }
                match first[d] {
                    None => {
                        first[d] = Some(mb);
                        None
                    }
                    Some(other) => written(m, other.slot).filter(|o| o.dims[d] != *ds).map(|o| (other, o)),
                }
            });
            if let Some((other, o)) = clash {
                errors.push(ControlError {
                    span: mb.op_span,
                    msg: format!(
                        "{} is annotated on {s}, but {} is annotated on {o}: a carried value has one sharding for the whole loop ({})",
                        mb.what, other.what, mb.op_label
                    ),
                });
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Before the fixed point: every annotated dim of a member decides for the
/// whole group (the first annotation in member order, where they disagree —
/// an error [`check_control`] reports).
pub(crate) fn seed(groups: &[Vec<Member>], dims: &mut HashMap<Slot, Vec<Dim>>) {
    for g in groups {
        let Some(rank) = dims.get(&g[0].slot).map(|d| d.len()) else { continue };
        for d in 0..rank {
            let Some((src, dim)) = g.iter().find_map(|mb| match dims.get(&mb.slot).and_then(|v| v.get(d)) {
                Some(x @ Dim::Set { closed: true, .. }) => Some((mb, x.clone())),
                _ => None,
            }) else {
                continue;
            };
            let Dim::Set { axes, reason, .. } = dim else { unreachable!("matched a set dim") };
            for mb in g {
                let Some(state) = dims.get_mut(&mb.slot) else { continue };
                if !matches!(state[d], Dim::Set { closed: true, .. }) {
                    let mut r: Reason = reason.clone();
                    r.path.push(format!("carried by {}", src.op_label));
                    state[d] = Dim::Set { axes: axes.clone(), closed: true, reason: r };
                }
            }
        }
    }
}

/// After the fixed point: members of a group that two links set differently
/// in the same round get one sharding, dim by dim the setting split over the
/// most devices (first in member order on ties), without repeating an axis.
pub(crate) fn unify(groups: &[Vec<Member>], dims: &mut HashMap<Slot, Vec<Dim>>, mesh: &Mesh) {
    for g in groups {
        let Some(rank) = dims.get(&g[0].slot).map(|d| d.len()) else { continue };
        let mut chosen: Vec<Dim> = vec![Dim::Open; rank];
        let mut used: Vec<String> = vec![];
        for (d, slot) in chosen.iter_mut().enumerate() {
            let mut best: Option<(u64, &Dim)> = None;
            for mb in g {
                let Some(x @ Dim::Set { axes, .. }) = dims.get(&mb.slot).and_then(|v| v.get(d)) else { continue };
                let n = mesh.group_size(axes.iter().map(|a| a.as_str()));
                if best.is_none_or(|(bn, _)| n > bn) {
                    best = Some((n, x));
                }
            }
            if let Some((_, Dim::Set { axes, closed, reason })) = best {
                let keep = axes.iter().take_while(|a| !used.contains(a)).count();
                used.extend(axes[..keep].iter().cloned());
                *slot = Dim::Set { axes: axes[..keep].to_vec(), closed: *closed, reason: reason.clone() };
            }
        }
        for mb in g {
            if let Some(state) = dims.get_mut(&mb.slot) {
                for (d, c) in chosen.iter().enumerate() {
                    let differs = match (&state[d], c) {
                        (_, Dim::Open) => false,
                        (Dim::Set { axes: a, .. }, Dim::Set { axes: b, .. }) => a != b,
                        (Dim::Open, _) => true,
                    };
                    if differs {
                        state[d] = c.clone();
                    }
                }
            }
        }
    }
}

/// `pjc explain`'s lines for the control-flow ops of `func` `id`: each
/// carried value's one sharding and its initial value's, scanned operands'
/// and stacked outputs' slices (dim 0 never split), and what each switch
/// branch takes and returns — every place the partitioner reshards once,
/// outside the loop or inside a branch.
pub(crate) fn explain_control(m: &Module, p: &crate::state::Propagation, id: FuncId) -> Vec<String> {
    let f = &m.funcs[id];
    let mut out = vec![];
    let sh = |s: Slot| p.sharding(s);
    for &i in &f.body {
        let inst = &f.insts[i];
        if !inst.op.is_control() {
            continue;
        }
        let Some(bodies) = inst.callees.iter().map(|c| m.func_by_name(c)).collect::<Option<Vec<FuncId>>>() else { continue };
        let names: Vec<String> = inst.callees.iter().map(|c| format!("@{c}")).collect();
        out.push(format!("{} ({})", label(f, inst), names.join(", ")));
        let v = |x: Value| format!("%{}", f.values[x].name);
        let entry_note = |a: Value, want: &pjc_ir::Sharding| {
            let have = sh(Slot::Value(id, a));
            if have == *want {
                String::new()
            } else {
                format!("; {} is on {have}: resharded once, on entry", v(a))
            }
        };
        match inst.op {
            Opcode::While | Opcode::Scan => {
                let body = bodies[bodies.len() - 1];
                let bf = &m.funcs[body];
                let c = if inst.op == Opcode::While { inst.operands.len() } else { inst.attr("carries").and_then(|a| a.as_int()).unwrap_or(0).max(0) as usize };
                for (k, &a) in inst.operands.iter().enumerate() {
                    let ps = sh(Slot::Value(body, bf.params[k]));
                    if k < c {
                        out.push(format!("  carried {k} {}: {ps} for the whole loop (initial value {}{})", v(inst.results[k]), v(a), entry_note(a, &ps)));
                    } else {
                        let mut whole = ps.clone();
                        whole.dims.insert(0, DimSharding::Replicated);
                        let split0 = sh(Slot::Value(id, a)).dims.first().is_some_and(|d| matches!(d, DimSharding::Axes(_)));
                        let why = if split0 { " (dim 0 of a scanned operand is never split)" } else { "" };
                        out.push(format!("  scanned {}: slice {ps}, so {whole}{}{why}", v(a), entry_note(a, &whole)));
                    }
                }
                for (k, &r) in inst.results.iter().enumerate().skip(c) {
                    let rs = sh(Slot::Result(body, k));
                    let mut whole = rs.clone();
                    whole.dims.insert(0, DimSharding::Replicated);
                    let target = sh(Slot::Value(id, r));
                    let note = if target == whole { String::new() } else { format!("; its users want {target}: resharded once, on exit") };
                    out.push(format!("  stacked {}: slice {rs}, so {whole}{note}", v(r)));
                }
            }
            _ => {
                for (k, &a) in inst.operands_of_bodies().iter().enumerate() {
                    let have = sh(Slot::Value(id, a));
                    let takes: Vec<String> = bodies
                        .iter()
                        .map(|&b| {
                            let s = sh(Slot::Value(b, m.funcs[b].params[k]));
                            format!("@{} {s}{}", m.funcs[b].name, if s == have { "" } else { " (resharded in the branch)" })
                        })
                        .collect();
                    out.push(format!("  operand {} on {have}: {}", v(a), takes.join(", ")));
                }
                for (k, &r) in inst.results.iter().enumerate() {
                    let want = sh(Slot::Value(id, r));
                    let gives: Vec<String> = bodies
                        .iter()
                        .map(|&b| {
                            let s = sh(Slot::Result(b, k));
                            format!("@{} {s}{}", m.funcs[b].name, if s == want { "" } else { " (resharded in the branch)" })
                        })
                        .collect();
                    out.push(format!("  result {} on {want}: {}", v(r), gives.join(", ")));
                }
            }
        }
    }
    out
}
