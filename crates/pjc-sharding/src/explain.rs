//! `pjc explain`: for every value its global shape, sharding, per-device shape
//! and where its sharding came from, a picture of which device holds which
//! block for split 1-D and 2-D arrays (like JAX's `visualize_array_sharding`),
//! and every instruction's factor rule in Shardy's notation — the very
//! instance propagation and the partitioner use.

use crate::propagate::{Propagation, Slot};
use crate::rules::factor_rule;
use pjc_dialects::ShardingRule;
use pjc_ir::infer::local_type;
use pjc_ir::{FuncKind, Mesh, Module, Sharding, TensorType};
use std::fmt::Write;

/// The whole report for a module.
pub fn explain(m: &Module, p: &Propagation) -> String {
    let mesh = m.mesh_or_single();
    let mut out = String::new();
    if mesh.axes.is_empty() {
        let _ = writeln!(out, "mesh: none (1 device)");
    } else {
        let _ = writeln!(out, "{} ({} devices)", mesh, mesh.device_count());
    }
    for (id, f) in m.funcs.iter() {
        let _ = writeln!(out);
        if f.kind == FuncKind::Spmd {
            let _ = writeln!(out, "spmd func @{} (per-device view: shapes below are local; no propagation inside)", f.name);
        } else {
            let _ = writeln!(out, "func @{}", f.name);
        }
        let mut rows: Vec<[String; 5]> = vec![];
        // One picture per distinct (global type, sharding), listing the values that share it.
        let mut pictures: Vec<(String, Vec<String>, String)> = vec![];
        let row = |rows: &mut Vec<[String; 5]>, name: String, ty: &TensorType, s: Sharding, why: String, pictures: &mut Vec<(String, Vec<String>, String)>| {
            let local = if f.kind == FuncKind::Spmd {
                ty.clone()
            } else {
                local_type(ty, Some(&s), &mesh).unwrap_or_else(|| ty.clone())
            };
            let global = if f.kind == FuncKind::Spmd { pjc_ir::infer::global_type(ty, Some(&s), &mesh) } else { ty.clone() };
            if let Some(pic) = picture(&mesh, &global, &s) {
                let key = format!("{global} on {s}");
                match pictures.iter_mut().find(|p| p.0 == key) {
                    Some(p) => p.1.push(name.clone()),
                    None => pictures.push((key, vec![name.clone()], pic)),
                }
            }
            rows.push([name, global.to_string(), s.to_string(), local.to_string(), why]);
        };
        let why = |slot: Slot| -> String {
            let reasons = p.reasons(slot);
            let parts: Vec<String> =
                reasons.iter().enumerate().filter_map(|(d, r)| r.as_ref().map(|r| format!("dim {d}: {r}"))).collect();
            if parts.is_empty() {
                "replicated".to_string()
            } else {
                parts.join("; ")
            }
        };
        for &v in &f.params {
            let d = &f.values[v];
            let (s, w) = if f.kind == FuncKind::Spmd {
                (d.sharding.clone().unwrap_or_else(|| Sharding::replicated(d.ty.rank())), "signature".to_string())
            } else {
                (p.sharding(Slot::Value(id, v)), why(Slot::Value(id, v)))
            };
            row(&mut rows, format!("%{}", d.name), &d.ty, s, w, &mut pictures);
        }
        if f.kind == FuncKind::Global {
            for &i in &f.body {
                for &v in &f.insts[i].results {
                    let d = &f.values[v];
                    row(&mut rows, format!("%{}", d.name), &d.ty, p.sharding(Slot::Value(id, v)), why(Slot::Value(id, v)), &mut pictures);
                }
            }
        } else {
            for &i in &f.body {
                for &v in &f.insts[i].results {
                    let d = &f.values[v];
                    rows.push([format!("%{}", d.name), "-".into(), "-".into(), d.ty.to_string(), "per-device value".into()]);
                }
            }
        }
        for (k, r) in f.results.iter().enumerate() {
            let slot = Slot::Result(id, k);
            let (s, w) = if f.kind == FuncKind::Spmd {
                (r.sharding.clone().unwrap_or_else(|| Sharding::replicated(r.ty.rank())), "signature".to_string())
            } else {
                (p.sharding(slot), why(slot))
            };
            row(&mut rows, format!("-> {}", f.result_name(k)), &r.ty, s, w, &mut pictures);
        }
        table(&mut out, &["value", "global", "sharding", "per device", "why"], &rows);
        if !pictures.is_empty() {
            let _ = writeln!(out, "\n  tiles (device ids holding each block):");
            for (key, names, pic) in &pictures {
                let _ = writeln!(out, "  {} {key}:", names.join(", "));
                out.push_str(pic);
            }
        }
        if f.kind == FuncKind::Global {
            factor_rules(&mut out, f);
            let control = crate::control::explain_control(m, p, id);
            if !control.is_empty() {
                let _ = writeln!(out, "\n  control flow (one sharding per carried value for the whole loop; what differs is resharded once):");
                for line in control {
                    let _ = writeln!(out, "  {line}");
                }
            }
        }
    }
    out
}

