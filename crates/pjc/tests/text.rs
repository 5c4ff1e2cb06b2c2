//! The filetest harness: every stage of the `pjc` command line tested from files
//! (in the style of Cranelift's filetests and LLVM's lit/FileCheck).
//!
//! Every `.pir` file under `tests/text/` (walked recursively) is one test. Its first
//! line names the stage it runs and any extra flags:
//!
//! ```text
//! // test: check                         pjc check FILE
//! // test: fmt --entry step              pjc fmt FILE --entry step
//! // test: spmd --mesh data=4,model=2    pjc compile FILE --emit spmd --mesh data=4,model=2
//! // test: ptx --gpu-arch sm_80          pjc compile FILE --emit ptx --gpu-arch sm_80
//! // test: error                         pjc check FILE, which must fail
//! // test: error spmd                    pjc compile FILE --emit spmd, which must fail
//! ```
//!
//! The stages and their command lines are the table [`STAGES`]: `check`, `fmt`,
//! `eval`, `pir`, `sharded`, `spmd`, `plan`, `llvm`, `llvm-unopt`, `ptx`, `explain`,
//! `mlir`, `mlir-spmd`.
//! The flags are passed to pjc as they are (split at whitespace, no quoting; `%t`
//! is a scratch path for the test). pjc runs in the repository root, so
//! diagnostics print the file's path from there
//! (`tests/text/invalid/undefined_value.pir:4:12: error: ...`).
//!
//! A test of a stage must exit 0; `// test: error [STAGE]` (the stage defaults to
//! `check`) must exit non-zero: a program the stage rejects, with its diagnostic.
//! Any test fails when pjc panics or is killed.
//!
//! The output of a run is rendered as
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
//! `<no newline at end>`; an `eval` test adds `--- results` with every result of
//! its `--output` file, in the file's order, one line each:
//! `NAME: DTYPE[SHAPE] = [v0, v1, ...]`, row-major, each value in its dtype's
//! shortest form).
//! It is checked in one of two ways:
//!
//! - **Precise output**: the file next to the test with the extension `.expected`
//!   holds the rendered output exactly. `PJC_BLESS=1` rewrites the `.expected`
//!   files instead of comparing (review the diff before committing!).
//! - **Check lines**: FileCheck-style comments in the `.pir` file, matched in
//!   order against the lines of the rendered output (exit line and stderr
//!   included), each pattern a plain substring (trimmed; no regular expressions):
//!   - `// CHECK: PAT` — a line at or after the current position contains PAT; the
//!     position moves to the line after it;
//!   - `// CHECK-NEXT: PAT` — the line at the current position (the one right after
//!     the previous match) contains PAT;
//!   - `// CHECK-NOT: PAT` — no line between the previous match and the next
//!     `CHECK`/`CHECK-NEXT` match (or the end) contains PAT.
//!
//!   Output lines that are the test's own comments echoed back (lines that, trimmed,
//!   start with `// CHECK` or `// test:`, as in `fmt` and `sharded` outputs) are
//!   not matched. A test with check lines has no `.expected` file and is never
//!   blessed.
//!
//! Every test runs; the harness then fails listing every failing file with a
//! line diff of expected and got (or the check that failed and the output).
//! `PJC_TEXT_FILTER=sub1,sub2` runs only the tests whose path contains a substring.
//!
//! Besides, on a successful run:
//! - `check`, `fmt`: `pjc fmt` is idempotent on the file (`pjc fmt` of the `pjc fmt`
//!   output is byte-identical to it);
//! - `pir`, `sharded`, `spmd`: the output is valid PIR in canonical form (`pjc fmt`
//!   of it is byte-identical to it);
//! - `ptx`: ptxas assembles the output (for its `--gpu-arch`). ptxas comes from
//!   `PJC_PTXAS` or the repository's `.venv` (`bash scripts/ptxas.sh` installs it,
//!   with the libdevice that math functions need); without it `ptx` tests fail,
//!   they never skip.
//!
//! The harness fails when it finds no test, when a `.pir` has no `// test:` header,
//! when a test has neither check lines nor an `.expected` file (or both), and when
//! an `.expected` file has no `.pir`.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const PJC: &str = env!("CARGO_BIN_EXE_pjc");
const NO_NEWLINE: &str = "<no newline at end>";

