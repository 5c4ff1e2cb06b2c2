//! Text tests for the `pjc` command line (in the style of LLVM's lit/FileCheck, with
//! whole-output expectations).
//!
//! Every `.pir` file under `tests/text/` (walked recursively) is one test. Its first
//! line says how to run it:
//!
//! ```text
//! // RUN: pjc check %s
//! // RUN: pjc fmt %s
//! // RUN: pjc check %s --entry step
//! // RUN: pjc eval %s --entry f --output %t
//! // RUN: pjc compile %s --emit sharded
//! ```
//!
//! `%s` is the file's path relative to the repository root (pjc runs with the
//! repository root as its current directory, so diagnostics print that path, e.g.
//! `tests/text/invalid/undefined_value.pir:4:12: error: ...`), and `%t` a fresh
//! scratch path for the test (whatever is written there is not compared). The other
//! words are passed to pjc as they are (split at whitespace; no quoting).
//!
//! The expected result is the file next to it with the extension `.expected`:
//!
//! ```text
//! exit: 1
//! --- stdout
//! ...the exact stdout...
//! --- stderr
//! ...the exact stderr...
//! ```
//!
//! (an output that does not end in a newline gets one, followed by the line
//! `<no newline at end>`). Every test runs; the harness then fails listing every
//! failing file with a line diff of expected and got. With `PJC_BLESS=1` it rewrites
//! the `.expected` files instead (review the diff before committing!).
//! `PJC_TEXT_FILTER=sub1,sub2` runs only the tests whose path contains a substring.
//!
//! Besides, for every test whose subcommand is `check` or `fmt` and whose expected
//! exit status is 0, the harness checks that `pjc fmt` is idempotent on it: `pjc fmt`
//! of the `pjc fmt` output is byte-identical to it (and exits 0).
//!
//! The harness fails when it finds no test, when a `.pir` has no RUN line or no
//! `.expected` file, and when an `.expected` file has no `.pir`.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const PJC: &str = env!("CARGO_BIN_EXE_pjc");
const NO_NEWLINE: &str = "<no newline at end>";

fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// Every file under `dir` (recursively), sorted.
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

/// `path` relative to the repository root, with `/` separators.
fn rel(root: &Path, path: &Path) -> String {
    let r = path.strip_prefix(root).unwrap_or(path);
    r.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
}

/// One test's command line, from its `// RUN:` header.
struct RunLine {
    subcommand: String,
    args: Vec<String>,
}

fn run_line(src: &str, rel_path: &str, scratch: &Path) -> Result<RunLine, String> {
    let first = src.lines().next().unwrap_or("");
    let Some(rest) = first.strip_prefix("// RUN:") else {
        return Err(format!("the first line must be '// RUN: pjc SUBCOMMAND %s ...', found {first:?}"));
    };
    let words: Vec<&str> = rest.split_whitespace().collect();
    if words.first() != Some(&"pjc") || words.len() < 2 {
        return Err(format!("the RUN line must start with 'pjc SUBCOMMAND', found {:?}", rest.trim()));
    }
    if !words.contains(&"%s") {
        return Err("the RUN line must name the file as %s".into());
    }
    let subcommand = words[1].to_string();
    let args = words[1..]
        .iter()
        .map(|w| w.replace("%s", rel_path).replace("%t", &scratch.to_string_lossy()))
        .collect();
    Ok(RunLine { subcommand, args })
}

fn pjc(root: &Path, args: &[String]) -> Result<Output, String> {
    Command::new(PJC)
        .args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {PJC}: {e}"))
}

fn section(out: &mut String, text: &str) {
    out.push_str(text);
    if !text.is_empty() && !text.ends_with('\n') {
        out.push('\n');
        out.push_str(NO_NEWLINE);
        out.push('\n');
    }
}