/// Each instruction's factor rule, as propagation and the partitioner use it
/// (instantiated from the op table's declaration).
fn factor_rules(out: &mut String, f: &pjc_ir::Function) {
    let mut rows: Vec<[String; 3]> = vec![];
    for &i in &f.body {
        let inst = &f.insts[i];
        if matches!(inst.op.def().sharding, ShardingRule::Call | ShardingRule::ControlFlow | ShardingRule::Manual | ShardingRule::Transform) {
            continue;
        }
        let name = format!("%{}", f.values[inst.results[0]].name);
        rows.push([name, inst.op.name().to_string(), factor_rule(f, inst).notation()]);
    }
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n  factor rules (Shardy notation; what propagation and the partitioner use):");
    let w0 = rows.iter().map(|r| r[0].chars().count()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r[1].chars().count()).max().unwrap_or(0);
    for [name, op, rule] in &rows {
        let mut s = String::from("  ");
        pad_right(&mut s, name, w0);
        s.push_str("  ");
        pad_right(&mut s, op, w1);
        s.push_str("  ");
        s.push_str(rule);
        let _ = writeln!(out, "{s}");
    }
}

// Padding by hand: `format!`'s `{:<width$}` panics for widths above 65535,
// and value names (or device lists) can be longer than that.
fn pad_right(s: &mut String, cell: &str, width: usize) {
    s.push_str(cell);
    s.extend(std::iter::repeat_n(' ', width.saturating_sub(cell.chars().count())));
}

fn center(s: &mut String, cell: &str, width: usize) {
    let gap = width.saturating_sub(cell.chars().count());
    s.extend(std::iter::repeat_n(' ', gap / 2));
    s.push_str(cell);
    s.extend(std::iter::repeat_n(' ', gap - gap / 2));
}

fn table(out: &mut String, header: &[&str; 5], rows: &[[String; 5]]) {
    let mut w = header.map(|h| h.chars().count());
    for r in rows {
        for (i, c) in r.iter().enumerate().take(4) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |out: &mut String, cells: [&str; 5]| {
        let mut s = String::from("  ");
        for i in 0..4 {
            pad_right(&mut s, cells[i], w[i]);
            s.push_str("  ");
        }
        s.push_str(cells[4]);
        let _ = writeln!(out, "{}", s.trim_end());
    };
    line(out, *header);
    for r in rows {
        line(out, [&r[0], &r[1], &r[2], &r[3], &r[4]]);
    }
}

/// A grid of the blocks of a split 1-D or 2-D array, each labelled with the
/// devices that hold it. `None` for other ranks, unsplit arrays or huge grids.
pub fn picture(mesh: &Mesh, ty: &TensorType, s: &Sharding) -> Option<String> {
    if ty.rank() == 0 || ty.rank() > 2 || s.is_fully_replicated() || s.dims.len() != ty.rank() {
        return None;
    }
    let parts: Vec<u64> = (0..ty.rank()).map(|d| mesh.group_size(s.dim_axes(d).iter().map(|a| a.as_str()))).collect();
    let (rows, cols) = if ty.rank() == 1 { (1, parts[0]) } else { (parts[0], parts[1]) };
    if rows > 16 || cols > 16 {
        return None;
    }
    let mut cells = vec![vec![vec![]; cols as usize]; rows as usize];
    for dev in 0..mesh.device_count() {
        let coords = mesh.coords(dev);
        let index = |d: usize| {
            s.dim_axes(d).iter().fold(0u64, |acc, a| {
                let i = mesh.axis(a).unwrap();
                acc * mesh.axes[i].size + coords[i]
            })
        };
        let (r, c) = if ty.rank() == 1 { (0, index(0)) } else { (index(0), index(1)) };
        cells[r as usize][c as usize].push(dev.to_string());
    }
    let labels: Vec<Vec<String>> = cells.iter().map(|r| r.iter().map(|c| c.join(",")).collect()).collect();
    let width = labels.iter().flatten().map(|l| l.len()).max().unwrap_or(1) + 2;
    if width > 200 {
        return None; // thousands of devices per block: a picture would not help
    }
    let bar = |l: char, m: char, r: char| {
        let mut s = String::from("    ");
        s.push(l);
        for c in 0..cols {
            s.push_str(&"─".repeat(width));
            s.push(if c + 1 == cols { r } else { m });
        }
        s.push('\n');
        s
    };
    let mut out = bar('┌', '┬', '┐');
    for (ri, row) in labels.iter().enumerate() {
        let mut s = String::from("    │");
        for l in row {
            center(&mut s, l, width);
            s.push('│');
        }
        out.push_str(&s);
        out.push('\n');
        out.push_str(&if ri + 1 == labels.len() { bar('└', '┴', '┘') } else { bar('├', '┼', '┤') });
    }
    Some(out)
}