/// What the harness checks besides the output, when a stage's run succeeds.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Extra {
    None,
    /// `pjc fmt` of the file is a fixed point of `pjc fmt`.
    FmtIdempotent,
    /// The output is canonical PIR: a fixed point of `pjc fmt`.
    CanonicalPir,
    /// The `--output` file's results are rendered into the output.
    Results,
    /// ptxas assembles the output.
    Assembles,
}

/// A stage: its name in `// test:` and pjc's arguments (`%s` the file, `%t` the
/// test's scratch path); the header's flags follow.
#[derive(Debug)]
struct Stage {
    name: &'static str,
    args: &'static [&'static str],
    extra: Extra,
}

/// Every stage a test can name: the one table from header to command line.
const STAGES: &[Stage] = &[
    Stage { name: "check", args: &["check", "%s"], extra: Extra::FmtIdempotent },
    Stage { name: "fmt", args: &["fmt", "%s"], extra: Extra::FmtIdempotent },
    Stage { name: "eval", args: &["eval", "%s", "--output", "%t.safetensors"], extra: Extra::Results },
    Stage { name: "pir", args: &["compile", "%s", "--emit", "pir"], extra: Extra::CanonicalPir },
    Stage { name: "sharded", args: &["compile", "%s", "--emit", "sharded"], extra: Extra::CanonicalPir },
    Stage { name: "spmd", args: &["compile", "%s", "--emit", "spmd"], extra: Extra::CanonicalPir },
    Stage { name: "plan", args: &["compile", "%s", "--emit", "plan"], extra: Extra::None },
    Stage { name: "llvm", args: &["compile", "%s", "--emit", "llvm"], extra: Extra::None },
    Stage { name: "llvm-unopt", args: &["compile", "%s", "--emit", "llvm-unopt"], extra: Extra::None },
    Stage { name: "ptx", args: &["compile", "%s", "--emit", "ptx"], extra: Extra::Assembles },
    Stage { name: "explain", args: &["explain", "%s"], extra: Extra::None },
    Stage { name: "mlir", args: &["compile", "%s", "--emit", "mlir"], extra: Extra::None },
    Stage { name: "mlir-spmd", args: &["compile", "%s", "--emit", "mlir-spmd"], extra: Extra::None },
];

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

// ---- the header ------------------------------------------------------------------

/// A test's `// test:` header.
#[derive(Debug)]
struct Header {
    stage: &'static Stage,
    /// `// test: error ...`: the run must fail.
    error: bool,
    /// The flags after the stage, as written.
    flags: Vec<String>,
}

fn stage_names() -> String {
    STAGES.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
}

fn header(src: &str) -> Result<Header, String> {
    let first = src.lines().next().unwrap_or("");
    if first.starts_with("// RUN:") {
        return Err(format!(
            "'// RUN: pjc ...' headers are gone: write '// test: STAGE [FLAGS]' (stages: {}), found {first:?}",
            stage_names()
        ));
    }
    let Some(rest) = first.strip_prefix("// test:") else {
        return Err(format!("the first line must be '// test: STAGE [FLAGS]' (stages: {}), found {first:?}", stage_names()));
    };
    let mut words: Vec<&str> = rest.split_whitespace().collect();
    let error = words.first() == Some(&"error");
    if error {
        words.remove(0);
        // `// test: error` and `// test: error --entry f` test `check`.
        if words.first().is_none_or(|w| w.starts_with('-')) {
            words.insert(0, "check");
        }
    }
    let Some(&name) = words.first() else {
        return Err(format!("'// test:' names no stage (stages: {}, or error [STAGE])", stage_names()));
    };
    let Some(stage) = STAGES.iter().find(|s| s.name == name) else {
        return Err(format!("unknown stage '{name}' in the header (stages: {}, or error [STAGE])", stage_names()));
    };
    Ok(Header { stage, error, flags: words[1..].iter().map(|w| w.to_string()).collect() })
}

// ---- check lines -----------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Debug)]
enum Directive {
    Check,
    Next,
    Not,
}

impl Directive {
    fn name(self) -> &'static str {
        match self {
            Directive::Check => "CHECK",
            Directive::Next => "CHECK-NEXT",
            Directive::Not => "CHECK-NOT",
        }
    }
}

/// One check line: its directive, pattern and line in the test file (1-based).
#[derive(Debug)]
struct CheckLine {
    directive: Directive,
    pattern: String,
    line: usize,
}

