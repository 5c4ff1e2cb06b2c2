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

/// How much of each value's "why" `pjc explain` prints.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Why {
    /// Paths longer than [`SUMMARY_STEPS`] ops as their count and their first
    /// and last op; dimensions with the same reason named together.
    #[default]
    Summary,
    /// Every dimension's reason as propagation keeps it: the first and the
    /// last [`crate::Path::KEEP`] ops of its path and the count of those between.
    Full,
}

/// Paths of at most this many ops are printed whole in the summary.
pub const SUMMARY_STEPS: usize = 3;

/// One dimension's reason in the summary: a long path as its length and ends.
fn reason_summary(r: &crate::Reason) -> String {
    match r.path.ends() {
        Some((first, last)) if r.path.len > SUMMARY_STEPS => format!("{} via {} ops ({first} … {last})", r.origin, r.path.len),
        _ => r.to_string(),
    }
}

/// Why a slot has its sharding, as `pjc explain`'s "why" column says it.
pub fn why(p: &Propagation, slot: Slot, mode: Why) -> String {
    let reasons = p.reasons(slot);
    let mut parts: Vec<(Vec<usize>, String)> = vec![];
    for (d, r) in reasons.iter().enumerate() {
        let Some(r) = r else { continue };
        let text = match mode {
            Why::Full => r.to_string(),
            Why::Summary => reason_summary(r),
        };
        match parts.iter_mut().find(|(_, t)| *t == text && mode == Why::Summary) {
            Some((dims, _)) => dims.push(d),
            None => parts.push((vec![d], text)),
        }
    }
    if parts.is_empty() {
        return "replicated".to_string();
    }
    let parts: Vec<String> = parts
        .into_iter()
        .map(|(dims, text)| match dims.as_slice() {
            [d] => format!("dim {d}: {text}"),
            ds => format!("dims {}: {text}", ds.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
        })
        .collect();
    parts.join("; ")
}

/// The whole report for a module, with the summarised "why" column.
pub fn explain(m: &Module, p: &Propagation) -> String {
    explain_with(m, p, Why::Summary)
}

/// The whole report for a module.
pub fn explain_with(m: &Module, p: &Propagation, mode: Why) -> String {
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
        let why = |slot: Slot| why(p, slot, mode);
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
    Some(boxes(&labels, &[], 4, cols as usize, width))
}

/// Rows of `cols` boxed cells, each `width` wide and centred, the rows after
/// their labels `row_labels` (none: blank) padded to `margin` columns.
fn boxes(labels: &[Vec<String>], row_labels: &[String], margin: usize, cols: usize, width: usize) -> String {
    let bar = |l: char, m: char, r: char| {
        let mut s = " ".repeat(margin);
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
        let mut s = String::new();
        pad_right(&mut s, row_labels.get(ri).map_or("", |l| l.as_str()), margin);
        s.push('│');
        for l in row {
            center(&mut s, l, width);
            s.push('│');
        }
        out.push_str(&s);
        out.push('\n');
        out.push_str(&if ri + 1 == labels.len() { bar('└', '┴', '┘') } else { bar('├', '┼', '┤') });
    }
    out
}

/// Which device holds which block of a value (like JAX's
/// `visualize_array_sharding`), for any rank: the blocks of the split
/// dimensions laid out as rows and columns. A rank-1 value is one row of
/// blocks; a rank-2 value has dimension 0 down and dimension 1 across; a
/// higher rank has its first split dimension down and the other split ones
/// across. An unsplit value is one block that every device holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    /// The dimensions down the rows and across the columns.
    pub row_dims: Vec<usize>,
    pub col_dims: Vec<usize>,
    /// Each row's and column's index ranges along those dimensions
    /// (half-open, `lo..hi` per dimension).
    pub rows: Vec<Vec<(u64, u64)>>,
    pub cols: Vec<Vec<(u64, u64)>>,
    /// The devices holding each block, `cells[row][col]`, ascending.
    pub cells: Vec<Vec<Vec<u64>>>,
}

/// Grids with more blocks than this per side are not drawn.
pub const GRID_MAX_SIDE: u64 = 64;
/// Meshes with more devices than this are not drawn.
pub const GRID_MAX_DEVICES: u64 = 4096;

