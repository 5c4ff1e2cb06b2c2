//! Automatic sharding (`pjc compile --auto-shard`, `pjc explain --auto-shard`):
//! chooses the shardings of the values the user left unannotated by a cost
//! model, and writes them into the program as annotations, so that
//! propagation and partitioning then run unchanged.
//!
//! `model.rs` builds the problem from the entry function with its calls
//! inlined (nodes with factor-rule strategies, edges, live ranges) and is the
//! cost model; `solve.rs` solves it axis by axis with an ILP. This file runs
//! the rounds, writes the annotations and the report `pjc explain` prints.
//!
//! **Invariant:** auto-sharding only adds annotations. It never changes an
//! instruction, a type or an annotation the user wrote (a written `?`
//! dimension is filled in; `_` and axes stay as written), so the program's
//! values are those of the input, and everything after it is the ordinary
//! pipeline.

pub mod model;
pub mod solve;

pub use model::{Link, Machine};

use model::{Assign, NodeKind, Problem};
use pjc_ir::{DimSharding, FuncId, Module, Sharding};
use std::fmt::Write;
use std::time::{Duration, Instant};

/// What auto-sharding is given.
#[derive(Clone, Debug)]
pub struct Options {
    pub machine: Machine,
    /// Bytes per device (`--memory-limit`).
    pub memory_limit: u64,
    /// How much peak memory counts beside step time (`--memory-weight`):
    /// the objective is `time + w · (T₀/M₀) · peak`, with T₀ and M₀ the
    /// all-replicated plan's step time and peak, so a plan that cuts the
    /// peak by a fraction f may cost w·f·T₀ more time (the first-order
    /// trade of time × memory). 0: time alone, memory only bounded.
    pub memory_weight: f64,
    /// How long the search may take in all.
    pub time_limit: Duration,
    /// Search the runner-up (one more ILP per axis): for `explain`'s report,
    /// not needed to compile.
    pub runner_up: bool,
}

impl Options {
    /// Every `--axis-link` names an axis of `mesh`, once: an unknown or
    /// repeated axis is the command line's mistake (the message, without
    /// `error: `), not a link silently ignored.
    pub fn check_links(&self, mesh: &pjc_ir::Mesh) -> Result<(), String> {
        for (i, (axis, _)) in self.machine.axis_links.iter().enumerate() {
            if mesh.axis(axis).is_none() {
                let names: Vec<&str> = mesh.axes.iter().map(|a| a.name.as_str()).collect();
                let has = if names.is_empty() {
                    "the module has no mesh".to_string()
                } else {
                    format!("the mesh has {}", names.join(", "))
                };
                return Err(format!("--axis-link: no mesh axis '{axis}' ({has})"));
            }
            if self.machine.axis_links[..i].iter().any(|(a, _)| a == axis) {
                return Err(format!("--axis-link: axis '{axis}' given twice"));
            }
        }
        Ok(())
    }
}

/// The estimated cost of a plan under the model.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Estimate {
    /// Seconds of compute per device.
    pub compute: f64,
    /// Seconds of collectives.
    pub comm: f64,
    /// Bytes each device sends in collectives.
    pub bytes: f64,
    /// The most bytes live at once per device.
    pub peak: f64,
}

impl Estimate {
    pub fn step(&self) -> f64 {
        self.compute + self.comm
    }
}

/// One entry parameter's decision.
#[derive(Clone, Debug)]
pub struct Choice {
    pub name: String,
    pub ty: pjc_ir::TensorType,
    pub sharding: Sharding,
    /// Whether the user wrote its whole sharding (the solver changed nothing).
    pub written: bool,
    /// Bytes per device.
    pub bytes: f64,
}

/// The runner-up plan: the best with some parameter placed differently.
#[derive(Clone, Debug)]
pub struct RunnerUp {
    pub estimate: Estimate,
    /// (parameter, its sharding in the runner-up).
    pub changed: Vec<(String, Sharding)>,
}