/// The check lines of a test file, in order.
fn check_lines(src: &str) -> Result<Vec<CheckLine>, String> {
    let mut out = vec![];
    for (i, l) in src.lines().enumerate() {
        let Some(rest) = l.trim_start().strip_prefix("// CHECK") else { continue };
        let (directive, pattern) = if let Some(p) = rest.strip_prefix(':') {
            (Directive::Check, p)
        } else if let Some(p) = rest.strip_prefix("-NEXT:") {
            (Directive::Next, p)
        } else if let Some(p) = rest.strip_prefix("-NOT:") {
            (Directive::Not, p)
        } else {
            return Err(format!("line {}: unknown directive {:?} (CHECK:, CHECK-NEXT:, CHECK-NOT:)", i + 1, l.trim()));
        };
        let pattern = pattern.trim().to_string();
        if pattern.is_empty() {
            return Err(format!("line {}: {} with an empty pattern", i + 1, directive.name()));
        }
        if directive == Directive::Next && out.iter().all(|c: &CheckLine| c.directive == Directive::Not) {
            return Err(format!("line {}: CHECK-NEXT needs a CHECK or CHECK-NEXT before it", i + 1));
        }
        out.push(CheckLine { directive, pattern, line: i + 1 });
    }
    Ok(out)
}

/// Whether an output line is one of the test's own directives, echoed back.
fn echoed_directive(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("// CHECK") || t.starts_with("// test:")
}

/// Matches `checks` against `output` (rules in the module docs); the error says
/// which check failed, and shows the output with line numbers.
fn filecheck(checks: &[CheckLine], output: &str) -> Result<(), String> {
    let lines: Vec<(usize, &str)> = output.lines().enumerate().filter(|(_, l)| !echoed_directive(l)).collect();
    let mut pos = 0; // index into `lines` where the next positive match may start
    let mut nots: Vec<&CheckLine> = vec![];
    let fail = |c: &CheckLine, what: String| {
        let mut msg = format!("line {}: {}: {:?} {what}; the output:\n", c.line, c.directive.name(), c.pattern);
        for (n, l) in output.lines().enumerate() {
            let _ = writeln!(msg, "    {:>4} {l}", n + 1);
        }
        Err(msg)
    };
    // The CHECK-NOTs collected so far must not occur in lines[from..to].
    let nots_absent = |nots: &[&CheckLine], from: usize, to: usize| -> Result<(), String> {
        for c in nots {
            if let Some((n, _)) = lines[from..to].iter().find(|(_, l)| l.contains(c.pattern.as_str())) {
                return fail(c, format!("occurs on output line {}", n + 1));
            }
        }
        Ok(())
    };
    let mut matched_any = false;
    for c in checks {
        match c.directive {
            Directive::Not => nots.push(c),
            Directive::Check => {
                let Some(k) = (pos..lines.len()).find(|&k| lines[k].1.contains(c.pattern.as_str())) else {
                    let after = if matched_any { format!("after output line {}", lines[pos - 1].0 + 1) } else { "anywhere".into() };
                    return fail(c, format!("not found {after}"));
                };
                nots_absent(&nots, pos, k)?;
                nots.clear();
                pos = k + 1;
                matched_any = true;
            }
            Directive::Next => {
                let prev = lines[pos - 1].0 + 1;
                match lines.get(pos) {
                    Some((_, l)) if l.contains(c.pattern.as_str()) => {}
                    Some((n, l)) => return fail(c, format!("not on output line {} (after line {prev}), which is {l:?}", n + 1)),
                    None => return fail(c, format!("not found: the output ends after line {prev}")),
                }
                nots_absent(&nots, pos, pos)?;
                nots.clear();
                pos += 1;
            }
        }
    }
    nots_absent(&nots, pos, lines.len())
}

// ---- running pjc -----------------------------------------------------------------

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

/// The rendered text of a run (what `.expected` files hold and check lines match).
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

