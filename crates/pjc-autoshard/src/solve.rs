//! The search: block coordinate descent over the mesh axes, each block an
//! integer linear program solved exactly (good_lp over microlp, a pure-Rust
//! branch and bound; warm-started from the current assignment).
//!
//! For one axis A, with every other axis's choices fixed, each node picks one
//! strategy — A on none of its factors, or on one splittable factor whose
//! size A (times the axes already on it) divides — by a binary x[n][s], with
//! Σ_s x[n][s] = 1. A node's own cost (compute, completion collectives) is
//! linear in its x; an edge's resharding cost c[s][t] is linear where it
//! separates (c[s][t] = u[s] + v[t]) and otherwise priced through
//! continuous pair variables e[s][t] ≥ 0 tied to both nodes by the marginal
//! constraints Σ_t e[s][t] = x[P][s], Σ_s e[s][t] = x[C][t] (the tight
//! linearization of Alpa and XLA's auto-sharding). Memory per device at each
//! sampled program point is Σ (per-device bytes of the live values under
//! their producers' strategies) ≤ the limit.

use crate::model::{Assign, Machine, Problem};
use good_lp::{
    constraint, microlp, variable, Expression, ProblemVariables, Solution, SolutionStatus,
    SolverModel, Variable, WithTimeLimit,
};
use std::time::Instant;

/// One strategy of a node for one axis: the factor the axis splits, if any.
pub type Strategy = Option<usize>;

/// What one axis's solve found.
#[derive(Clone, Debug)]
pub struct AxisOutcome {
    pub axis: usize,
    /// Proven optimal (else the time limit stopped the search at the best found).
    pub optimal: bool,
    /// The objective (estimated seconds that depend on this axis's choices).
    pub objective: f64,
    pub variables: usize,
    pub constraints: usize,
    /// Nodes with a choice of their own after the follower reduction.
    pub decisions: usize,
    /// Seconds building the problem (strategies, cost matrices, followers)
    /// and in the solver.
    pub build_s: f64,
    pub solve_s: f64,
    /// The best plan with some parameter placed differently on this axis:
    /// its objective and the parameters that changed (node, strategy).
    /// `Err` where that search failed (the time limit passed).
    pub runner_up: Option<Result<(f64, Vec<(usize, Strategy)>), String>>,
}

/// The strategies of node `n` for axis `a` (`a` removed from `assign` first).
pub fn strategies(p: &Problem, assign: &Assign, n: usize, a: usize) -> Vec<Strategy> {
    let node = &p.nodes[n];
    let size = p.axis_size(a);
    let mut out = vec![None];
    if !node.opaque {
        for f in 0..node.rule.kinds.len() {
            if node.splittable[f] && node.rule.sizes[f] % (p.prod(&assign[n][f]) * size) == 0 {
                out.push(Some(f));
            }
        }
    }
    // Annotations: a written tensor keeps its written split of `a`.
    let ok = |s: &Strategy| {
        p.fixed
            .iter()
            .filter(|((m, _), _)| *m == n)
            .all(|(&(_, t), sh)| {
                let dim = s.and_then(|f| node.rule.dims[t].iter().position(|fs| fs.contains(&f)));
                p.allows(sh, a, dim)
            })
    };
    let kept: Vec<Strategy> = out.iter().copied().filter(ok).collect();
    if kept.is_empty() {
        vec![None]
    } else {
        kept
    }
}

/// `assign[n]` with axis `a` added to strategy `s`'s factor.
pub fn with(assign: &Assign, n: usize, a: usize, s: Strategy) -> Vec<Vec<usize>> {
    let mut fa = assign[n].clone();
    if let Some(f) = s {
        fa[f].push(a);
    }
    fa
}

