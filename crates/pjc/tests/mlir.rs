//! `pjc compile --emit mlir` / `--emit mlir-spmd` and `pjc import` on every
//! program of the repository (examples/, benches/, tests/): each program that
//! reaches the stage emits MLIR that MLIR's own `mlir-opt-22 --verify-each`
//! accepts, in both views, and the global view imports back to the program's
//! canonical PIR (`--emit pir`; comments aside: MLIR has none).
//!
//! mlir-opt-22 comes from Debian's mlir-22-tools (scripts/setup.sh installs it;
//! `PJC_MLIR_OPT=PATH` names another). Without it the verification is skipped
//! with a message, except under `CI=true`, where it fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const PJC: &str = env!("CARGO_BIN_EXE_pjc");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}


/// Every program, with the `--entry`/`--mesh` flags of its `// test:` header.
fn programs() -> Vec<(PathBuf, Vec<String>)> {
    let root = repo();
    let mut files = vec![];
    for d in ["examples", "benches", "tests"] {
        common::pir_files(&root.join(d), &mut files);
    }
    files
        .into_iter()
        .map(|f| {
            let src = std::fs::read_to_string(&f).unwrap();
            let header = src.lines().next().unwrap_or("");
            let mut flags = vec![];
            if let Some(rest) = header.strip_prefix("// test:") {
                let words: Vec<&str> = rest.split_whitespace().collect();
                for (i, w) in words.iter().enumerate() {
                    if (*w == "--entry" || *w == "--mesh") && i + 1 < words.len() {
                        flags.push(w.to_string());
                        flags.push(words[i + 1].to_string());
                    }
                }
            }
            (f, flags)
        })
        .collect()
}

fn pjc(args: &[&str]) -> Output {
    Command::new(PJC)
        .current_dir(repo())
        .args(args)
        .output()
        .unwrap()
}

/// mlir-opt-22, or `None` (with a message) where there is none and none is required.
fn mlir_opt() -> Option<PathBuf> {
    let named = std::env::var_os("PJC_MLIR_OPT")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from);
    let found = named.or_else(|| {
        ["mlir-opt-22", "/usr/lib/llvm-22/bin/mlir-opt"]
            .into_iter()
            .find_map(|b| {
                let ok = Command::new(b)
                    .arg("--version")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                ok.then(|| PathBuf::from(b))
            })
    });
    match found {
        Some(p) => Some(p),
        None if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("CI=true but no mlir-opt-22: install Debian's mlir-22-tools (scripts/setup.sh does) or set PJC_MLIR_OPT")
        }
        None => {
            eprintln!("skipped: no mlir-opt-22 here (apt-get install mlir-22-tools, or PJC_MLIR_OPT=PATH); CI requires it");
            None
        }
    }
}

/// `mlir-opt --verify-each` on the text: its error output when it rejects it.
fn verify(opt: &Path, text: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let mut child = Command::new(opt)
        .arg("--verify-each")
        .arg("-o")
        .arg("/dev/null")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text).unwrap();
    let o = child.wait_with_output().unwrap();
    if o.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&o.stderr)
            .chars()
            .take(600)
            .collect())
    }
}

/// PIR text without comments and blank lines (what survives MLIR).
fn without_comments(s: &str) -> String {
    s.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| match l.find(" //") {
            Some(i) => l[..i].trim_end(),
            None => l,
        })
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "pjc-mlir-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    d
}

