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

/// Solves axis `a` given the others in `assign`, and writes its choice into
/// `assign`. `Err` where no assignment fits the memory limit or the time
/// limit passed before any was found.
///
/// With `runner_up`, `assign` is the chosen plan: its split of `a` is kept
/// as the choice (not solved again) and one ILP finds the best plan with
/// some parameter placed otherwise on `a` (`AxisOutcome::runner_up`; its
/// `Err` there where that search failed, e.g. the time limit passed).
pub fn solve_axis(
    p: &Problem,
    m: &Machine,
    assign: &mut Assign,
    a: usize,
    limit: f64,
    deadline: Instant,
    runner_up: bool,
) -> Result<AxisOutcome, String> {
    let previous: Vec<Strategy> = (0..p.nodes.len())
        .map(|n| {
            let f = assign[n].iter().position(|axes| axes.contains(&a));
            if let Some(f) = f {
                assign[n][f].retain(|&x| x != a);
            }
            f
        })
        .collect();
    let strat: Vec<Vec<Strategy>> = (0..p.nodes.len())
        .map(|n| strategies(p, assign, n, a))
        .collect();
    let node_cost: Vec<Vec<f64>> = (0..p.nodes.len())
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
    // Edge cost matrices (seconds), per edge.
    let edge_cost: Vec<Vec<Vec<f64>>> = p
        .edges
        .iter()
        .map(|e| {
            strat[e.producer]
                .iter()
                .map(|&sp| {
                    let src =
                        p.tensor_axes(e.producer, e.ptensor, &with(assign, e.producer, a, sp));
                    strat[e.consumer]
                        .iter()
                        .map(|&sc| {
                            let dst = p.tensor_axes(
                                e.consumer,
                                e.tensor,
                                &with(assign, e.consumer, a, sc),
                            );
                            p.reshard_cost(m, e.producer, e.ptensor, &src, &dst).0
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    let points = memory_points(p);
    // Per point, per node, per strategy: the bytes of its live values.
    let mut mem: Vec<Vec<Vec<f64>>> = vec![vec![]; points.len()];
    for (k, &pt) in points.iter().enumerate() {
        let mut per: Vec<Vec<f64>> = strat.iter().map(|s| vec![0.0; s.len()]).collect();
        for &(v, b, e) in &p.live {
            if b <= pt && pt <= e {
                let (n, t) = p.def[&v];
                for (i, &s) in strat[n].iter().enumerate() {
                    per[n][i] += p.local_bytes(n, t, &p.tensor_axes(n, t, &with(assign, n, a, s)));
                }
            }
        }
        mem[k] = per;
    }
    let build = |cut: Option<&[(usize, usize)]>| {
        let mut vars = ProblemVariables::new();
        // Seconds are scaled to microseconds for the solver's tolerances.
        const SCALE: f64 = 1e6;
        let x: Vec<Vec<Option<Variable>>> = strat
            .iter()
            .enumerate()
            .map(|(n, ss)| {
                if ss.len() == 1 {
                    return vec![None];
                }
                ss.iter()
                    .map(|&s| {
                        Some(vars.add(variable().binary().initial(if s == previous[n] {
                            1.0
                        } else {
                            0.0
                        })))
                    })
                    .collect()
            })
            .collect();
        let mut objective = Expression::from(0.0);
        let mut constraints: Vec<good_lp::Constraint> = vec![];
        let term = |n: usize, i: usize| -> Expression {
            match x[n][i] {
                Some(v) => Expression::from(v),
                None => Expression::from(1.0),
            }
        };
        for n in 0..p.nodes.len() {
            for (i, &c) in node_cost[n].iter().enumerate() {
                if c != 0.0 {
                    objective.add_mul(c * SCALE, term(n, i));
                }
            }
            if strat[n].len() > 1 {
                let sum: Expression = x[n].iter().map(|v| Expression::from(v.unwrap())).sum();
                constraints.push(constraint!(sum == 1.0));
            }
        }
        for (e, c) in p.edges.iter().zip(&edge_cost) {
            let (np, nc) = (strat[e.producer].len(), strat[e.consumer].len());
            let separable = (0..np)
                .all(|s| (0..nc).all(|t| (c[s][t] - c[s][0] - c[0][t] + c[0][0]).abs() <= 1e-15));
            if separable {
                for s in 0..np {
                    if c[s][0] - c[0][0] != 0.0 {
                        objective.add_mul((c[s][0] - c[0][0]) * SCALE, term(e.producer, s));
                    }
                }
                for t in 0..nc {
                    if c[0][t] != 0.0 {
                        objective.add_mul(c[0][t] * SCALE, term(e.consumer, t));
                    }
                }
                continue;
            }
            let pair: Vec<Vec<Variable>> = (0..np)
                .map(|s| {
                    (0..nc)
                        .map(|t| {
                            vars.add(variable().min(0.0).max(1.0).initial(
                                if strat[e.producer][s] == previous[e.producer]
                                    && strat[e.consumer][t] == previous[e.consumer]
                                {
                                    1.0
                                } else {
                                    0.0
                                },
                            ))
                        })
                        .collect()
                })
                .collect();
            for s in 0..np {
                for t in 0..nc {
                    if c[s][t] != 0.0 {
                        objective.add_mul(c[s][t] * SCALE, pair[s][t]);
                    }
                }
                let row: Expression = pair[s].iter().copied().map(Expression::from).sum();
                constraints.push(constraint!(row == term(e.producer, s)));
            }
            for t in 0..nc {
                let col: Expression = (0..np).map(|s| Expression::from(pair[s][t])).sum();
                constraints.push(constraint!(col == term(e.consumer, t)));
            }
        }
        if limit.is_finite() {
            for per in &mem {
                let mut used = Expression::from(0.0);
                for n in 0..p.nodes.len() {
                    for (i, &b) in per[n].iter().enumerate() {
                        if b != 0.0 {
                            used.add_mul(b, term(n, i));
                        }
                    }
                }
                constraints.push(constraint!(used <= limit));
            }
        }
        if let Some(cut) = cut {
            let same: Expression = cut.iter().map(|&(n, i)| term(n, i)).sum();
            constraints.push(constraint!(same <= cut.len() as f64 - 1.0));
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
            let choice: Vec<usize> = x
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
            Ok((optimal, sol.eval(&objective) / 1e6, choice, nvars, ncons))
        };
    // The chosen plan's split of `a`, as strategy indices: the runner-up's
    // reference (a plan re-solved could tie differently).
    let kept: Option<Vec<usize>> = if runner_up {
        (0..p.nodes.len())
            .map(|n| strat[n].iter().position(|s| *s == previous[n]))
            .collect()
    } else {
        None
    };
    let solved = match kept {
        Some(choice) => {
            // Its objective, as the ILP would price it (node and edge terms).
            let mut objective: f64 = (0..p.nodes.len()).map(|n| node_cost[n][choice[n]]).sum();
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
        let params: Vec<(usize, usize)> = (0..p.nodes.len())
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
        runner_up: runner,
    })
}
