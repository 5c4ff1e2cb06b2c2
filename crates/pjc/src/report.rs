//! `pjc explain --html PATH` and `pjc compile --report PATH`: what the
//! compiler decided, as one self-contained HTML page (CSS, script and
//! drawings inline; nothing fetched when it is opened).
//!
//! It sits in the driver because it reads every stage's output — the
//! propagation (shardings and reasons), the partitioner's collectives, the
//! kernel plan, the buffer plan with its liveness (`pjc_fusion::liveness`),
//! the CUDA routes (`pjc_host::device::cuda_routes`) and a run's trace
//! (`measured.rs`) — and no stage below the driver sees all of them.
//!
//! The page is data plus a renderer: this module gathers the data as JSON,
//! every number in it already formatted as `pjc explain`'s text prints it
//! (so the page and the text agree by construction, and the browser test in
//! `tests/report.rs` checks that the page shows them), and
//! `assets/report.js` draws the tables, device grids, memory timeline and
//! trace bars from it when the page loads.

use crate::measured::Trace;
use crate::pipeline::Compilation;
use crate::ratio::DeviceClass;
use pjc_ir::infer::local_type;
use pjc_ir::{FuncKind, Mesh, Module, Sharding, TensorType, ValueDef};
use pjc_plan::cost::Machine;
use pjc_plan::{BufferKind, Step};
use pjc_sharding::{Grid, Slot, Why};
use serde_json::{json, Value as Json};
use std::collections::HashMap;

const CSS: &str = include_str!("../assets/report.css");
const JS: &str = include_str!("../assets/report.js");

/// What the report shows beyond the compilation itself.
pub struct Extras<'a> {
    /// `pjc explain`'s text, shown whole at the end of the page.
    pub text: &'a str,
    /// Why there is no kernel plan, when planning failed.
    pub plan_error: Option<&'a str>,
    pub trace: Option<&'a Trace>,
    pub machine: &'a Machine,
    pub class: DeviceClass,
}

/// The page for `c` (run at least through the per-device stage).
pub fn html(c: &Compilation, x: &Extras) -> String {
    let data = data(c, x);
    // Inside <script>, "</script" or "<!--" in a string would end or change
    // the element: '<' is written as its JSON escape.
    let data = serde_json::to_string(&data).expect("JSON of plain values").replace('<', "\\u003c");
    let title = escape(&format!("pjc report: {}", c.path));
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{title}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<div id=\"app\"><noscript>This report draws itself with JavaScript; the text form is at the end.</noscript></div>\n<pre id=\"errors\" hidden></pre>\n<script type=\"application/json\" id=\"pjc-data\">{data}</script>\n<script>\n{JS}</script>\n</body>\n</html>\n"
    )
}

