//! The replication rule of spec section 5: for every value of a `spmd func`,
//! the set of mesh axes along which it may differ between devices.
//!
//! The verifier uses it to prove that results not split over an axis are the
//! same on every device along it (shard_map's replication check), and that
//! every device takes the same path through control flow; `grad` uses it to
//! find where a cotangent must be summed over an axis (the transpose of the
//! implicit broadcast of a value invariant along that axis).
//!
//! The rule: a parameter varies along the axes of its `on`; `constant` and
//! `iota` are invariant; `all_reduce` and `all_gather` results are invariant
//! along their `axes`; `axis_index {axis=a}` varies along `a`;
//! `reduce_scatter`, `all_to_all` and `collective_permute` results vary along
//! their `axes`; a `call` of a `spmd func` varies along the axes its callee's
//! result sharding names; any other result (`sort`, `top_k` and `scatter`
//! included) varies along the union of its operands' axes.
//!
//! Control flow (section 7.1) is seen through: a body's parameters vary as the
//! values the statement passes them (not as its signature says), and its
//! results are analysed from there. A carried value of `while`/`scan` varies
//! along an axis when its initial value or the body's result for it does, to a
//! fixed point (sets only grow, so it ends); a `scan` output varies as the
//! step's result for it; a `switch` result varies along the axes any branch's
//! result varies along. [`Replication`] also reports what control flow needs
//! (as [`Problem`]s): `while`'s predicate and `switch`'s index invariant along
//! every axis, and an `on` written on a body's signature equal to what the
//! analysis infers there.

use crate::entity::FuncId;
use crate::module::{FuncKind, Function, InstData, Module};
use crate::types::{Sharding, Span};
use crate::{CollectiveKind, Opcode, Value};
use std::collections::{BTreeSet, HashMap, HashSet};

/// A set of mesh axis names.
pub type Axes = BTreeSet<String>;

/// The axes a sharding names (empty for none).
pub fn sharding_axes(s: Option<&Sharding>) -> Axes {
    s.iter().flat_map(|s| s.axes().map(str::to_string)).collect()
}

/// The axes along which each result of `inst` may vary, given the axes of its
/// operands. `spmd_callee_results` holds the result shardings of the callee
/// when `inst` is a `call` of a `spmd func`; for a `grad` of one, the
/// sharding of its result and of each differentiated parameter (a
/// cotangent has its value's replication type, spec section 9). Control flow is not handled here
/// (its results depend on the bodies: [`Replication`]); given one, every
/// result gets the union of the operands' axes.
pub fn result_axes(inst: &InstData, operands: &[&Axes], spmd_callee_results: Option<&[Option<Sharding>]>) -> Vec<Axes> {
    let union: Axes = operands.iter().flat_map(|a| a.iter().cloned()).collect();
    let axes: Axes = inst.attr("axes").and_then(|a| a.as_idents()).unwrap_or_default().into_iter().collect();
    let n = inst.results.len().max(1);
    if let Some(c) = inst.op.collective() {
        return match c {
            CollectiveKind::AllReduce | CollectiveKind::AllGather => vec![union.difference(&axes).cloned().collect()],
            CollectiveKind::ReduceScatter | CollectiveKind::AllToAll | CollectiveKind::CollectivePermute => {
                vec![union.union(&axes).cloned().collect()]
            }
        };
    }
    // An op without operands (constant, iota) varies along no axis: `union` is empty.
    match inst.op {
        Opcode::AxisIndex => {
            vec![inst.attr("axis").and_then(|a| a.as_ident()).map(|a| Axes::from([a.to_string()])).unwrap_or_default()]
        }
        Opcode::Call | Opcode::Grad => match spmd_callee_results {
            Some(rs) => {
                let mut v: Vec<Axes> = rs.iter().map(|s| sharding_axes(s.as_ref())).collect();
                v.resize(n, union.clone());
                v
            }
            None => vec![union; n],
        },
        _ => vec![union; n],
    }
}

/// For every value of `f` (parameters and instruction results), the mesh axes
/// along which it may differ between devices, its parameters varying along the
/// axes of their `on`. Meaningful for a `spmd func`; in a `func` only
/// parameters with an `on` get axes. Bodies of control flow are looked up in
/// `m`; where `m` lacks them, the results vary along the union of the operands'
/// axes.
pub fn varying_axes(f: &Function, m: &Module) -> HashMap<Value, Axes> {
    Replication::new(m).values(f, &signature_axes(f))
}