/// The `.expected` text of a run.
fn render(o: &Output) -> String {
    let code = match o.status.code() {
        Some(c) => c.to_string(),
        None => format!("killed ({:?})", o.status),
    };
    let mut s = format!("exit: {code}\n--- stdout\n");
    section(&mut s, &String::from_utf8_lossy(&o.stdout));
    s.push_str("--- stderr\n");
    section(&mut s, &String::from_utf8_lossy(&o.stderr));
    s
}

/// A line diff (longest common subsequence): `-` expected only, `+` got only,
/// ` ` both. Long runs of common lines are elided.
fn diff(expected: &str, got: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = got.lines().collect();
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut lines: Vec<(char, &str)> = vec![];
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            lines.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            lines.push(('-', a[i]));
            i += 1;
        } else {
            lines.push(('+', b[j]));
            j += 1;
        }
    }
    // Keep 2 lines of context around changes.
    let changed: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| l.0 != ' ').map(|(k, _)| k).collect();
    let near = |k: usize| changed.iter().any(|&c| c.abs_diff(k) <= 2);
    let mut out = String::new();
    let mut skipped = false;
    for (k, (c, l)) in lines.iter().enumerate() {
        if near(k) {
            let _ = writeln!(out, "    {c} {l}");
            skipped = false;
        } else if !skipped {
            out.push_str("      ...\n");
            skipped = true;
        }
    }
    if changed.is_empty() {
        out.push_str("    (the texts differ only in line endings or a final newline)\n");
    }
    out
}

/// Expected exit status written in an `.expected` text.
fn expected_exit(text: &str) -> Option<i32> {
    text.lines().next()?.strip_prefix("exit: ")?.trim().parse().ok()
}

/// `pjc fmt` of `rel_path`, then `pjc fmt` of that output: the two must be equal.
fn check_fmt_idempotent(root: &Path, rel_path: &str, scratch: &Path, entry: &[String]) -> Result<(), String> {
    let fmt = |file: String| [vec!["fmt".to_string(), file], entry.to_vec()].concat();
    let first = pjc(root, &fmt(rel_path.into()))?;
    if !first.status.success() {
        return Err(format!("`pjc fmt` failed on a file expected to be valid:\n{}", render(&first)));
    }
    let tmp = scratch.with_extension("fmt.pir");
    fs::write(&tmp, &first.stdout).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    let second = pjc(root, &fmt(tmp.to_string_lossy().into_owned()))?;
    let _ = fs::remove_file(&tmp);
    if !second.status.success() {
        return Err(format!("`pjc fmt` rejects its own output:\n{}", render(&second)));
    }
    if first.stdout != second.stdout {
        return Err(format!(
            "`pjc fmt` is not idempotent (- first fmt, + fmt of that):\n{}",
            diff(&String::from_utf8_lossy(&first.stdout), &String::from_utf8_lossy(&second.stdout))
        ));
    }
    Ok(())
}

/// Runs one test; returns its failures (empty when it passed) and whether it was blessed.
fn run_test(root: &Path, scratch_dir: &Path, pir: &Path, bless: bool) -> (Vec<String>, bool) {
    let rel_path = rel(root, pir);
    let src = match fs::read_to_string(pir) {
        Ok(s) => s,
        Err(e) => return (vec![format!("cannot read: {e}")], false),
    };
    let scratch = scratch_dir.join(rel_path.replace('/', "__"));
    let run = match run_line(&src, &rel_path, &scratch) {
        Ok(r) => r,
        Err(e) => return (vec![e], false),
    };
    let out = match pjc(root, &run.args) {
        Ok(o) => o,
        Err(e) => return (vec![e], false),
    };
    let _ = fs::remove_dir_all(&scratch);
    let _ = fs::remove_file(&scratch);
    let got = render(&out);
    let exp_path = pir.with_extension("expected");
    let expected = fs::read_to_string(&exp_path).ok();
    let mut failures = vec![];
    let mut blessed = false;
    if expected.as_deref() != Some(got.as_str()) {
        if bless {
            match fs::write(&exp_path, &got) {
                Ok(()) => blessed = true,
                Err(e) => failures.push(format!("cannot write {}: {e}", exp_path.display())),
            }
        } else {
            match &expected {
                None => failures.push(format!(
                    "no {} (run with PJC_BLESS=1 to create it); got:\n{}",
                    rel(root, &exp_path),
                    got.lines().map(|l| format!("    {l}\n")).collect::<String>()
                )),
                Some(e) => failures.push(format!("output differs (- expected, + got):\n{}", diff(e, &got))),
            }
        }
    }
    // fmt idempotency for programs expected to be valid.
    let exit = if bless { out.status.code() } else { expected.as_deref().and_then(expected_exit) };
    if matches!(run.subcommand.as_str(), "check" | "fmt") && exit == Some(0) {
        // fmt accepts what check accepts: the same entry function.
        let entry: Vec<String> = match run.args.iter().position(|a| a == "--entry") {
            Some(i) => run.args[i..(i + 2).min(run.args.len())].to_vec(),
            None => vec![],
        };
        if let Err(e) = check_fmt_idempotent(root, &rel_path, &scratch, &entry) {
            failures.push(e);
        }
    }
    (failures, blessed)
}