/// What auto-sharding did, for `pjc explain`.
#[derive(Clone, Debug)]
pub struct Report {
    pub mesh: String,
    pub memory_limit: u64,
    /// `None` when a plan was chosen; else why the program is left to propagation.
    pub fallback: Option<String>,
    pub estimate: Estimate,
    /// Estimated cost of the program as written (plain propagation's start:
    /// everything unannotated replicated).
    pub baseline: Estimate,
    pub choices: Vec<Choice>,
    pub runner_up: Option<RunnerUp>,
    /// Why the rounds stopped before converging (the time limit): the plan
    /// of the last whole round is used.
    pub stopped: Option<String>,
    /// Why there is no runner-up where one was not searched or some axis's
    /// search found nothing (the time limit).
    pub runner_up_failed: Option<String>,
    /// The instructions the plan spends the most on: (label, compute s, collective s).
    pub costliest: Vec<(String, Estimate)>,
    pub nodes: usize,
    pub rounds: usize,
    pub solves: Vec<solve::AxisOutcome>,
    pub optimal: bool,
    pub seconds: f64,
    /// Where the time went: (phase, seconds).
    pub phases: Vec<(String, f64)>,
}

/// The estimate of assignment `assign`.
pub fn evaluate(p: &Problem, m: &Machine, assign: &Assign) -> Estimate {
    let mut e = Estimate::default();
    for n in 0..p.nodes.len() {
        let (c, k, b) = p.node_cost(m, n, &assign[n]);
        e.compute += c;
        e.comm += k;
        e.bytes += b;
    }
    for ed in &p.edges {
        let src = p.tensor_axes(ed.producer, ed.ptensor, &assign[ed.producer]);
        let dst = p.tensor_axes(ed.consumer, ed.tensor, &assign[ed.consumer]);
        let (t, b) = p.reshard_cost(m, ed.producer, ed.ptensor, &src, &dst);
        e.comm += t;
        e.bytes += b;
    }
    let mut at = vec![0f64; p.positions + 1];
    for &(v, b, end) in &p.live {
        let (n, t) = p.def[&v];
        let bytes = p.local_bytes(n, t, &p.tensor_axes(n, t, &assign[n]));
        for x in at.iter_mut().take(end + 1).skip(b) {
            *x += bytes;
        }
    }
    // The partitioner's temporaries: each resharded operand where it is read.
    for ed in &p.edges {
        let src = p.tensor_axes(ed.producer, ed.ptensor, &assign[ed.producer]);
        let dst = p.tensor_axes(ed.consumer, ed.tensor, &assign[ed.consumer]);
        at[p.at[ed.consumer]] += p.reshard_temp(ed.consumer, ed.tensor, &src, &dst);
    }
    e.peak = at.iter().copied().fold(0.0, f64::max);
    e
}

/// Drops from the memory model the values the fusion planner keeps inside a
/// kernel (an elementwise chain's intermediates are never stored): only the
/// values it gives a buffer, and the parameters and results, are live. The
/// plan of the unsharded program stands for the sharded one's (partitioning
/// cuts fusions only at collectives). A program the planner refuses keeps
/// every value.
fn fused_away(p: &mut Problem) {
    let Ok(plan) = pjc_fusion::plan(&p.f) else {
        return;
    };
    let stored: std::collections::HashSet<&str> = plan.buffers.iter().map(|b| b.name.as_str()).collect();
    let kept: std::collections::HashSet<pjc_ir::Value> = p.f.params.iter().chain(&p.f.ret).copied().collect();
    let f = &p.f;
    p.live.retain(|&(v, _, _)| kept.contains(&v) || stored.contains(f.values[v].name.as_str()));
}