/// The axes each parameter of `f` varies along by its signature (its `on`).
pub fn signature_axes(f: &Function) -> Vec<Axes> {
    f.params.iter().map(|&p| sharding_axes(f.values[p].sharding.as_ref())).collect()
}

/// The functions named only as bodies of control flow, never by `call`,
/// `grad` or `vmap`: their parameters' variance comes from the statements
/// that use them, so they are checked there rather than on their own.
pub fn bodies_only(m: &Module) -> HashSet<FuncId> {
    let mut body = HashSet::new();
    let mut other = HashSet::new();
    for f in m.funcs.values() {
        for &i in &f.body {
            let inst = &f.insts[i];
            let set = if inst.op.is_control() { &mut body } else { &mut other };
            set.extend(inst.callees.iter().cloned());
        }
    }
    m.funcs.iter().filter(|(_, f)| body.contains(&f.name) && !other.contains(&f.name)).map(|(id, _)| id).collect()
}

/// A break of the rule for control flow, at the statement that causes it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Problem {
    pub span: Span,
    pub msg: String,
}

/// How deeply bodies may nest before the analysis stops looking inside (the
/// analysis recurses on nesting; the call graph has no cycle, but may be deep).
const MAX_DEPTH: usize = 200;

/// The replication analysis of a module, with the variance of each body's
/// results per parameter variance computed once.
pub struct Replication<'m> {
    m: &'m Module,
    by_name: HashMap<&'m str, FuncId>,
    /// The mesh's axes, major to minor (for messages, and for what is assumed
    /// when the analysis cannot look inside a body).
    order: Vec<String>,
    /// A body's results' axes for its parameters' axes.
    cache: HashMap<(FuncId, Vec<Axes>), Vec<Axes>>,
    /// The bodies whose own control flow was checked, with their parameters' axes.
    reported: HashSet<(FuncId, Vec<Axes>)>,
    problems: Vec<Problem>,
    /// What [`Replication::take_problems`] returned already.
    given: HashSet<Problem>,
    depth: usize,
}