/// Writes the page to `path`.
pub fn write(path: &std::path::Path, c: &Compilation, x: &Extras) -> Result<(), crate::failure::Failure> {
    let page = html(c, x);
    pjc_tensor::write_atomically(path, |f| std::io::Write::write_all(f, page.as_bytes())).map_err(crate::failure::Failure::Env)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The 1-based line of a byte offset in `src`.
fn line_of(src: &str, span: pjc_ir::Span) -> Option<usize> {
    if span.is_none() || span.start as usize > src.len() {
        return None;
    }
    Some(src.as_bytes()[..span.start as usize].iter().filter(|&&b| b == b'\n').count() + 1)
}

fn grid_json(g: &Grid) -> Json {
    json!({
        "row_dims": g.row_dims,
        "col_dims": g.col_dims,
        "rows": g.rows.iter().map(|r| Grid::range_label(r)).collect::<Vec<_>>(),
        "cols": g.cols.iter().map(|r| Grid::range_label(r)).collect::<Vec<_>>(),
        "cells": g.cells,
        "labels": g.cells.iter().map(|r| r.iter().map(|c| Grid::devices_label(c)).collect::<Vec<_>>()).collect::<Vec<_>>(),
    })
}

/// One row of the values table, as `pjc explain`'s table prints it.
#[allow(clippy::too_many_arguments)]
fn value_row(mesh: &Mesh, name: String, kind: &str, op: &str, line: Option<usize>, ty: &TensorType, s: &Sharding, why: String, why_full: String) -> Json {
    let local = local_type(ty, Some(s), mesh).unwrap_or_else(|| ty.clone());
    json!({
        "name": name,
        "kind": kind,
        "op": op,
        "line": line,
        "global": ty.to_string(),
        "sharding": s.to_string(),
        "local": local.to_string(),
        "global_bytes": ty.bytes(),
        "local_bytes": local.bytes(),
        "split": !s.is_fully_replicated(),
        "why": why,
        "why_full": why_full,
        "grid": Grid::of(mesh, ty, s).map(|g| grid_json(&g)),
    })
}

/// Every `func`'s values with their shardings; which of them the page draws
/// up front: parameters, results, and values whose sharding is none of their
/// operands' (where the layout changes), or that a collective serves.
fn values(m: &Module, p: &pjc_sharding::Propagation, src: &str, served: &std::collections::HashSet<String>) -> Json {
    let mesh = m.mesh_or_single();
    let mut funcs = vec![];
    for (id, f) in m.funcs.iter() {
        if f.kind != FuncKind::Global {
            funcs.push(json!({"name": f.name, "spmd": true, "rows": []}));
            continue;
        }
        let mut rows = vec![];
        for &v in &f.params {
            let d = &f.values[v];
            let slot = Slot::Value(id, v);
            let mut r = value_row(&mesh, format!("%{}", d.name), "parameter", "parameter", line_of(src, d.span), &d.ty, &p.sharding(slot), pjc_sharding::explain::why(p, slot, Why::Summary), pjc_sharding::explain::why(p, slot, Why::Full));
            r["draw"] = json!(true);
            rows.push(r);
        }
        for &i in &f.body {
            let inst = &f.insts[i];
            for &v in &inst.results {
                let d = &f.values[v];
                let slot = Slot::Value(id, v);
                let s = p.sharding(slot);
                let span = if d.span.is_none() { inst.span } else { d.span };
                let changes = s.dims.iter().any(|d| !matches!(d, pjc_ir::DimSharding::Replicated))
                    && inst.operands.iter().all(|&o| p.sharding(Slot::Value(id, o)) != s);
                let mut r = value_row(&mesh, format!("%{}", d.name), "value", inst.op.name(), line_of(src, span), &d.ty, &s, pjc_sharding::explain::why(p, slot, Why::Summary), pjc_sharding::explain::why(p, slot, Why::Full));
                r["draw"] = json!(changes || served.contains(&d.name));
                rows.push(r);
            }
        }
        for (k, res) in f.results.iter().enumerate() {
            let slot = Slot::Result(id, k);
            let span = if res.span.is_none() { f.ret_spans.get(k).copied().unwrap_or(pjc_ir::Span::NONE) } else { res.span };
            let mut r = value_row(&mesh, format!("-> {}", f.result_name(k)), "result", "result", line_of(src, span), &res.ty, &p.sharding(slot), pjc_sharding::explain::why(p, slot, Why::Summary), pjc_sharding::explain::why(p, slot, Why::Full));
            r["draw"] = json!(true);
            rows.push(r);
        }
        funcs.push(json!({"name": f.name, "spmd": false, "rows": rows}));
    }
    Json::Array(funcs)
}

/// The value a collective serves, from its reason ("dot_general %t106 has
/// ...", "operand 0 of gather %t333 ...", "result 'y': ..."): the first
/// `%name`, else the result named.
fn served_by(reason: &str) -> Option<(String, bool)> {
    if let Some(at) = reason.find('%') {
        let name: String = reason[at + 1..].chars().take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-')).collect();
        let name = name.trim_end_matches('.').to_string();
        if !name.is_empty() {
            return Some((name, false));
        }
    }
    let at = reason.find("result '")? + "result '".len();
    let name: String = reason[at..].chars().take_while(|&c| c != '\'').collect();
    (!name.is_empty()).then_some((name, true))
}

/// Where each value and result is defined in the source: by (function,
/// name), results as `-> name`; and by name alone, the first function's.
struct Lines {
    by_func: HashMap<(String, String), usize>,
    by_name: HashMap<String, usize>,
}

impl Lines {
    fn of(m: &Module, src: &str) -> Lines {
        let mut l = Lines { by_func: HashMap::new(), by_name: HashMap::new() };
        for f in m.funcs.values() {
            let mut add = |name: String, line: Option<usize>| {
                if let Some(n) = line {
                    l.by_name.entry(name.clone()).or_insert(n);
                    l.by_func.entry((f.name.clone(), name)).or_insert(n);
                }
            };
            for (_, d) in f.values.iter() {
                let span = match d.def {
                    ValueDef::Result(i, _) if d.span.is_none() => f.insts[i].span,
                    _ => d.span,
                };
                add(d.name.clone(), line_of(src, span));
            }
            for k in 0..f.results.len() {
                let s = f.results[k].span;
                add(format!("-> {}", f.result_name(k)), line_of(src, if s.is_none() { f.ret_spans.get(k).copied().unwrap_or(s) } else { s }));
            }
        }
        l
    }

    /// The line of `name` (a value, or a result when `result`) in `func`, else in any function.
    fn get(&self, func: &str, name: &str, result: bool) -> Option<usize> {
        let key = if result { format!("-> {name}") } else { name.to_string() };
        self.by_func.get(&(func.to_string(), key.clone())).or_else(|| self.by_name.get(&key)).copied()
    }
}

/// The device groups a collective over `axes` runs in: devices that differ
/// only along those axes.
fn groups(mesh: &Mesh, axes: &[String]) -> Vec<Vec<u64>> {
    if mesh.device_count() > pjc_sharding::explain::GRID_MAX_DEVICES {
        return vec![];
    }
    let inside: Vec<bool> = mesh.axes.iter().map(|a| axes.contains(&a.name)).collect();
    let mut by_key: Vec<(Vec<u64>, Vec<u64>)> = vec![];
    for dev in 0..mesh.device_count() {
        let key: Vec<u64> = mesh.coords(dev).into_iter().zip(&inside).map(|(c, &i)| if i { 0 } else { c }).collect();
        match by_key.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(dev),
            None => by_key.push((key, vec![dev])),
        }
    }
    by_key.into_iter().map(|(_, g)| g).collect()
}