#[test]
fn text_tests() {
    let root = repo_root();
    let dir = root.join("tests/text");
    let mut files = vec![];
    walk(&dir, &mut files);
    let filter: Vec<String> = std::env::var("PJC_TEXT_FILTER")
        .ok()
        .map(|f| f.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect())
        .unwrap_or_default();
    let selected = |p: &Path| filter.is_empty() || filter.iter().any(|f| rel(&root, p).contains(f.as_str()));
    let tests: Vec<PathBuf> =
        files.iter().filter(|p| p.extension().is_some_and(|e| e == "pir") && selected(p)).cloned().collect();
    assert!(!tests.is_empty(), "no text tests (*.pir) found under {}", dir.display());
    let bless = std::env::var("PJC_BLESS").is_ok_and(|v| v == "1");

    let mut failures: Vec<(String, Vec<String>)> = vec![];
    // Stray expectations: an .expected file whose .pir is gone.
    for p in files.iter().filter(|p| p.extension().is_some_and(|e| e == "expected") && selected(p)) {
        if !p.with_extension("pir").exists() {
            failures.push((rel(&root, p), vec!["an .expected file without its .pir".into()]));
        }
    }

    let scratch_dir = std::env::temp_dir().join(format!("pjc-text-tests-{}", std::process::id()));
    fs::create_dir_all(&scratch_dir).expect("create the scratch directory");
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(PathBuf, Vec<String>, bool)>> = Mutex::new(vec![]);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                let Some(t) = tests.get(k) else { break };
                let (f, b) = run_test(&root, &scratch_dir, t, bless);
                results.lock().unwrap().push((t.clone(), f, b));
            });
        }
    });
    let _ = fs::remove_dir_all(&scratch_dir);
    let mut results = results.into_inner().unwrap();
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let blessed: Vec<String> = results.iter().filter(|r| r.2).map(|r| rel(&root, &r.0)).collect();
    for (p, f, _) in results {
        if !f.is_empty() {
            failures.push((rel(&root, &p), f));
        }
    }
    if !blessed.is_empty() {
        eprintln!("PJC_BLESS: rewrote {} .expected file(s):", blessed.len());
        for b in &blessed {
            eprintln!("  {b}");
        }
    }
    if !failures.is_empty() {
        let mut msg = format!("{} of {} text test(s) failed:\n", failures.len(), tests.len());
        for (p, fs) in &failures {
            for f in fs {
                let _ = write!(msg, "\n=== {p}: {f}");
                if !msg.ends_with('\n') {
                    msg.push('\n');
                }
            }
        }
        msg.push_str("\n(if the new output is right, rerun with PJC_BLESS=1 and review the .expected diffs)\n");
        panic!("{msg}");
    }
    eprintln!("{} text test(s) passed", tests.len());
}