impl<'m> Replication<'m> {
    pub fn new(m: &'m Module) -> Replication<'m> {
        Replication {
            m,
            by_name: m.funcs.iter().map(|(id, f)| (f.name.as_str(), id)).collect(),
            order: m.mesh.iter().flat_map(|x| x.axes.iter().map(|a| a.name.clone())).collect(),
            cache: HashMap::new(),
            reported: HashSet::new(),
            problems: vec![],
            given: HashSet::new(),
            depth: 0,
        }
    }

    /// Every value of `f` with its parameters varying along `params` (missing
    /// entries: none). The control flow of `f` and of every body it reaches is
    /// checked, the problems kept for [`Replication::take_problems`].
    pub fn values(&mut self, f: &Function, params: &[Axes]) -> HashMap<Value, Axes> {
        self.walk(f, params, true)
    }

    /// The bodies [`Replication::values`] reached, each with the axes its
    /// parameters varied along there (a body reached in several ways: once
    /// for each way).
    pub fn bodies_reached(&self) -> impl Iterator<Item = (FuncId, &[Axes])> {
        self.reported.iter().map(|(id, p)| (*id, p.as_slice()))
    }

    /// The problems [`Replication::values`] found since the last call, in the
    /// order found, each once (a body reached from several places may repeat one).
    pub fn take_problems(&mut self) -> Vec<Problem> {
        let mut out = vec![];
        for p in std::mem::take(&mut self.problems) {
            if self.given.insert(p.clone()) {
                out.push(p);
            }
        }
        out
    }

    /// One pass over `f`. With `report`, control flow is checked with the
    /// final (fixed-point) variance of its bodies' parameters; without, only
    /// the variance is computed (what the fixed-point iterations need).
    fn walk(&mut self, f: &Function, params: &[Axes], report: bool) -> HashMap<Value, Axes> {
        let mut var: HashMap<Value, Axes> = HashMap::new();
        for (k, &p) in f.params.iter().enumerate() {
            var.insert(p, params.get(k).cloned().unwrap_or_default());
        }
        for &i in &f.body {
            let inst = &f.insts[i];
            let ops: Vec<Axes> = inst.operands.iter().map(|v| var.get(v).cloned().unwrap_or_default()).collect();
            let per_result = if inst.op.is_control() {
                self.control(f, inst, &ops, report)
            } else {
                let callee_results: Option<Vec<Option<Sharding>>> = match inst.op {
                    Opcode::Call => self
                        .body(inst, 0)
                        .map(|id| &self.m.funcs[id])
                        .filter(|g| g.kind == FuncKind::Spmd)
                        .map(|g| g.results.iter().map(|r| r.sharding.clone()).collect()),
                    // The value, then each gradient varying as its parameter.
                    Opcode::Grad => self.body(inst, 0).map(|id| &self.m.funcs[id]).filter(|g| g.kind == FuncKind::Spmd).map(|g| {
                        let wrt = inst.attr("wrt").and_then(|w| w.as_ints()).unwrap_or_default();
                        std::iter::once(g.results.first().and_then(|r| r.sharding.clone()))
                            .chain(wrt.iter().map(|&w| g.params.get(w as usize).and_then(|&p| g.values[p].sharding.clone())))
                            .collect()
                    }),
                    _ => None,
                };
                let refs: Vec<&Axes> = ops.iter().collect();
                result_axes(inst, &refs, callee_results.as_deref())
            };
            for (k, &r) in inst.results.iter().enumerate() {
                var.insert(r, per_result.get(k).cloned().unwrap_or_default());
            }
        }
        var
    }

    /// The function `inst` names in position `k`, if the module has it.
    fn body(&self, inst: &InstData, k: usize) -> Option<FuncId> {
        inst.callees.get(k).and_then(|c| self.by_name.get(c.as_str()).copied())
    }

    /// The axes `id`'s return values vary along when its parameters vary along `params`.
    fn results(&mut self, id: FuncId, params: &[Axes]) -> Vec<Axes> {
        let key = (id, params.to_vec());
        if let Some(r) = self.cache.get(&key) {
            return r.clone();
        }
        let m = self.m;
        let g = &m.funcs[id];
        self.depth += 1;
        let var = self.walk(g, params, false);
        self.depth -= 1;
        let out: Vec<Axes> = g.ret.iter().map(|v| var.get(v).cloned().unwrap_or_default()).collect();
        self.cache.insert(key, out.clone());
        out
    }

    /// `while`, `scan`, `switch`: the results' axes, and with `report` the checks.
    fn control(&mut self, f: &Function, inst: &InstData, ops: &[Axes], report: bool) -> Vec<Axes> {
        let n = inst.results.len();
        let bodies: Option<Vec<FuncId>> = (0..inst.callees.len()).map(|k| self.body(inst, k)).collect();
        let bodies = match bodies {
            Some(b) if !b.is_empty() && self.depth < MAX_DEPTH => b,
            Some(b) if !b.is_empty() => {
                if report {
                    let msg = format!("bodies nest more than {MAX_DEPTH} deep here: pjc's replication check does not look further inside, so it cannot prove that every device takes the same path");
                    self.problems.push(Problem { span: inst.op_span, msg });
                }
                return vec![self.order.iter().cloned().collect(); n];
            }
            // Bodies the module does not have (a function analysed alone).
            _ => return vec![ops.iter().flatten().cloned().collect(); n],
        };
        // What each body receives (switch: after the index), and what the op gives.
        let (uses, out): (Vec<(usize, Vec<Axes>)>, Vec<Axes>) = match inst.op {
            Opcode::While if bodies.len() == 2 => {
                let carried = self.fixed_point(bodies[1], ops.to_vec(), &[]);
                if report {
                    let pred = self.results(bodies[0], &carried);
                    let name = self.m.funcs[bodies[0]].ret.first().map(|&v| self.m.funcs[bodies[0]].values[v].name.clone());
                    let what = format!("its predicate (%{} of @{})", name.unwrap_or_default(), self.m.funcs[bodies[0]].name);
                    self.invariant(inst, pred.first(), inst.callee_span(), &what);
                }
                (vec![(0, carried.clone()), (1, carried.clone())], carried)
            }
            Opcode::Scan => {
                let c = inst.attr("carries").and_then(|a| a.as_int()).map_or(0, |c| c.clamp(0, ops.len() as i64) as usize);
                let carried = self.fixed_point(bodies[0], ops[..c].to_vec(), &ops[c..]);
                let params: Vec<Axes> = carried.iter().chain(&ops[c..]).cloned().collect();
                let res = self.results(bodies[0], &params);
                let out = carried.iter().chain(res.iter().skip(c)).cloned().collect();
                (vec![(0, params)], out)
            }
            Opcode::Switch => {
                if report {
                    let idx = inst.operands.first().map(|&v| format!("its index %{}", f.values[v].name)).unwrap_or_default();
                    self.invariant(inst, ops.first(), inst.operand_spans.first().copied().unwrap_or(inst.op_span), &idx);
                }
                let params = ops.get(1..).unwrap_or_default().to_vec();
                let mut out = vec![Axes::new(); n];
                for &b in &bodies {
                    grow(&mut out, &self.results(b, &params));
                }
                ((0..bodies.len()).map(|k| (k, params.clone())).collect(), out)
            }
            _ => return vec![ops.iter().flatten().cloned().collect(); n],
        };
        if report {
            for (k, params) in &uses {
                // The condition's result is the predicate, checked above.
                let results = if inst.op == Opcode::While && *k == 0 { None } else { Some(out.as_slice()) };
                self.agree(inst, *k, bodies[*k], params, results);
                self.report(bodies[*k], params);
            }
        }
        out
    }

    /// The carried values' axes of a loop whose body `b` takes the carries
    /// then `rest`: the initial values' axes grown by the body's results for
    /// them until nothing changes.
    fn fixed_point(&mut self, b: FuncId, mut carried: Vec<Axes>, rest: &[Axes]) -> Vec<Axes> {
        loop {
            let params: Vec<Axes> = carried.iter().chain(rest).cloned().collect();
            let res = self.results(b, &params);
            if !grow(&mut carried, &res) {
                return carried;
            }
        }
    }

    /// Checks the control flow inside body `id` reached with `params` (once per
    /// distinct `params`).
    fn report(&mut self, id: FuncId, params: &[Axes]) {
        if self.reported.insert((id, params.to_vec())) {
            let m = self.m;
            self.depth += 1;
            self.walk(&m.funcs[id], params, true);
            self.depth -= 1;
        }
    }

    /// A predicate or index must be the same on every device.
    fn invariant(&mut self, inst: &InstData, axes: Option<&Axes>, span: Span, what: &str) {
        let Some(axes) = axes else { return };
        for a in self.in_order(axes) {
            let msg = format!("'{}' needs {what} to be the same on every device, but pjc cannot prove it is the same along mesh axis '{a}' (every device must take the same path: compute it from values invariant along '{a}', e.g. after an all_reduce over '{a}')", inst.op);
            self.problems.push(Problem { span, msg });
        }
    }

    /// An `on` written on body `k`'s signature must equal what it gets here:
    /// its parameters' the axes of what the statement passes, its results'
    /// the axes of the op's results (`results`; `None`: not checked).
    fn agree(&mut self, inst: &InstData, k: usize, id: FuncId, params: &[Axes], results: Option<&[Axes]>) {
        let m = self.m;
        let g = &m.funcs[id];
        let span = inst.callee_spans.get(k).copied().unwrap_or(inst.op_span);
        let mut found = vec![];
        for (i, &p) in g.params.iter().enumerate() {
            let v = &g.values[p];
            if let (Some(s), Some(got)) = (&v.sharding, params.get(i)) {
                found.push((format!("parameter %{}", v.name), sharding_axes(Some(s)), got.clone(), "a body's parameter varies like the value the statement passes it"));
            }
        }
        for (i, r) in g.results.iter().enumerate() {
            if let (Some(s), Some(got)) = (&r.sharding, results.and_then(|rs| rs.get(i))) {
                found.push((format!("result '{}'", g.result_name(i)), sharding_axes(Some(s)), got.clone(), "a body's result varies like the statement's result it gives"));
            }
        }
        for (what, written, got, source) in found {
            if written != got {
                let msg = format!(
                    "the 'on' of {what} of @{} says it varies along {}, but at this '{}' it varies along {} (inside a spmd func, {source}: write the 'on' to match, or leave it out)",
                    g.name,
                    self.describe(&written),
                    inst.op,
                    self.describe(&got)
                );
                self.problems.push(Problem { span, msg });
            }
        }
    }

    /// `axes` in mesh order (names the mesh lacks last).
    fn in_order(&self, axes: &Axes) -> Vec<String> {
        let mut out: Vec<String> = self.order.iter().filter(|a| axes.contains(*a)).cloned().collect();
        out.extend(axes.iter().filter(|a| !self.order.contains(a)).cloned());
        out
    }

    fn describe(&self, axes: &Axes) -> String {
        let names: Vec<String> = self.in_order(axes).iter().map(|a| format!("'{a}'")).collect();
        match names.len() {
            0 => "no mesh axis".to_string(),
            1 => format!("mesh axis {}", names[0]),
            _ => format!("mesh axes {}", names.join(", ")),
        }
    }
}

/// Adds `more[i]` to `acc[i]` for every `i` both have; whether anything changed.
fn grow(acc: &mut [Axes], more: &[Axes]) -> bool {
    let mut changed = false;
    for (a, m) in acc.iter_mut().zip(more) {
        for x in m {
            changed |= a.insert(x.clone());
        }
    }
    changed
}