fn collectives(c: &Compilation) -> (Json, std::collections::HashSet<String>) {
    let mesh = c.module.mesh_or_single();
    let cs = &c.partitioned.as_ref().expect("partitioned").collectives;
    let lines = Lines::of(&c.module, &c.src);
    let mut served = std::collections::HashSet::new();
    let rows: Vec<Json> = cs
        .iter()
        .map(|x| {
            let serves = served_by(&x.reason);
            let line = serves.as_ref().and_then(|(n, r)| lines.get(&x.func, n, *r));
            if let Some((n, false)) = &serves {
                served.insert(n.clone());
            }
            json!({
                "value": format!("%{}", x.value),
                "func": x.func,
                "op": x.op.name(),
                "axes": x.axes,
                "groups": groups(&mesh, &x.axes),
                "bytes": x.bytes_per_device,
                "reason": x.reason,
                "serves": serves.map(|(n, r)| if r { format!("result '{n}'") } else { format!("%{n}") }),
                "line": line,
            })
        })
        .collect();
    let total = cs.iter().fold(0u64, |a, c| a.saturating_add(c.bytes_per_device));
    (json!({"rows": rows, "total": total}), served)
}

/// Where a step runs on the CPU backend (`pjc_host::library_step`'s choice).
fn cpu_route(s: &Step) -> String {
    match s {
        Step::Kernel(_) => "kernel (x86-64, kernels.so)".into(),
        Step::Library { inst, .. } if inst.op == pjc_ir::Opcode::DotGeneral => "host GEMM".into(),
        Step::Library { inst, .. } if inst.op == pjc_ir::Opcode::Convolution => "host GEMM (float), else reference kernel".into(),
        Step::Library { inst, .. } => format!("host library ({})", inst.op),
        Step::Collective { .. } => "MPI".into(),
        Step::Control(_) => "host loop".into(),
    }
}

fn plan_data(c: &Compilation) -> Json {
    let plan = c.plan.as_ref().expect("planned");
    let mem = c.memory();
    let live = pjc_fusion::liveness(plan);
    let steps = pjc_plan::control::preorder(&plan.steps);
    let routes = pjc_host::device::cuda_routes(plan);
    // What each fused value is, by name, over the per-device functions.
    let mut op_of: HashMap<&str, &str> = HashMap::new();
    for f in c.per_device.as_ref().expect("per-device").funcs.values() {
        for &i in &f.body {
            for &v in &f.insts[i].results {
                op_of.insert(f.values[v].name.as_str(), f.insts[i].op.name());
            }
        }
    }
    let buf = |b: usize| format!("%{}", plan.buffers[b].name);
    let rows: Vec<Json> = steps
        .iter()
        .enumerate()
        .map(|(n, s)| {
            let cuda = match &routes {
                Ok(r) => r[n].to_string(),
                Err(e) => format!("no device form: {e}"),
            };
            let (kind, name, ops, outs): (&str, String, Vec<Json>, Vec<String>) = match s {
                Step::Kernel(k) => (
                    "kernel",
                    k.name.clone(),
                    k.fuses.iter().map(|v| json!({"value": format!("%{}", v.trim_start_matches('%')), "op": op_of.get(v.trim_start_matches('%')).copied().unwrap_or("?")})).collect(),
                    k.outputs.iter().map(|b| buf(b.buffer)).collect(),
                ),
                Step::Library { inst, outputs, .. } => ("library", inst.op.to_string(), vec![], outputs.iter().map(|&b| buf(b)).collect()),
                Step::Collective { inst, output, .. } => ("collective", inst.op.to_string(), vec![], vec![buf(*output)]),
                Step::Control(ctl) => ("control", ctl.blocks().iter().map(|b| format!("@{}", b.name)).collect::<Vec<_>>().join(", "), vec![], vec![]),
            };
            json!({"n": n + 1, "kind": kind, "name": name, "ops": ops, "outputs": outs, "cpu": cpu_route(s), "cuda": cuda})
        })
        .collect();
    let count = |k: fn(&Step) -> bool| steps.iter().filter(|s| k(s)).count();
    let mut donated_to = vec![false; plan.buffers.len()];
    for &(_, r) in &mem.donated {
        donated_to[r] = true;
    }
    let buffers: Vec<Json> = plan
        .buffers
        .iter()
        .enumerate()
        .filter(|(_, b)| !matches!(b.kind, BufferKind::Window { .. }))
        .map(|(i, b)| {
            let kind = plan.role(i);
            json!({
                "b": i,
                "name": format!("%{}", b.name),
                "ty": b.ty.to_string(),
                "kind": kind,
                "bytes": b.bytes(),
                "offset": mem.offsets[i],
                "def": live.def[i],
                "last": live.last[i],
                "donated": donated_to[i],
            })
        })
        .collect();
    let f = &mem.fullest;
    json!({
        "counts": {"kernels": count(|s| matches!(s, Step::Kernel(_))), "library": count(|s| matches!(s, Step::Library { .. })), "collectives": count(|s| matches!(s, Step::Collective { .. }))},
        "steps": rows,
        "peak": mem.peak,
        "fullest": {"bytes": f.bytes, "at": f.at.0, "of": f.at.1, "step": f.step, "line": f.line(plan)},
        "events": live.events,
        "buffers": buffers,
    })
}

