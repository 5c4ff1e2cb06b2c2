//! The front end on every small breakage of the version 2 programs: a
//! deterministic complement to the `parse_verify` fuzz target (which needs a
//! nightly toolchain and cargo-fuzz), with the same properties.
//!
//! For every program under `tests/text/{fmt,verify,parse}-v2/` and every
//! `examples/*.pir`, and for every token of it: the program with the token
//! dropped, duplicated, cut off there, or replaced by one of a few tokens that
//! start or end the v2 forms (`,`, `(`, `)`, `@b0`, `%x`, `{`, `0`). Each
//! mutant must
//! - parse and verify without panicking, with at least one diagnostic on
//!   failure, every span inside the source, all of them rendered;
//! - when it verifies, print to text that loads to the same IR and prints the
//!   same (the printer's fixed point).

use pjc_front::{lexer::lex, load, parse, print_module, render, verify, Diag};
use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn programs() -> Vec<(String, String)> {
    let root = repo_root();
    let mut out = vec![];
    for dir in ["tests/text/fmt-v2", "tests/text/verify-v2", "tests/text/parse-v2", "examples"] {
        let Ok(rd) = fs::read_dir(root.join(dir)) else { continue };
        let mut paths: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths.into_iter().filter(|p| p.extension().is_some_and(|e| e == "pir")) {
            let src = fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
            out.push((format!("{dir}/{}", p.file_name().unwrap().to_string_lossy()), src));
        }
    }
    out
}

/// The fuzz target's properties on one input; an error says which failed.
fn check(src: &str) -> Result<(), String> {
    let spans = |diags: &[Diag]| -> Result<(), String> {
        if diags.is_empty() {
            return Err("failed without a diagnostic".into());
        }
        for d in diags.iter().filter(|d| !d.span.is_none()) {
            if d.span.start > d.span.end || d.span.end as usize > src.len() {
                return Err(format!("span {:?} outside the source: {}", d.span, d.msg));
            }
        }
        let out = render("m.pir", src, diags);
        if out.matches(": error: ").count() < diags.len() {
            return Err("a diagnostic was not rendered".into());
        }
        Ok(())
    };
    let mut m = match parse(src) {
        Ok(m) => m,
        Err(d) => return spans(&d),
    };
    if let Err(d) = verify(&mut m) {
        return spans(&d);
    }
    let text = print_module(&m);
    let m2 = load(&text).map_err(|d| format!("the printed text does not load:\n{}", render("printed.pir", &text, &d)))?;
    if m2.without_spans() != m.without_spans() {
        return Err(format!("load(print(m)) differs from m; printed:\n{text}"));
    }
    if print_module(&m2) != text {
        return Err("printing is not a fixed point".into());
    }
    Ok(())
}

#[test]
fn every_small_breakage_of_a_v2_program_is_reported_or_round_trips() {
    let progs = programs();
    assert!(progs.len() >= 20, "only {} v2 programs found", progs.len());
    let replacements = [",", "(", ")", "@b0", "%x", "{", "0"];
    let mut runs = 0;
    let mut failures = vec![];
    for (name, src) in &progs {
        let (toks, _, _) = lex(src);
        for t in &toks {
            let (s, e) = (t.span.start as usize, t.span.end as usize);
            let mut mutants = vec![
                format!("{}{}", &src[..s], &src[e..]),
                format!("{}{}", &src[..e], &src[s..]),
                src[..s].to_string(),
            ];
            mutants.extend(replacements.iter().map(|r| format!("{}{r}{}", &src[..s], &src[e..])));
            for mutant in mutants {
                runs += 1;
                let got = catch_unwind(AssertUnwindSafe(|| check(&mutant))).unwrap_or_else(|_| Err("panicked".into()));
                if let Err(why) = got {
                    failures.push(format!("=== {name}, mutated at byte {s}: {why}\n--- input:\n{mutant}"));
                }
            }
        }
    }
    eprintln!("{runs} mutants of {} programs", progs.len());
    assert!(failures.is_empty(), "{} of {runs} mutants fail:\n{}", failures.len(), failures.iter().take(5).cloned().collect::<Vec<_>>().join("\n"));
    assert!(runs > 10_000, "only {runs} mutants");
}