impl Grid {
    /// The grid of `ty` (global type) split by `s` on `mesh`; `None` when the
    /// sharding does not fit the type or the grid would be too large to draw.
    pub fn of(mesh: &Mesh, ty: &TensorType, s: &Sharding) -> Option<Grid> {
        let rank = ty.rank();
        if s.dims.len() != rank || mesh.device_count() > GRID_MAX_DEVICES {
            return None;
        }
        let parts: Vec<u64> = (0..rank).map(|d| mesh.group_size(s.dim_axes(d).iter().map(|a| a.as_str()))).collect();
        let split: Vec<usize> = (0..rank).filter(|&d| parts[d] > 1).collect();
        let (row_dims, col_dims): (Vec<usize>, Vec<usize>) = match rank {
            0 => (vec![], vec![]),
            1 => (vec![], vec![0]),
            2 => (vec![0], vec![1]),
            _ => match split.split_first() {
                None => (vec![], vec![]),
                Some((&first, rest)) => (vec![first], rest.to_vec()),
            },
        };
        let count = |dims: &[usize]| dims.iter().fold(1u64, |a, &d| a.saturating_mul(parts[d]));
        let (nr, nc) = (count(&row_dims), count(&col_dims));
        if nr > GRID_MAX_SIDE || nc > GRID_MAX_SIDE {
            return None;
        }
        // The index ranges of block `k` (row-major over `dims`' parts).
        let ranges = |dims: &[usize], mut k: u64| -> Vec<(u64, u64)> {
            let mut out = vec![(0, 0); dims.len()];
            for (j, &d) in dims.iter().enumerate().rev() {
                let b = k % parts[d];
                k /= parts[d];
                let size = ty.shape[d].div_ceil(parts[d]);
                out[j] = ((b * size).min(ty.shape[d]), ((b + 1) * size).min(ty.shape[d]));
            }
            out
        };
        let rows: Vec<Vec<(u64, u64)>> = (0..nr).map(|k| ranges(&row_dims, k)).collect();
        let cols: Vec<Vec<(u64, u64)>> = (0..nc).map(|k| ranges(&col_dims, k)).collect();
        let mut cells = vec![vec![vec![]; nc as usize]; nr as usize];
        for dev in 0..mesh.device_count() {
            let coords = mesh.coords(dev);
            let block = |d: usize| {
                s.dim_axes(d).iter().fold(0u64, |acc, a| match mesh.axis(a) {
                    Some(i) => acc * mesh.axes[i].size + coords[i],
                    None => acc,
                })
            };
            let index = |dims: &[usize]| dims.iter().fold(0u64, |acc, &d| acc * parts[d] + block(d));
            cells[index(&row_dims) as usize][index(&col_dims) as usize].push(dev);
        }
        Some(Grid { row_dims, col_dims, rows, cols, cells })
    }

    /// A range list as `lo:hi` per dimension, comma-separated.
    pub fn range_label(r: &[(u64, u64)]) -> String {
        r.iter().map(|(lo, hi)| format!("{lo}:{hi}")).collect::<Vec<_>>().join(", ")
    }

    /// Device ids as a short list: runs of consecutive ids as `a-b`.
    pub fn devices_label(ds: &[u64]) -> String {
        let mut parts: Vec<String> = vec![];
        let mut i = 0;
        while i < ds.len() {
            let mut j = i;
            while j + 1 < ds.len() && ds[j + 1] == ds[j] + 1 {
                j += 1;
            }
            parts.push(if j >= i + 2 { format!("{}-{}", ds[i], ds[j]) } else { ds[i..=j].iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",") });
            i = j + 1;
        }
        parts.join(",")
    }

    /// The grid as a box drawing for the terminal (`pjc explain --value`):
    /// column ranges above, row ranges to the left, each cell the devices
    /// holding that block.
    pub fn text(&self) -> String {
        let labels: Vec<Vec<String>> = self.cells.iter().map(|r| r.iter().map(|c| Grid::devices_label(c)).collect()).collect();
        let col_labels: Vec<String> = self.cols.iter().map(|c| Grid::range_label(c)).collect();
        let row_labels: Vec<String> = self.rows.iter().map(|r| Grid::range_label(r)).collect();
        let width = labels.iter().flatten().chain(col_labels.iter()).map(|l| l.chars().count()).max().unwrap_or(1) + 2;
        let margin = row_labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) + 1;
        let cols = self.cols.len();
        let mut out = String::new();
        if !self.col_dims.is_empty() {
            let mut s = " ".repeat(margin + 1);
            for l in &col_labels {
                center(&mut s, l, width);
                s.push(' ');
            }
            let _ = writeln!(out, "{}", s.trim_end());
        }
        out.push_str(&boxes(&labels, &row_labels, margin, cols, width));
        out
    }
}

