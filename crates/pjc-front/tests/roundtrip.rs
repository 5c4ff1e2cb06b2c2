//! Print/parse round trip over every PIR program of the repository.
//!
//! For every `.pir` file under `tests/`, `examples/` and `docs/` (recursively), and
//! every fenced code block of a `docs/*.md` or `examples/*.md` page that is a
//! complete module, which `pjc_front::load` accepts:
//!
//! ```text
//! m    = load(src)
//! text = print_module(m)
//! m2   = load(text)
//! m2.without_spans() == m.without_spans()   // printing loses nothing
//! print_module(m2) == text                  // printing is a fixed point
//! ```
//!
//! Every op of the table must appear in some round-tripped program.
//!
//! Files `load` rejects (the invalid programs of `tests/text/invalid/`, partial
//! snippets in docs) are skipped; the test fails if fewer than 20 programs were
//! round-tripped, so it cannot silently test nothing.

use pjc_dialects::Opcode;
use pjc_front::{load, print_module, render};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

const MIN_PROGRAMS: usize = 20;

fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The fenced code blocks of a Markdown page (```` ``` ```` or ```` ```pir ````), with
/// the 1-based line of their first line.
fn fenced_blocks(md: &str) -> Vec<(usize, String)> {
    let mut out = vec![];
    let mut cur: Option<(usize, String, usize)> = None; // (line, text, fence indent)
    for (i, line) in md.lines().enumerate() {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        match &mut cur {
            None => {
                if let Some(info) = t.strip_prefix("```") {
                    let info = info.trim();
                    if info.is_empty() || info == "pir" {
                        cur = Some((i + 2, String::new(), indent));
                    } else {
                        // Another language: skip to its closing fence.
                        cur = Some((0, String::new(), indent));
                    }
                }
            }
            Some((start, text, ind)) => {
                if t.starts_with("```") {
                    if *start > 0 {
                        out.push((*start, std::mem::take(text)));
                    }
                    cur = None;
                } else {
                    // Blocks inside list items are indented: drop the fence's indentation.
                    let strip = line.len() - line.trim_start().len();
                    text.push_str(&line[strip.min(*ind)..]);
                    text.push('\n');
                }
            }
        }
    }
    out
}

/// Round-trips one program; `Ok(false)` when `load` rejects it (skipped). The
/// ops it uses are added to `ops`.
fn round_trip(name: &str, src: &str, ops: &mut BTreeSet<Opcode>) -> Result<bool, String> {
    let Ok(m) = load(src) else { return Ok(false) };
    ops.extend(m.funcs.values().flat_map(|f| f.body.iter().map(|&i| f.insts[i].op)));
    let text = print_module(&m);
    let m2 = match load(&text) {
        Ok(m2) => m2,
        Err(d) => {
            return Err(format!(
                "the printed text does not load:\n{}\n--- printed text:\n{text}",
                render(&format!("{name} (printed)"), &text, &d)
            ))
        }
    };
    if m2.without_spans() != m.without_spans() {
        return Err(format!(
            "load(print(m)) differs from m\n--- printed text:\n{text}\n--- m:\n{:#?}\n--- load(print(m)):\n{:#?}",
            m.without_spans(),
            m2.without_spans()
        ));
    }
    let again = print_module(&m2);
    if again != text {
        return Err(format!("printing is not a fixed point\n--- print(m):\n{text}\n--- print(load(print(m))):\n{again}"));
    }
    Ok(true)
}

#[test]
fn every_program_round_trips() {
    let root = repo_root();
    let mut files = vec![];
    for d in ["tests", "examples", "docs"] {
        walk(&root.join(d), &mut files);
    }
    let mut programs: Vec<(String, String)> = vec![];
    for p in &files {
        let name = p.strip_prefix(&root).unwrap_or(p).display().to_string();
        match p.extension().and_then(|e| e.to_str()) {
            Some("pir") => {
                let src = fs::read_to_string(p).unwrap_or_else(|e| panic!("cannot read {name}: {e}"));
                programs.push((name, src));
            }
            Some("md") if name.starts_with("docs") || name.starts_with("examples") => {
                let md = fs::read_to_string(p).unwrap_or_else(|e| panic!("cannot read {name}: {e}"));
                for (line, block) in fenced_blocks(&md) {
                    if block.contains("func @") {
                        programs.push((format!("{name}:{line}"), block));
                    }
                }
            }
            _ => {}
        }
    }
    let mut done = 0;
    let mut skipped = vec![];
    let mut failures = vec![];
    let mut ops = BTreeSet::new();
    for (name, src) in &programs {
        match round_trip(name, src, &mut ops) {
            Ok(true) => done += 1,
            Ok(false) => skipped.push(name.as_str()),
            Err(e) => failures.push(format!("=== {name}: {e}")),
        }
    }
    let notable: Vec<&&str> = skipped.iter().filter(|n| !n.contains("/invalid/")).collect();
    eprintln!("round-tripped {done} program(s); skipped {} that do not load (outside */invalid/: {notable:?})", skipped.len());
    if !failures.is_empty() {
        panic!("{} of {} program(s) do not round-trip:\n{}", failures.len(), done + failures.len(), failures.join("\n"));
    }
    assert!(done >= MIN_PROGRAMS, "only {done} program(s) round-tripped (expected at least {MIN_PROGRAMS}); skipped: {skipped:?}");
    // Every op's text form is covered (`scatter {kind=add}` loads as scatter_add).
    let missing: Vec<&Opcode> = Opcode::ALL.iter().filter(|o| !ops.contains(o)).collect();
    assert!(missing.is_empty(), "no round-tripped program uses {missing:?}: add one (tests/text/valid/, tests/text/fmt-v2/ or examples/)");
}