/// Chooses shardings for the unannotated values of `entry` and writes them
/// into `m` (entry parameters and results, and the entry's own values). On a
/// solver failure (no plan fits the memory limit, the time limit passed
/// before any plan was found) `m` is unchanged and the report says why:
/// propagation then runs on the program as written.
pub fn auto_shard(m: &mut Module, entry: FuncId, opts: &Options) -> Report {
    let t0 = Instant::now();
    let mesh = m.mesh_or_single();
    let mesh_text = mesh
        .axes
        .iter()
        .map(|a| format!("{}={}", a.name, a.size))
        .collect::<Vec<_>>()
        .join(", ");
    let mut report = Report {
        mesh: format!("[{mesh_text}]"),
        memory_limit: opts.memory_limit,
        fallback: None,
        estimate: Estimate::default(),
        baseline: Estimate::default(),
        choices: vec![],
        runner_up: None,
        runner_up_failed: None,
        stopped: None,
        costliest: vec![],
        nodes: 0,
        rounds: 0,
        solves: vec![],
        optimal: true,
        seconds: 0.0,
        phases: vec![],
    };
    if mesh.device_count() <= 1 {
        report.fallback = Some("the mesh has one device: nothing to split".into());
        return report;
    }
    let inlined = match pjc_transforms::inline_calls(m, entry) {
        Ok(f) => f,
        Err(e) => {
            report.fallback = Some(format!("cannot inline the entry's calls: {}", e.msg));
            return report;
        }
    };
    let mut p = Problem::new(inlined, mesh.clone());
    fused_away(&mut p);
    report.nodes = p.nodes.len();
    report.phases.push(("inline and build the problem".into(), t0.elapsed().as_secs_f64()));
    let machine = &opts.machine;
    let mut assign: Assign = p
        .nodes
        .iter()
        .map(|n| vec![vec![]; n.rule.kinds.len()])
        .collect();
    report.baseline = evaluate(&p, machine, &assign);
    let deadline = t0 + opts.time_limit;
    let limit = opts.memory_limit as f64;
    let mem_price = if report.baseline.peak > 0.0 {
        opts.memory_weight.max(0.0) * report.baseline.step() / report.baseline.peak
    } else {
        0.0
    };
    let note = |report: &mut Report, what: String, o: &solve::AxisOutcome| {
        report.phases.push((format!("{what}: strategies, costs, followers"), o.build_s));
        report.phases.push((format!("{what}: ILP ({} decisions, {} variables)", o.decisions, o.variables), o.solve_s));
    };
    // Block coordinate descent over the axes: each axis re-solved exactly
    // with the others fixed, until a round changes nothing (at least 2, so
    // that the real memory limit is met, at most 3).
    const ROUNDS: usize = 3;
    let axes = mesh.axes.len();
    for round in 0..ROUNDS {
        let before = assign.clone();
        let mut outcomes = vec![];
        for a in 0..axes {
            // In the first round the axes after `a` are still unused: each can
            // divide the memory by at most its size, so the limit `a` must
            // meet is relaxed by theirs (later rounds meet the real limit).
            let later: f64 = if round == 0 {
                mesh.axes[a + 1..].iter().map(|x| x.size as f64).product()
            } else {
                1.0
            };
            match solve::solve_axis(&p, machine, &mut assign, a, limit * later, mem_price, true, deadline, false) {
                Ok(o) => {
                    note(&mut report, format!("round {}, axis {}", round + 1, mesh.axes[a].name), &o);
                    outcomes.push(o)
                }
                // After the first round the plan is whole and within the
                // limit (the last axis met the real one): a later round
                // that fails (the time limit) keeps it.
                Err(e) if round > 0 => {
                    report.stopped = Some(format!("{e} (round {}, axis {})", round + 1, mesh.axes[a].name));
                    break;
                }
                Err(e) => {
                    report.fallback = Some(format!(
                        "{e} (axis {}); left to propagation",
                        mesh.axes[a].name
                    ));
                    report.seconds = t0.elapsed().as_secs_f64();
                    return report;
                }
            }
        }
        if report.stopped.is_some() {
            report.optimal = false;
            break;
        }
        report.rounds = round + 1;
        report.solves = outcomes;
        if round > 0 && assign == before {
            break;
        }
    }
    // The runner-up: the last axis re-solved with some parameter elsewhere,
    // each axis in turn, the cheapest such plan kept.
    let mut best: Option<(Estimate, Assign)> = None;
    if !opts.runner_up {
        report.runner_up_failed = Some("not searched".into());
    }
    for a in (0..axes).filter(|_| opts.runner_up) {
        let mut alt = assign.clone();
        if let Ok(o) = solve::solve_axis(&p, machine, &mut alt, a, limit, mem_price, true, deadline, true) {
            note(&mut report, format!("runner-up, axis {}", mesh.axes[a].name), &o);
            if let Some(Err(e)) = &o.runner_up {
                report.runner_up_failed = Some(format!("not found: {e} (axis {})", mesh.axes[a].name));
            }
            if let Some(Ok((_, changed))) = &o.runner_up {
                if changed.is_empty() {
                    continue;
                }
                // Apply the runner-up's changed parameters on axis a.
                let mut ru = assign.clone();
                for (n, s) in changed {
                    for f in ru[*n].iter_mut() {
                        f.retain(|&x| x != a);
                    }
                    if let Some(f) = s {
                        ru[*n][*f].push(a);
                    }
                }
                let est = evaluate(&p, machine, &ru);
                if best.as_ref().is_none_or(|(b, _)| est.step() < b.step()) {
                    best = Some((est, ru));
                }
            }
        }
    }
    report.optimal = report.stopped.is_none() && report.solves.iter().all(|o| o.optimal);
    report.estimate = evaluate(&p, machine, &assign);
    if let Some((est, ru)) = best {
        let changed = p
            .nodes
            .iter()
            .enumerate()
            .filter(|(n, _)| ru[*n] != assign[*n])
            .filter_map(|(n, node)| match node.kind {
                NodeKind::Param(i) => Some((
                    p.f.param_name(i).to_string(),
                    p.sharding(&p.tensor_axes(n, 0, &ru[n])),
                )),
                NodeKind::Inst(_) | NodeKind::Result(_) => None,
            })
            .collect();
        report.runner_up = Some(RunnerUp {
            estimate: est,
            changed,
        });
    }
    // The costliest instructions of the plan.
    let mut costs: Vec<(String, Estimate)> = vec![];
    for (n, node) in p.nodes.iter().enumerate() {
        if let NodeKind::Inst(inst) = node.kind {
            let (c, k, b) = p.node_cost(machine, n, &assign[n]);
            let mut e = Estimate {
                compute: c,
                comm: k,
                bytes: b,
                peak: 0.0,
            };
            for ed in p.edges.iter().filter(|ed| ed.consumer == n) {
                let src = p.tensor_axes(ed.producer, ed.ptensor, &assign[ed.producer]);
                let dst = p.tensor_axes(n, ed.tensor, &assign[n]);
                let (t, b) = p.reshard_cost(machine, ed.producer, ed.ptensor, &src, &dst);
                e.comm += t;
                e.bytes += b;
            }
            let d = &p.f.insts[inst];
            let label = match d.results.first() {
                Some(&v) => format!("%{} = {}", p.f.values[v].name, d.op.name()),
                None => d.op.name().to_string(),
            };
            costs.push((label, e));
        }
    }
    costs.sort_by(|a, b| b.1.step().total_cmp(&a.1.step()));
    costs.truncate(8);
    report.costliest = costs;
    write_annotations(m, entry, &p, &assign, &mut report);
    report.seconds = t0.elapsed().as_secs_f64();
    report
}