fn trace_data(t: &Trace) -> Json {
    let d = |us: f64| pjc_plan::cost::duration_text(us * 1e-6);
    let ranks: Vec<Json> = t
        .ranks
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let [step, compute, coll, wait, other, asy] = r.per_step();
            json!({
                "rank": k, "steps": r.steps,
                "us": {"step": step, "compute": compute, "collectives": coll, "waiting": wait, "other": other, "async": asy},
                "text": {"step": d(step), "compute": d(compute), "collectives": d(coll), "waiting": d(wait), "other": d(other), "async": d(asy)},
            })
        })
        .collect();
    json!({"path": t.path, "ranks": ranks})
}

fn data(c: &Compilation, x: &Extras) -> Json {
    let mesh = c.module.mesh_or_single();
    let (colls, served) = collectives(c);
    let prop = c.propagation.as_ref().expect("propagated");
    let planned = c.plan.is_some();
    json!({
        "file": c.path,
        "entry": c.module.funcs[c.entry].name,
        "mesh": if mesh.axes.is_empty() { "none (1 device)".to_string() } else { mesh.to_string().trim_start_matches("mesh ").to_string() },
        "devices": mesh.device_count(),
        "source": c.src.lines().collect::<Vec<_>>(),
        "funcs": values(&c.module, prop, &c.src, &served),
        "collectives": colls,
        "plan": if planned { plan_data(c) } else { Json::Null },
        "plan_error": x.plan_error,
        "ratio": if planned { Json::String(crate::ratio::explain_ratio(c.plan.as_ref().expect("planned"), &mesh, x.machine, x.class).trim_start().to_string()) } else { Json::Null },
        "trace": x.trace.map(trace_data),
        "text": x.text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_value_a_collective_serves() {
        assert_eq!(served_by("dot_general %t106 has its contracting dimension split over model: partial results"), Some(("t106".into(), false)));
        assert_eq!(served_by("operand 0 of gather %t333 (gather needs dim 0 whole on each device): [data] -> [_]"), Some(("t333".into(), false)));
        assert_eq!(served_by("result 'y': [data, _] -> [_, _]"), Some(("y".into(), true)));
        assert_eq!(served_by("nothing named"), None);
    }

    #[test]
    fn groups_vary_only_along_their_axes() {
        let mesh = Mesh {
            axes: vec![
                pjc_ir::MeshAxis { name: "data".into(), size: 2, span: pjc_ir::Span::NONE },
                pjc_ir::MeshAxis { name: "model".into(), size: 3, span: pjc_ir::Span::NONE },
            ],
        };
        assert_eq!(groups(&mesh, &["model".into()]), vec![vec![0, 1, 2], vec![3, 4, 5]]);
        assert_eq!(groups(&mesh, &["data".into()]), vec![vec![0, 3], vec![1, 4], vec![2, 5]]);
        assert_eq!(groups(&mesh, &["data".into(), "model".into()]), vec![vec![0, 1, 2, 3, 4, 5]]);
    }

    #[test]
    fn lines_count_from_one() {
        let src = "a\nbb\nccc";
        assert_eq!(line_of(src, pjc_ir::Span::new(0, 1)), Some(1));
        assert_eq!(line_of(src, pjc_ir::Span::new(5, 6)), Some(3));
        assert_eq!(line_of(src, pjc_ir::Span::NONE), None);
    }
}