#[test]
fn every_program_emits_verified_mlir_in_both_views_and_imports_back() {
    let opt = mlir_opt();
    let progs = programs();
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::<String>::new());
    let (global, spmd, imported) = (
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    );
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(8);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((file, flags)) = progs.get(i) else {
                    break;
                };
                let f = file.to_str().unwrap();
                let run = |emit: &str| {
                    let mut a = vec!["compile", f, "--emit", emit];
                    a.extend(flags.iter().map(String::as_str));
                    pjc(&a)
                };
                let fail = |what: String| {
                    failures
                        .lock()
                        .unwrap()
                        .push(format!("{f} {flags:?}: {what}"))
                };
                // The global view, wherever propagation succeeds (a program that
                // fails --emit mlir must fail --emit sharded too).
                let m = run("mlir");
                if !m.status.success() {
                    if run("sharded").status.success() {
                        fail(format!(
                            "--emit mlir failed: {}",
                            String::from_utf8_lossy(&m.stderr)
                        ));
                    }
                } else {
                    {
                        global.fetch_add(1, Ordering::Relaxed);
                        if let Some(opt) = &opt {
                            if let Err(e) = verify(opt, &m.stdout) {
                                fail(format!("mlir-opt rejects --emit mlir: {e}"));
                            }
                        }
                        let path = scratch("g.mlir");
                        std::fs::write(&path, &m.stdout).unwrap();
                        let back = pjc(&["import", path.to_str().unwrap()]);
                        let _ = std::fs::remove_file(&path);
                        let pir = run("pir");
                        if !back.status.success() {
                            fail(format!(
                                "pjc import failed: {}",
                                String::from_utf8_lossy(&back.stderr)
                            ));
                        } else {
                            let (want, got) = (
                                without_comments(&String::from_utf8_lossy(&pir.stdout)),
                                without_comments(&String::from_utf8_lossy(&back.stdout)),
                            );
                            if want != got {
                                let first = want.lines().zip(got.lines()).find(|(a, b)| a != b);
                                fail(format!(
                                    "import differs from --emit pir; first difference: {first:?}"
                                ));
                            } else {
                                imported.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                }
                // The per-device view, wherever partitioning succeeds.
                let m = run("mlir-spmd");
                if !m.status.success() {
                    if run("spmd").status.success() {
                        fail(format!(
                            "--emit mlir-spmd failed: {}",
                            String::from_utf8_lossy(&m.stderr)
                        ));
                    }
                } else {
                    {
                        spmd.fetch_add(1, Ordering::Relaxed);
                        if let Some(opt) = &opt {
                            if let Err(e) = verify(opt, &m.stdout) {
                                fail(format!("mlir-opt rejects --emit mlir-spmd: {e}"));
                            }
                        }
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let (g, s, r) = (
        global.into_inner(),
        spmd.into_inner(),
        imported.into_inner(),
    );
    eprintln!(
        "{} programs: {g} global views, {s} per-device views emitted; {r} imported back",
        progs.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The sweep must have covered the repository's programs, not skipped them.
    assert!(
        g > 300 && s > 300 && r == g,
        "too few programs checked: {g} global, {s} per-device, {r} imported"
    );
}

fn import_text(text: &str) -> Output {
    let path = scratch("in.mlir");
    std::fs::write(&path, text).unwrap();
    let o = pjc(&["import", path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    o
}

fn one_error_line(o: &Output, code: i32, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line expected: {err}");
    assert!(err.starts_with("error: ") && err.contains(needle), "{err}");
}

#[test]
fn import_outside_the_subset_is_one_error_line() {
    let cbrt = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = math.cbrt %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n";
    one_error_line(&import_text(cbrt), 1, "unsupported: math.cbrt");
    // Not MLIR at all: MLIR's own parse error, on one line.
    one_error_line(&import_text("func.func @main( {"), 1, "not valid MLIR");
    // The per-device view is not imported.
    let spmd = pjc(&["compile", "examples/mlp.pir", "--emit", "mlir-spmd"]);
    assert!(spmd.status.success());
    one_error_line(
        &import_text(&String::from_utf8_lossy(&spmd.stdout)),
        1,
        "unsupported: the per-device view",
    );
    one_error_line(&pjc(&["import", "/nonexistent/x.mlir"]), 2, "cannot read");
}

#[test]
fn imported_program_without_pir_names_gets_fresh_ones() {
    // MLIR written by hand (no pir.* attributes) in the subset imports too.
    let text = "func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = arith.addf %a, %b : tensor<4xf32>\n  %1 = math.tanh %0 : tensor<4xf32>\n  return %1 : tensor<4xf32>\n}\n";
    let o = import_text(text);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let pir = String::from_utf8_lossy(&o.stdout);
    assert!(
        pir.contains("func @main(%arg0: f32[4], %arg1: f32[4]) -> (f32[4])"),
        "{pir}"
    );
    assert!(
        pir.contains("= add %arg0, %arg1 : f32[4]") && pir.contains("= tanh %v1 : f32[4]"),
        "{pir}"
    );
}