/// A written sharding with its `?` dimensions filled in from `chosen`
/// (`None` written: `chosen`).
fn merge(written: Option<&Sharding>, chosen: Sharding) -> Sharding {
    match written {
        None => chosen,
        Some(w) => Sharding {
            dims: w
                .dims
                .iter()
                .zip(chosen.dims)
                .map(|(d, c)| {
                    if *d == DimSharding::Open {
                        c
                    } else {
                        d.clone()
                    }
                })
                .collect(),
        },
    }
}

/// Writes the plan into the entry of `m`: its parameters, its results
/// (a result named like a parameter — carried state — takes the
/// parameter's sharding, so the next step needs no move), and the values of
/// the entry's own instructions other than calls (found by name in the
/// inlined copy, which keeps the entry's names).
fn write_annotations(
    m: &mut Module,
    entry: FuncId,
    p: &Problem,
    assign: &Assign,
    report: &mut Report,
) {
    let of = |v: pjc_ir::Value| -> Sharding {
        let (n, t) = p.def[&v];
        p.sharding(&p.tensor_axes(n, t, &assign[n]))
    };
    let f = &mut m.funcs[entry];
    for i in 0..f.params.len() {
        let v = f.params[i];
        let chosen = of(p.f.params[i]);
        let written = f.values[v]
            .sharding
            .as_ref()
            .is_some_and(|s| !s.dims.contains(&DimSharding::Open));
        let s = merge(f.values[v].sharding.as_ref(), chosen);
        let (n, t) = p.def[&p.f.params[i]];
        let bytes = p.local_bytes(n, t, &p.tensor_axes(n, t, &assign[n]));
        report.choices.push(Choice {
            name: f.param_name(i).to_string(),
            ty: f.values[v].ty.clone(),
            sharding: s.clone(),
            written,
            bytes,
        });
        f.values[v].sharding = Some(s);
    }
    for k in 0..f.results.len() {
        let name = f.result_name(k);
        let carried = (0..f.params.len()).find(|&i| f.param_name(i) == name);
        let chosen = match carried {
            Some(i) => f.values[f.params[i]]
                .sharding
                .clone()
                .expect("written above"),
            None => of(p.f.ret[k]),
        };
        f.results[k].sharding = Some(merge(f.results[k].sharding.as_ref(), chosen));
    }
    let names: std::collections::HashMap<&str, pjc_ir::Value> =
        p.f.values
            .iter()
            .map(|(v, d)| (d.name.as_str(), v))
            .collect();
    let body: Vec<pjc_ir::Inst> = f.body.clone();
    for inst in body {
        if f.insts[inst].op == pjc_ir::Opcode::Call {
            continue;
        }
        for r in f.insts[inst].results.clone() {
            if let Some(&g) = names.get(f.values[r].name.as_str()) {
                if p.f.values[g].ty == f.values[r].ty && p.def.contains_key(&g) {
                    let s = merge(f.values[r].sharding.as_ref(), of(g));
                    f.values[r].sharding = Some(s);
                }
            }
        }
    }
}