/// Each element in its own dtype's shortest form.
fn elements(b: &pjc_tensor::Buf) -> Vec<String> {
    use pjc_tensor::Buf;
    fn each<T: std::fmt::Debug>(v: &[T]) -> Vec<String> {
        v.iter().map(|x| format!("{x:?}")).collect()
    }
    match b {
        Buf::F64(v) => each(v),
        Buf::F32(v) => each(v),
        Buf::F16(v) => v.iter().map(|x| format!("{:?}", x.to_f32())).collect(),
        Buf::BF16(v) => v.iter().map(|x| format!("{:?}", x.to_f32())).collect(),
        Buf::I64(v) => each(v),
        Buf::I32(v) => each(v),
        Buf::I16(v) => each(v),
        Buf::I8(v) => each(v),
        Buf::U64(v) => each(v),
        Buf::U32(v) => each(v),
        Buf::U16(v) => each(v),
        Buf::U8(v) => each(v),
        Buf::Pred(v) => each(v),
    }
}

/// The `--- results` section of an `eval` test: every tensor of its output file.
fn results(path: &Path) -> Result<String, String> {
    let ts = pjc_tensor::read_safetensors(path).map_err(|e| format!("cannot read the eval results: {e}"))?;
    let mut s = "--- results\n".to_string();
    for (name, t) in ts {
        let shape = t.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",");
        let _ = writeln!(s, "{name}: {}[{shape}] = [{}]", t.dtype(), elements(&t.data).join(", "));
    }
    Ok(s)
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

/// The value of `--NAME VALUE` among `flags`.
fn flag<'a>(flags: &'a [String], name: &str) -> Option<&'a str> {
    flags.iter().position(|a| a == name).and_then(|i| flags.get(i + 1)).map(String::as_str)
}

/// `pjc fmt FILE [--entry E]`, which must exit 0.
fn fmt(root: &Path, file: &str, entry: Option<&str>) -> Result<Vec<u8>, String> {
    let mut args = vec!["fmt".to_string(), file.to_string()];
    if let Some(e) = entry {
        args.extend(["--entry".to_string(), e.to_string()]);
    }
    let o = pjc(root, &args)?;
    if !o.status.success() {
        return Err(render(&o));
    }
    Ok(o.stdout)
}

/// `pjc fmt` of the test file, then `pjc fmt` of that output: the two must be equal.
fn check_fmt_idempotent(root: &Path, rel_path: &str, scratch: &Path, entry: Option<&str>) -> Result<(), String> {
    let first = fmt(root, rel_path, entry).map_err(|e| format!("`pjc fmt` failed on a file expected to be valid:\n{e}"))?;
    let tmp = scratch.with_extension("fmt.pir");
    fs::write(&tmp, &first).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    let second = fmt(root, &tmp.to_string_lossy(), entry).map_err(|e| format!("`pjc fmt` rejects its own output:\n{e}"));
    let _ = fs::remove_file(&tmp);
    let second = second?;
    if first != second {
        return Err(format!(
            "`pjc fmt` is not idempotent (- first fmt, + fmt of that):\n{}",
            diff(&String::from_utf8_lossy(&first), &String::from_utf8_lossy(&second))
        ));
    }
    Ok(())
}

/// The PIR a stage printed is valid and canonical: `pjc fmt` of it is itself.
fn check_canonical(root: &Path, stage: &str, out: &[u8], scratch: &Path, entry: Option<&str>) -> Result<(), String> {
    let tmp = scratch.with_extension("out.pir");
    fs::write(&tmp, out).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    let again = fmt(root, &tmp.to_string_lossy(), entry);
    let _ = fs::remove_file(&tmp);
    let again = again.map_err(|e| format!("the {stage} output is not valid PIR (`pjc fmt` of it):\n{e}"))?;
    if again != out {
        return Err(format!(
            "the {stage} output is not in canonical form (- output, + `pjc fmt` of it):\n{}",
            diff(&String::from_utf8_lossy(out), &String::from_utf8_lossy(&again))
        ));
    }
    Ok(())
}

/// ptxas: `PJC_PTXAS`, else the repository's `.venv` (scripts/ptxas.sh), else PATH.
fn ptxas(root: &Path) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("PJC_PTXAS") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            return Err(format!("PJC_PTXAS={} is not a file: run `bash scripts/ptxas.sh` (it installs ptxas into .venv and prints its path)", p.display()));
        }
        return Ok(p);
    }
    for e in fs::read_dir(root.join(".venv/lib")).into_iter().flatten().flatten() {
        let p = e.path().join("site-packages/nvidia/cuda_nvcc/bin/ptxas");
        if p.is_file() {
            return Ok(p);
        }
    }
    if Command::new("ptxas").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Ok(PathBuf::from("ptxas"));
    }
    Err("ptxas not found: run `bash scripts/ptxas.sh` (it installs ptxas and libdevice into .venv) or set PJC_PTXAS".into())
}