/// What `pjc explain --value NAME` prints: the value's types, sharding,
/// bytes and reasons, and its [`Grid`] drawn as boxes. `None` when `@func`
/// (a `func` of `m`) has no value or result of that name (with or without `%`).
pub fn explain_value(m: &Module, p: &Propagation, func: pjc_ir::FuncId, name: &str) -> Option<String> {
    let f = &m.funcs[func];
    let mesh = m.mesh_or_single();
    let bare = name.strip_prefix('%').unwrap_or(name);
    let value = f.values.iter().find(|(_, d)| d.name == bare).map(|(v, _)| v);
    let (label, ty, s, slot) = match value {
        Some(v) if f.kind == FuncKind::Global => (format!("%{bare}"), f.values[v].ty.clone(), p.sharding(Slot::Value(func, v)), Some(Slot::Value(func, v))),
        Some(v) => {
            // A spmd func: only its parameters have a (signature) sharding.
            let d = &f.values[v];
            let s = d.sharding.clone()?;
            (format!("%{bare}"), pjc_ir::infer::global_type(&d.ty, Some(&s), &mesh), s, None)
        }
        None => {
            let k = (0..f.results.len()).find(|&k| f.result_name(k) == bare)?;
            let r = &f.results[k];
            if f.kind == FuncKind::Global {
                (format!("result '{bare}'"), r.ty.clone(), p.sharding(Slot::Result(func, k)), Some(Slot::Result(func, k)))
            } else {
                let s = r.sharding.clone()?;
                (format!("result '{bare}'"), pjc_ir::infer::global_type(&r.ty, Some(&s), &mesh), s, None)
            }
        }
    };
    let local = local_type(&ty, Some(&s), &mesh).unwrap_or_else(|| ty.clone());
    let mut out = String::new();
    let mesh_text = if mesh.axes.is_empty() { "no mesh (1 device)".to_string() } else { format!("{mesh} ({} devices)", mesh.device_count()) };
    let _ = writeln!(out, "{label} in @{}: {ty} on {s}, {mesh_text}", f.name);
    let _ = writeln!(out, "  per device: {local}, {} B of {} B", local.bytes(), ty.bytes());
    let why = match slot {
        Some(slot) => why(p, slot, Why::Full),
        None => "signature".to_string(),
    };
    let _ = writeln!(out, "  why: {why}");
    match Grid::of(&mesh, &ty, &s) {
        Some(g) => {
            let dims = |ds: &[usize]| -> String {
                ds.iter()
                    .map(|&d| {
                        let axes = s.dim_axes(d);
                        if axes.is_empty() { format!("dim {d}") } else { format!("dim {d} over {}", axes.join(", ")) }
                    })
                    .collect::<Vec<_>>()
                    .join(" × ")
            };
            let layout = match (g.row_dims.is_empty(), g.col_dims.is_empty()) {
                (true, true) => "one block".to_string(),
                (true, false) => format!("across: {}", dims(&g.col_dims)),
                (false, true) => format!("down: {}", dims(&g.row_dims)),
                (false, false) => format!("down: {}; across: {}", dims(&g.row_dims), dims(&g.col_dims)),
            };
            let _ = writeln!(out, "  blocks ({layout}; each cell: the device ids holding it):");
            for line in g.text().lines() {
                let _ = writeln!(out, "  {line}");
            }
        }
        None => {
            let _ = writeln!(out, "  blocks: too many to draw ({} devices)", mesh.device_count());
        }
    }
    Some(out)
}