/// Program points the memory constraint is checked at: every position of a
/// short program; else the 32 with the most replicated live bytes and 32
/// evenly spaced.
pub fn memory_points(p: &Problem) -> Vec<usize> {
    let n = p.positions + 1;
    if n <= 64 {
        return (0..n).collect();
    }
    let mut bytes = vec![0f64; n];
    for &(v, b, e) in &p.live {
        let w = p.f.ty(v).bytes() as f64;
        for x in bytes.iter_mut().take(e + 1).skip(b) {
            *x += w;
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| bytes[y].total_cmp(&bytes[x]));
    let mut pts: Vec<usize> = order.into_iter().take(32).collect();
    pts.extend((0..32).map(|k| k * (n - 1) / 31));
    pts.sort_unstable();
    pts.dedup();
    pts
}

/// The follower reduction (XLA's auto-sharding does the same): an
/// instruction whose whole iteration space is one operand's dimensions — an
/// elementwise op, a reduction, a transpose — takes that operand's split for
/// axis `a` instead of a choice of its own, so a chain of them is one
/// decision. Returns, per node, the node it follows transitively (its root;
/// itself for a root) and, per strategy of the root, the node's strategy.
///
/// The operand followed is the one whose producer offers the most distinct
/// strategies of the follower, then the largest. A node follows only if
/// every split of that operand maps to one of its own strategies (its
/// dimension's major factor, or none: a gather), so the reduced problem's
/// plans are plans of the full one; it gives up re-splitting between a
/// value and its follower, a move that costs the same before or after an
/// op that keeps the shape.
pub fn followers(
    p: &Problem,
    assign: &Assign,
    a: usize,
    strat: &[Vec<Strategy>],
    inputs: &[Vec<usize>],
) -> (Vec<usize>, Vec<Vec<usize>>) {
    let n_nodes = p.nodes.len();
    let mut root: Vec<usize> = (0..n_nodes).collect();
    let mut rmap: Vec<Vec<usize>> = strat.iter().map(|s| (0..s.len()).collect()).collect();
    for n in 0..n_nodes {
        let node = &p.nodes[n];
        if !matches!(node.kind, crate::model::NodeKind::Inst(_)) || node.opaque || strat[n].len() < 2 {
            continue;
        }
        let Some(none) = strat[n].iter().position(|s| s.is_none()) else {
            continue;
        };
        // (distinct strategies reached, bytes, producer, map producer strategy -> n's)
        let mut best: Option<(usize, u64, usize, Vec<usize>)> = None;
        for &k in &inputs[n] {
            let e = &p.edges[k];
            let t = e.tensor;
            let dims = &node.rule.dims[t];
            let covers = (0..node.rule.kinds.len()).all(|f| dims.iter().any(|fs| fs.contains(&f)));
            if !covers || e.producer >= n {
                continue;
            }
            let local: Option<Vec<usize>> = strat[e.producer]
                .iter()
                .map(|&sp| {
                    let src = p.tensor_axes(e.producer, e.ptensor, &with(assign, e.producer, a, sp));
                    match src.iter().position(|d| d.contains(&a)) {
                        None => Some(none),
                        Some(d) => {
                            let f = dims.get(d)?.first().copied();
                            Some(strat[n].iter().position(|s| *s == f && f.is_some()).unwrap_or(none))
                        }
                    }
                })
                .collect();
            let Some(local) = local else { continue };
            let mut seen = local.clone();
            seen.sort_unstable();
            seen.dedup();
            let bytes = p.tensor_type(n, t).bytes();
            let better = best
                .as_ref()
                .is_none_or(|(c, b, _, _)| (seen.len(), bytes) > (*c, *b));
            if better {
                best = Some((seen.len(), bytes, e.producer, local));
            }
        }
        if let Some((reached, _, q, local)) = best {
            // A producer with one strategy fixes the follower: keep the
            // node free unless it has nothing else to choose.
            if reached < 2 && strat[n].len() > 1 {
                continue;
            }
            root[n] = root[q];
            rmap[n] = rmap[q].iter().map(|&i| local[i]).collect();
        }
    }
    (root, rmap)
}

/// Layer merging: roots whose neighbourhoods look alike — the same op,
/// factor rule, strategies, other axes' splits and summed costs, refined
/// over the roots they exchange values with (a Weisfeiler-Lehman hash, four
/// rounds) — share one decision. The layers of a stack are such copies (but
/// for the first and last few ops, whose neighbourhoods differ), so the
/// problem grows with the distinct layers, not their number. It gives up
/// choosing copies differently, which only a tight memory limit could want.
/// Returns each root's representative (itself when it has no copy).
fn tie_copies(
    p: &Problem,
    assign: &Assign,
    strat: &[Vec<Strategy>],
    node_cost: &[Vec<f64>],
    root: &[usize],
    rmap: &[Vec<usize>],
) -> Vec<usize> {
    use std::collections::hash_map::DefaultHasher;
    use std::hash::{Hash, Hasher};
    let n_nodes = p.nodes.len();
    let mut gsum: Vec<Vec<f64>> = (0..n_nodes).map(|r| vec![0.0; strat[r].len()]).collect();
    for n in 0..n_nodes {
        for (s, &i) in rmap[n].iter().enumerate() {
            gsum[root[n]][s] += node_cost[n][i];
        }
    }
    let mut h: Vec<u64> = vec![0; n_nodes];
    for r in (0..n_nodes).filter(|&r| root[r] == r) {
        let node = &p.nodes[r];
        let mut st = DefaultHasher::new();
        match node.kind {
            crate::model::NodeKind::Param(_) => 0u8.hash(&mut st),
            crate::model::NodeKind::Inst(i) => p.f.insts[i].op.name().hash(&mut st),
            crate::model::NodeKind::Result(k) => k.hash(&mut st),
        }
        format!("{:?}|{:?}|{:?}", node.rule, strat[r], assign[r]).hash(&mut st);
        for t in 0..node.rule.dims.len() {
            p.tensor_type(r, t).to_string().hash(&mut st);
        }
        for c in &gsum[r] {
            c.to_bits().hash(&mut st);
        }
        // Written annotations and followers' count set a root apart.
        p.fixed.keys().filter(|(m, _)| *m == r).count().hash(&mut st);
        h[r] = st.finish();
    }
    for n in 0..n_nodes {
        if root[n] != n {
            let mut st = DefaultHasher::new();
            (h[root[n]], 1u8).hash(&mut st);
            h[root[n]] = st.finish();
        }
    }
    let mut adj: Vec<Vec<(usize, u8, usize, usize)>> = vec![vec![]; n_nodes];
    for e in &p.edges {
        let (rp, rc) = (root[e.producer], root[e.consumer]);
        if rp != rc {
            adj[rc].push((rp, 0, e.tensor, e.ptensor));
            adj[rp].push((rc, 1, e.tensor, e.ptensor));
        }
    }
    for _ in 0..4 {
        let mut next = h.clone();
        for r in (0..n_nodes).filter(|&r| root[r] == r) {
            let mut nb: Vec<(u64, u8, usize, usize)> =
                adj[r].iter().map(|&(q, d, t, pt)| (h[q], d, t, pt)).collect();
            nb.sort_unstable();
            let mut st = DefaultHasher::new();
            (h[r], nb).hash(&mut st);
            next[r] = st.finish();
        }
        h = next;
    }
    let mut first: std::collections::HashMap<u64, usize> = Default::default();
    (0..n_nodes)
        .map(|r| {
            if root[r] != r || strat[r].len() < 2 {
                r
            } else {
                *first.entry(h[r]).or_insert(r)
            }
        })
        .collect()
}

/// Whether `c[s][t]` is `u[s] + v[t]`.
fn separable(c: &[Vec<f64>]) -> bool {
    let tol = 1e-15 + 1e-9 * c.iter().flatten().fold(0.0f64, |m, &x| m.max(x.abs()));
    (0..c.len()).all(|s| (0..c[0].len()).all(|t| (c[s][t] - c[s][0] - c[0][t] + c[0][0]).abs() <= tol))
}

/// Solves axis `a` given the others in `assign`, and writes its choice into
/// `assign`. `Err` where no assignment fits the memory limit or the time
/// limit passed before any was found.
///
/// `mem_price` (seconds per byte) prices the peak bytes per device in the
/// objective beside the step time (memory as a secondary objective); 0
/// minimises time alone. With `tie`, copies of a layer share a decision
/// (`tie_copies`).
///
/// With `runner_up`, `assign` is the chosen plan: its split of `a` is kept
/// as the choice (not solved again) and one ILP finds the best plan with
/// some parameter placed otherwise on `a` (`AxisOutcome::runner_up`; its
/// `Err` there where that search failed, e.g. the time limit passed).
#[allow(clippy::too_many_arguments)]
pub fn solve_axis(
    p: &Problem,
    m: &Machine,
    assign: &mut Assign,
    a: usize,
    limit: f64,
    mem_price: f64,
    tie: bool,
    deadline: Instant,
    runner_up: bool,
) -> Result<AxisOutcome, String> {
    let t_build = Instant::now();
    let n_nodes = p.nodes.len();
    let previous: Vec<Strategy> = (0..n_nodes)
        .map(|n| {
            let f = assign[n].iter().position(|axes| axes.contains(&a));
            if let Some(f) = f {
                assign[n][f].retain(|&x| x != a);
            }
            f
        })
        .collect();
    let strat: Vec<Vec<Strategy>> = (0..n_nodes).map(|n| strategies(p, assign, n, a)).collect();
    let node_cost: Vec<Vec<f64>> = (0..n_nodes)
        .map(|n| {
            strat[n]
                .iter()
                .map(|&s| {
                    let fa = with(assign, n, a, s);
                    let (c, k, _) = p.node_cost(m, n, &fa);
                    // Tie-break between plans of equal step time: holding a
                    // parameter costs 1% of reading it once, so the smaller
                    // footprint wins.
                    let hold = match p.nodes[n].kind {
                        crate::model::NodeKind::Param(_) => {
                            0.01 * p.local_bytes(n, 0, &p.tensor_axes(n, 0, &fa)) / (m.gbps * 1e9)
                        }
                        _ => 0.0,
                    };
                    c + k + hold
                })
                .collect()
        })
        .collect();
    // Edge matrices (seconds of resharding; bytes of the consumer's
    // temporary), per edge, in node strategies.
    let mut edge_cost: Vec<Vec<Vec<f64>>> = Vec::with_capacity(p.edges.len());
    let mut edge_temp: Vec<Vec<Vec<f64>>> = Vec::with_capacity(p.edges.len());
    for e in &p.edges {
        let dsts: Vec<Vec<Vec<usize>>> = strat[e.consumer]
            .iter()
            .map(|&sc| p.tensor_axes(e.consumer, e.tensor, &with(assign, e.consumer, a, sc)))
            .collect();
        let mut cost = vec![];
        let mut temp = vec![];
        for &sp in &strat[e.producer] {
            let src = p.tensor_axes(e.producer, e.ptensor, &with(assign, e.producer, a, sp));
            cost.push(dsts.iter().map(|dst| p.reshard_cost(m, e.producer, e.ptensor, &src, dst).0).collect());
            temp.push(dsts.iter().map(|dst| p.reshard_temp(e.consumer, e.tensor, &src, dst)).collect());
        }
        edge_cost.push(cost);
        edge_temp.push(temp);
    }
    let mut inputs: Vec<Vec<usize>> = vec![vec![]; n_nodes];
    for (k, e) in p.edges.iter().enumerate() {
        inputs[e.consumer].push(k);
    }
    let (mut root, rmap) = followers(p, assign, a, &strat, &inputs);
    if tie {
        let rep = tie_copies(p, assign, &strat, &node_cost, &root, &rmap);
        for r in root.iter_mut() {
            *r = rep[*r];
        }
    }
    let points = memory_points(p);
    let point_of: std::collections::HashMap<usize, usize> =
        points.iter().enumerate().map(|(k, &pt)| (pt, k)).collect();
    let priced = limit.is_finite() || mem_price > 0.0;
    // The reduced problem: one decision per root, over the root's strategies.
    let width = |r: usize| strat[r].len();
    let mut gcost: Vec<Vec<f64>> = (0..n_nodes)
        .map(|r| if root[r] == r { vec![0.0; width(r)] } else { vec![] })
        .collect();
    for n in 0..n_nodes {
        let r = root[n];
        for s in 0..width(r) {
            gcost[r][s] += node_cost[n][rmap[n][s]];
        }
    }
    // Per memory point, per root, per root strategy: bytes.
    let mut gmem: Vec<Vec<Vec<f64>>> = vec![gcost.iter().map(|c| vec![0.0; c.len()]).collect(); points.len()];
    if priced {
        for (k, &pt) in points.iter().enumerate() {
            for &(v, b, e) in &p.live {
                if b <= pt && pt <= e {
                    let (n, t) = p.def[&v];
                    let r = root[n];
                    for s in 0..width(r) {
                        let sn = strat[n][rmap[n][s]];
                        gmem[k][r][s] += p.local_bytes(n, t, &p.tensor_axes(n, t, &with(assign, n, a, sn)));
                    }
                }
            }
        }
    }
    // Edges between roots, summed per (producer root, consumer root):
    // resharding seconds and, per memory point, temporary bytes.
    struct Between {
        cost: Vec<Vec<f64>>,
        temps: Vec<(usize, Vec<Vec<f64>>)>,
    }
    let mut between: std::collections::BTreeMap<(usize, usize), Between> = Default::default();
    for (k, e) in p.edges.iter().enumerate() {
        let (rp, rc) = (root[e.producer], root[e.consumer]);
        let (mp, mc) = (&rmap[e.producer], &rmap[e.consumer]);
        let point = if priced { point_of.get(&p.at[e.consumer]).copied() } else { None };
        if rp == rc {
            for s in 0..width(rp) {
                gcost[rp][s] += edge_cost[k][mp[s]][mc[s]];
                if let Some(q) = point {
                    gmem[q][rp][s] += edge_temp[k][mp[s]][mc[s]];
                }
            }
            continue;
        }
        let b = between.entry((rp, rc)).or_insert_with(|| Between {
            cost: vec![vec![0.0; width(rc)]; width(rp)],
            temps: vec![],
        });
        for s in 0..width(rp) {
            for t in 0..width(rc) {
                b.cost[s][t] += edge_cost[k][mp[s]][mc[t]];
            }
        }
        if let Some(q) = point {
            let tm: Vec<Vec<f64>> =
                (0..width(rp)).map(|s| (0..width(rc)).map(|t| edge_temp[k][mp[s]][mc[t]]).collect()).collect();
            if tm.iter().flatten().any(|&x| x != 0.0) {
                match b.temps.iter_mut().find(|(pq, _)| *pq == q) {
                    Some((_, acc)) => {
                        for s in 0..width(rp) {
                            for t in 0..width(rc) {
                                acc[s][t] += tm[s][t];
                            }
                        }
                    }
                    None => b.temps.push((q, tm)),
                }
            }
        }
    }
    let build_s = t_build.elapsed().as_secs_f64();
    let build = |cut: Option<&[(usize, usize)]>| {
        let mut vars = ProblemVariables::new();
        // Seconds are scaled to microseconds for the solver's tolerances.
        const SCALE: f64 = 1e6;
        let x: Vec<Vec<Option<Variable>>> = (0..n_nodes)
            .map(|r| {
                if root[r] != r || width(r) == 1 {
                    return vec![None];
                }
                strat[r]
                    .iter()
                    .map(|&s| Some(vars.add(variable().binary().initial(if s == previous[r] { 1.0 } else { 0.0 }))))
                    .collect()
            })
            .collect();
        let mut objective = Expression::from(0.0);
        let mut constraints: Vec<good_lp::Constraint> = vec![];
        let term = |r: usize, i: usize| -> Expression {
            match x[r][i] {
                Some(v) => Expression::from(v),
                None => Expression::from(1.0),
            }
        };
        let mut used: Vec<Expression> = (0..points.len()).map(|_| Expression::from(0.0)).collect();
        for r in (0..n_nodes).filter(|&r| root[r] == r) {
            for (i, &c) in gcost[r].iter().enumerate() {
                if c != 0.0 {
                    objective.add_mul(c * SCALE, term(r, i));
                }
            }
            if width(r) > 1 {
                let sum: Expression = x[r].iter().map(|v| Expression::from(v.unwrap())).sum();
                constraints.push(constraint!(sum == 1.0));
            }
            if priced {
                for (k, u) in used.iter_mut().enumerate() {
                    for (i, &b) in gmem[k][r].iter().enumerate() {
                        if b != 0.0 {
                            u.add_mul(b, term(r, i));
                        }
                    }
                }
            }
        }
        for (&(rp, rc), b) in &between {
            let (np, nc) = (width(rp), width(rc));
            if separable(&b.cost) && b.temps.iter().all(|(_, t)| separable(t)) {
                let c = &b.cost;
                for s in 0..np {
                    if c[s][0] - c[0][0] != 0.0 {
                        objective.add_mul((c[s][0] - c[0][0]) * SCALE, term(rp, s));
                    }
                }
                for t in 0..nc {
                    if c[0][t] != 0.0 {
                        objective.add_mul(c[0][t] * SCALE, term(rc, t));
                    }
                }
                for (q, tm) in &b.temps {
                    for s in 0..np {
                        if tm[s][0] - tm[0][0] != 0.0 {
                            used[*q].add_mul(tm[s][0] - tm[0][0], term(rp, s));
                        }
                    }
                    for t in 0..nc {
                        if tm[0][t] != 0.0 {
                            used[*q].add_mul(tm[0][t], term(rc, t));
                        }
                    }
                }
                continue;
            }
            let pair: Vec<Vec<Variable>> = (0..np)
                .map(|s| {
                    (0..nc)
                        .map(|t| {
                            let warm = strat[rp][s] == previous[rp] && strat[rc][t] == previous[rc];
                            vars.add(variable().min(0.0).max(1.0).initial(if warm { 1.0 } else { 0.0 }))
                        })
                        .collect()
                })
                .collect();
            for s in 0..np {
                for t in 0..nc {
                    if b.cost[s][t] != 0.0 {
                        objective.add_mul(b.cost[s][t] * SCALE, pair[s][t]);
                    }
                    for (q, tm) in &b.temps {
                        if tm[s][t] != 0.0 {
                            used[*q].add_mul(tm[s][t], pair[s][t]);
                        }
                    }
                }
                let row: Expression = pair[s].iter().copied().map(Expression::from).sum();
                constraints.push(constraint!(row == term(rp, s)));
            }
            for t in 0..nc {
                let col: Expression = (0..np).map(|s| Expression::from(pair[s][t])).sum();
                constraints.push(constraint!(col == term(rc, t)));
            }
        }
        if priced {
            // The peak: one variable over the sampled points, priced in the
            // objective and bounded by the limit.
            let peak = vars.add(variable().min(0.0));
            if mem_price > 0.0 {
                objective.add_mul(mem_price * SCALE, peak);
            }
            if limit.is_finite() {
                constraints.push(constraint!(peak <= limit));
            }
            for u in used {
                constraints.push(constraint!(u - peak <= 0.0));
            }
        }
        if let Some(cut) = cut {
            // Over the decisions the parameters are (a tied copy is its
            // representative's; parameters never follow).
            let mut on: Vec<(usize, usize)> = cut.iter().map(|&(n, i)| (root[n], i)).collect();
            on.sort_unstable();
            on.dedup();
            let same: Expression = on.iter().map(|&(r, i)| term(r, i)).sum();
            constraints.push(constraint!(same <= on.len() as f64 - 1.0));
        }
        (vars, objective, constraints, x)
    };
    let run =
        |cut: Option<&[(usize, usize)]>| -> Result<(bool, f64, Vec<usize>, usize, usize), String> {
            let (vars, objective, constraints, x) = build(cut);
            let seconds = deadline
                .saturating_duration_since(Instant::now())
                .as_secs_f64();
            if seconds <= 0.0 {
                return Err("the time limit passed".into());
            }
            let nvars = vars.len();
            let ncons = constraints.len();
            let mut model = vars
                .minimise(objective.clone())
                .using(microlp)
                .with_time_limit(seconds);
            for c in constraints {
                model.add_constraint(c);
            }
            let sol = model.solve().map_err(|e| match e {
                good_lp::ResolutionError::Infeasible => {
                    "no sharding fits the memory limit".to_string()
                }
                e if e.to_string().contains("Time limit") => {
                    "the time limit passed before the solver found a plan".to_string()
                }
                e => e.to_string(),
            })?;
            let optimal = matches!(sol.status(), SolutionStatus::Optimal);
            // Each root's choice, then each follower's through its map.
            let pick: Vec<usize> = x
                .iter()
                .map(|vs| {
                    let mut best = (0, f64::MIN);
                    for (i, v) in vs.iter().enumerate() {
                        let val = v.map(|v| sol.value(v)).unwrap_or(1.0);
                        if val > best.1 {
                            best = (i, val);
                        }
                    }
                    best.0
                })
                .collect();
            let choice: Vec<usize> = (0..n_nodes).map(|n| rmap[n][pick[root[n]]]).collect();
            Ok((optimal, sol.eval(&objective) / 1e6, choice, nvars, ncons))
        };
    // The chosen plan's split of `a`, as strategy indices: the runner-up's
    // reference (a plan re-solved could tie differently).
    let kept: Option<Vec<usize>> = if runner_up {
        (0..n_nodes)
            .map(|n| strat[n].iter().position(|s| *s == previous[n]))
            .collect()
    } else {
        None
    };
    let t_solve = Instant::now();
    let solved = match kept {
        Some(choice) => {
            // Its objective, as the ILP would price it (node and edge terms).
            let mut objective: f64 = (0..n_nodes).map(|n| node_cost[n][choice[n]]).sum();
            for (k, e) in p.edges.iter().enumerate() {
                objective += edge_cost[k][choice[e.producer]][choice[e.consumer]];
            }
            Ok((true, objective, choice, 0, 0))
        }
        None => run(None),
    };
    let (optimal, objective, choice, variables, constraints) = match solved {
        Ok(r) => r,
        Err(e) => {
            for (n, f) in previous.iter().enumerate() {
                if let Some(f) = f {
                    assign[n][*f].push(a);
                }
            }
            return Err(e);
        }
    };
    let runner = if runner_up {
        let params: Vec<(usize, usize)> = (0..n_nodes)
            .filter(|&n| {
                matches!(p.nodes[n].kind, crate::model::NodeKind::Param(_)) && strat[n].len() > 1
            })
            .map(|n| (n, choice[n]))
            .collect();
        if params.is_empty() {
            None
        } else {
            Some(run(Some(&params)).map(|(_, obj, c2, _, _)| {
                let changed = params
                    .iter()
                    .filter(|&&(n, i)| c2[n] != i)
                    .map(|&(n, _)| (n, strat[n][c2[n]]))
                    .collect();
                (obj, changed)
            }))
        }
    } else {
        None
    };
    for (n, &i) in choice.iter().enumerate() {
        if let Some(f) = strat[n][i] {
            assign[n][f].push(a);
        }
    }
    Ok(AxisOutcome {
        axis: a,
        optimal,
        objective,
        variables,
        constraints,
        decisions: (0..n_nodes).filter(|&r| root[r] == r && width(r) > 1).count(),
        build_s,
        solve_s: t_solve.elapsed().as_secs_f64(),
        runner_up: runner,
    })
}