/// ptxas assembles `ptx` for `arch`.
fn check_assembles(root: &Path, ptx: &[u8], scratch: &Path, arch: &str) -> Result<(), String> {
    let ptxas = ptxas(root)?;
    let (src, bin) = (scratch.with_extension("ptx"), scratch.with_extension("cubin"));
    fs::write(&src, ptx).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let o = Command::new(&ptxas)
        .arg(format!("-arch={arch}"))
        .arg(&src)
        .arg("-o")
        .arg(&bin)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", ptxas.display()));
    let _ = fs::remove_file(&src);
    let _ = fs::remove_file(&bin);
    let o = o?;
    if !o.status.success() {
        return Err(format!("ptxas -arch={arch} rejects the output:\n{}", String::from_utf8_lossy(&o.stderr)));
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
    let (h, checks) = match (header(&src), check_lines(&src)) {
        (Ok(h), Ok(c)) => (h, c),
        (Err(e), _) | (_, Err(e)) => return (vec![e], false),
    };
    let exp_path = pir.with_extension("expected");
    let expected = fs::read_to_string(&exp_path).ok();
    if !checks.is_empty() && expected.is_some() {
        return (vec![format!("has both CHECK lines and {}: keep one", rel(root, &exp_path))], false);
    }
    let scratch = scratch_dir.join(rel_path.replace('/', "__"));
    let scratch_s = scratch.to_string_lossy().into_owned();
    // Where an `eval` stage's `--output %t.safetensors` goes.
    let results_file = PathBuf::from(format!("{scratch_s}.safetensors"));
    let sub = |w: &str| w.replace("%s", &rel_path).replace("%t", &scratch_s);
    let args: Vec<String> = h.stage.args.iter().map(|w| sub(w)).chain(h.flags.iter().map(|w| sub(w))).collect();
    let out = match pjc(root, &args) {
        Ok(o) => o,
        Err(e) => return (vec![e], false),
    };
    let mut got = render(&out);
    let mut failures = vec![];
    let entry = flag(&h.flags, "--entry");
    let code = out.status.code();
    match code {
        None => failures.push(format!("pjc was killed ({:?})", out.status)),
        Some(101) => failures.push("pjc panicked (exit 101)".into()),
        Some(0) if h.error => failures.push("exited 0, but the test says '// test: error': it must fail".into()),
        Some(0) => {
            let extra = match h.stage.extra {
                Extra::None => Ok(()),
                Extra::FmtIdempotent => check_fmt_idempotent(root, &rel_path, &scratch, entry),
                Extra::CanonicalPir => check_canonical(root, h.stage.name, &out.stdout, &scratch, entry),
                Extra::Results => results(&results_file).map(|r| got.push_str(&r)),
                Extra::Assembles => check_assembles(root, &out.stdout, &scratch, flag(&h.flags, "--gpu-arch").unwrap_or("sm_90")),
            };
            failures.extend(extra.err());
        }
        Some(c) if !h.error => failures.push(format!(
            "exited {c}; a test expected to fail says '// test: error{}'; the output:\n{}",
            if h.stage.name == "check" { String::new() } else { format!(" {}", h.stage.name) },
            got.lines().map(|l| format!("    {l}\n")).collect::<String>()
        )),
        Some(_) => {}
    }
    for p in [&scratch, &results_file] {
        let _ = fs::remove_dir_all(p);
        let _ = fs::remove_file(p);
    }
    let mut blessed = false;
    if !checks.is_empty() {
        if let Err(e) = filecheck(&checks, &got) {
            failures.push(e);
        }
    } else if expected.as_deref() != Some(got.as_str()) {
        if bless && !failures.is_empty() {
            // A run that contradicts its header is not blessed; the failure says why.
        } else if bless {
            match fs::write(&exp_path, &got) {
                Ok(()) => blessed = true,
                Err(e) => failures.push(format!("cannot write {}: {e}", exp_path.display())),
            }
        } else {
            match &expected {
                None => failures.push(format!(
                    "no {} and no CHECK lines (run with PJC_BLESS=1 to create it); got:\n{}",
                    rel(root, &exp_path),
                    got.lines().map(|l| format!("    {l}\n")).collect::<String>()
                )),
                Some(e) => failures.push(format!("output differs (- expected, + got):\n{}", diff(e, &got))),
            }
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

/// The check-line matcher on its own (the harness above runs it on pjc's output).
#[cfg(test)]
mod filecheck_rules {
    use super::*;

    fn run(checks: &str, output: &str) -> Result<(), String> {
        filecheck(&check_lines(checks)?, output)
    }

    const OUT: &str = "exit: 0\n--- stdout\na1\nb2\nc3\nb4\n--- stderr\n";

    #[test]
    fn check_matches_in_order() {
        assert!(run("// CHECK: a1\n// CHECK: c3\n// CHECK: b4\n", OUT).is_ok());
        assert!(run("// CHECK: c3\n// CHECK: a1\n", OUT).unwrap_err().contains("not found after output line 5"));
        assert!(run("// CHECK: zz\n", OUT).unwrap_err().contains("not found anywhere"));
        // A line matches one CHECK: b2 then b4.
        assert!(run("// CHECK: b\n// CHECK: b\n// CHECK-NOT: b\n", OUT).is_ok());
        assert!(run("// CHECK: b\n// CHECK: b\n// CHECK: b\n", OUT).is_err());
    }

    #[test]
    fn check_next_is_the_following_line() {
        assert!(run("// CHECK: a1\n// CHECK-NEXT: b2\n// CHECK-NEXT: c3\n", OUT).is_ok());
        let e = run("// CHECK: a1\n// CHECK-NEXT: c3\n", OUT).unwrap_err();
        assert!(e.contains("line 2: CHECK-NEXT: \"c3\" not on output line 4 (after line 3), which is \"b2\""), "{e}");
        assert!(run("// CHECK: stderr\n// CHECK-NEXT: x\n", OUT).unwrap_err().contains("the output ends"));
        assert!(check_lines("// CHECK-NEXT: a\n").is_err());
    }

    #[test]
    fn check_not_covers_the_span_between_matches() {
        assert!(run("// CHECK: a1\n// CHECK-NOT: c3\n// CHECK: b2\n", OUT).is_ok());
        let e = run("// CHECK: a1\n// CHECK-NOT: b2\n// CHECK: c3\n", OUT).unwrap_err();
        assert!(e.contains("CHECK-NOT: \"b2\" occurs on output line 4"), "{e}");
        // A trailing CHECK-NOT covers the rest; a leading one the start.
        assert!(run("// CHECK: c3\n// CHECK-NOT: b\n", OUT).is_err());
        assert!(run("// CHECK-NOT: c3\n// CHECK: b2\n", OUT).is_ok());
        assert!(run("// CHECK-NOT: exit\n// CHECK: b2\n", OUT).is_err());
    }

    #[test]
    fn echoed_directives_are_not_matched() {
        let out = "exit: 0\n--- stdout\n// test: fmt\n// CHECK: add\n%x = mul\n";
        assert!(run("// CHECK: add\n", out).is_err());
        assert!(run("// CHECK: exit\n// CHECK-NEXT: stdout\n// CHECK-NEXT: mul\n", out).is_ok());
    }

    #[test]
    fn malformed_directives_are_errors() {
        assert!(check_lines("// CHECK-SAME: x\n").unwrap_err().contains("unknown directive"));
        assert!(check_lines("// CHECK:   \n").unwrap_err().contains("empty pattern"));
        assert_eq!(check_lines("  // CHECK:  two words  \n").unwrap()[0].pattern, "two words");
    }

    #[test]
    fn headers() {
        let h = header("// test: error\n").unwrap();
        assert!(h.error && h.stage.name == "check" && h.flags.is_empty());
        let h = header("// test: error --entry f\n").unwrap();
        assert!(h.error && h.stage.name == "check" && h.flags == ["--entry", "f"]);
        let h = header("// test: error spmd --mesh a=2\n").unwrap();
        assert!(h.error && h.stage.name == "spmd" && h.flags == ["--mesh", "a=2"]);
        let h = header("// test: ptx --gpu-arch sm_80\n").unwrap();
        assert!(!h.error && h.stage.name == "ptx" && h.flags == ["--gpu-arch", "sm_80"]);
        assert!(header("// test: nope\n").unwrap_err().contains("unknown stage 'nope'"));
        assert!(header("// RUN: pjc check %s\n").unwrap_err().contains("headers are gone"));
        assert!(header("func @main() {\n").is_err());
        assert!(header("// test:\n").is_err());
    }
}