/// Seconds as µs or ms text.
fn time(s: f64) -> String {
    if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.2} µs", s * 1e6)
    }
}

impl Report {
    /// `pjc explain --auto-shard`'s section.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "auto-shard on mesh {}, memory limit {} bytes per device:",
            self.mesh, self.memory_limit
        );
        if let Some(why) = &self.fallback {
            let _ = writeln!(out, "  no plan chosen: {why}");
            return out;
        }
        let solves: Vec<String> = self
            .solves
            .iter()
            .map(|o| format!("{} decisions, {} variables, {} constraints", o.decisions, o.variables, o.constraints))
            .collect();
        let _ = writeln!(
            out,
            "  solver: ILP per mesh axis (good_lp/microlp), {} round{}, {} nodes [{}], {}",
            self.rounds,
            if self.rounds == 1 { "" } else { "s" },
            self.nodes,
            solves.join("; "),
            if self.optimal { "each axis optimal given the others" } else { "time limit: best found, not proven optimal" },
        );
        if let Some(why) = &self.stopped {
            let _ = writeln!(out, "  search stopped early: {why}; the plan found so far is used");
        }
        let line = |e: &Estimate| {
            format!("step {} (compute {}, collectives {}, {:.0} B sent per device), peak {:.0} B per device", time(e.step()), time(e.compute), time(e.comm), e.bytes, e.peak)
        };
        let _ = writeln!(
            out,
            "  estimate, chosen:            {}",
            line(&self.estimate)
        );
        let _ = writeln!(
            out,
            "  estimate, all replicated:    {}",
            line(&self.baseline)
        );
        match &self.runner_up {
            Some(r) => {
                let _ = writeln!(out, "  estimate, runner-up:         {}", line(&r.estimate));
                let moved: Vec<String> =
                    r.changed.iter().map(|(n, s)| format!("%{n} {s}")).collect();
                let _ = writeln!(out, "    runner-up differs in: {}", moved.join(", "));
            }
            None => match &self.runner_up_failed {
                Some(why) => {
                    let _ = writeln!(out, "  estimate, runner-up:         {why}");
                }
                None => {
                    let _ = writeln!(
                        out,
                        "  estimate, runner-up:         none (no parameter has another placement)"
                    );
                }
            },
        }
        let _ = writeln!(out, "  parameters:");
        for c in &self.choices {
            let alt = self
                .runner_up
                .as_ref()
                .and_then(|r| r.changed.iter().find(|(n, _)| *n == c.name))
                .map(|(_, s)| format!("  (runner-up: {s})"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "    %{:<12} {:<16} {:<18} {:>12.0} B per device{}{}",
                c.name,
                c.ty.to_string(),
                c.sharding.to_string(),
                c.bytes,
                if c.written { "  (as written)" } else { "" },
                alt
            );
        }
        if !self.costliest.is_empty() {
            let _ = writeln!(out, "  costliest instructions (estimated, per device):");
            for (l, e) in &self.costliest {
                let _ = writeln!(
                    out,
                    "    {:<28} compute {:>10}  collectives {:>10}",
                    l,
                    time(e.compute),
                    time(e.comm)
                );
            }
        }
        out
    }
}
