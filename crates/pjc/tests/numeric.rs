//! Numeric reference tests for the reference interpreter (`pjc eval`).
//!
//! Every directory under `tests/numeric/cases/` holds a PIR program, its inputs and
//! the expected outputs, all computed independently with numpy by
//! `tests/numeric/gen.py` (see `tests/numeric/README.md`). This test runs
//! `pjc eval CASE/prog.pir --input NAME=CASE/in_NAME.npy ... --output DIR` for every
//! case and compares each `DIR/RESULT.npy` with `CASE/out_RESULT.npy`:
//!
//! - same dtype (as stored in the .npy: a bf16 result is written as f32) and shape;
//! - integers and pred exactly;
//! - floats with spec section 11's rule `|got - exp| <= rtol*max|exp| + rtol*|exp|`
//!   (`max|exp|` over the finite expected values of that result), NaN only where NaN
//!   is expected, infinities exactly, and a zero where a zero is expected must have
//!   the expected sign unless the case's tol.txt says `anyzero`;
//! - rtol defaults by .npy dtype (f64 1e-12, f32 1e-5, f16 1e-2); `tol.txt` may
//!   override it for the whole case (a bare number) or per result (`NAME=RTOL`).
//!
//! `numeric_cases_as_executables` runs the same cases through `pjc compile -o`
//! and the executable (under `mpirun -np N` for programs on an N-device mesh),
//! except those whose directory holds an `eval_only` file (ops `pjc compile`
//! does not plan yet; gen.py writes it).
//!
//! All cases run (in parallel); the test fails at the end listing every failing
//! case with its first mismatch. `PJC_NUMERIC_FILTER=sub1,sub2` runs only the cases
//! whose name contains one of the substrings.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pjc_tensor::compare::{close, Tolerance};
use pjc_tensor::read_npy;

/// Wall-clock limit for one `pjc eval`.
const CASE_TIMEOUT: Duration = Duration::from_secs(300);

fn cases_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/numeric/cases")
}

/// Tolerance settings of one case (tol.txt).
#[derive(Default, Debug)]
struct Tol {
    /// Overrides the dtype default for every float result.
    case_rtol: Option<f64>,
    /// Overrides for single results.
    per_result: HashMap<String, f64>,
    /// Do not check the sign of expected zeros.
    anyzero: bool,
}

fn parse_tol(path: &Path) -> Result<Tol, String> {
    let mut tol = Tol::default();
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(tol),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    for tok in text.split_whitespace() {
        if tok == "anyzero" {
            tol.anyzero = true;
        } else if let Some((name, v)) = tok.split_once('=') {
            let v: f64 = v
                .parse()
                .map_err(|_| format!("{}: bad rtol in `{tok}`", path.display()))?;
            tol.per_result.insert(name.to_string(), v);
        } else {
            let v: f64 = tok
                .parse()
                .map_err(|_| format!("{}: bad token `{tok}`", path.display()))?;
            tol.case_rtol = Some(v);
        }
    }
    Ok(tol)
}

fn default_rtol(dtype: &str) -> f64 {
    match dtype {
        "f64" => 1e-12,
        "f16" | "bf16" => 1e-2,
        _ => 1e-5,
    }
}

/// Names `NAME` of the files `PREFIX NAME .npy` in `dir`, sorted.
fn npy_names(dir: &Path, prefix: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let rd = fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in rd {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let file = entry.file_name().to_string_lossy().into_owned();
        if let Some(rest) = file.strip_prefix(prefix) {
            if let Some(name) = rest.strip_suffix(".npy") {
                names.push(name.to_string());
            }
        }
    }
    names.sort();
    Ok(names)
}

/// Tail of a text, at most `n` lines.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    lines[start..].join("\n")
}

/// How a case runs.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// `pjc eval` (the reference interpreter).
    Eval,
    /// `pjc compile -o prog.bin`, then `./prog.bin` (the compiled kernels).
    Executable,
}

/// Runs one case; returns the list of problems (empty = pass).
fn run_case(pjc: &Path, case_dir: &Path, work: &Path, mode: Mode) -> Vec<String> {
    let mut problems = Vec::new();
    let prog = case_dir.join("prog.pir");
    if !prog.is_file() {
        return vec![format!("fixture has no prog.pir")];
    }
    let inputs = match npy_names(case_dir, "in_") {
        Ok(v) => v,
        Err(e) => return vec![e],
    };
    let outputs = match npy_names(case_dir, "out_") {
        Ok(v) => v,
        Err(e) => return vec![e],
    };
    if outputs.is_empty() {
        return vec!["fixture has no out_*.npy".to_string()];
    }
    let tol = match parse_tol(&case_dir.join("tol.txt")) {
        Ok(t) => t,
        Err(e) => return vec![e],
    };

    let _ = fs::remove_dir_all(work);
    let out_dir = work.join("out");
    if let Err(e) = fs::create_dir_all(&out_dir) {
        return vec![format!("cannot create {}: {e}", out_dir.display())];
    }
    let (stdout_path, stderr_path) = (work.join("stdout.txt"), work.join("stderr.txt"));
    let (so, se) = match (
        fs::File::create(&stdout_path),
        fs::File::create(&stderr_path),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        _ => return vec![format!("cannot create log files in {}", work.display())],
    };
    let mut cmd = match mode {
        Mode::Eval => {
            let mut c = Command::new(pjc);
            c.arg("eval").arg(&prog);
            c
        }
        Mode::Executable => {
            let exe = work.join("prog.bin");
            let o = Command::new(pjc).arg("compile").arg(&prog).arg("-o").arg(&exe).output();
            match o {
                Ok(o) if o.status.success() => {}
                Ok(o) => return vec![format!("pjc compile -o failed ({}); stderr:\n{}", o.status, tail(&String::from_utf8_lossy(&o.stderr), 15))],
                Err(e) => return vec![format!("cannot start {}: {e}", pjc.display())],
            }
            // Programs on a mesh run under mpirun, one process per device.
            let devices = fs::read_to_string(&prog)
                .ok()
                .and_then(|src| pjc_front::load(&src).ok())
                .map_or(1, |m| m.mesh_or_single().device_count());
            let mut c = if devices > 1 {
                let mut c = Command::new("mpirun");
                c.args(["--oversubscribe", "-np", &devices.to_string()]).arg(exe);
                c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                    .env("OMPI_MCA_btl", "self,vader")
                    .env("OMPI_MCA_pml", "ob1")
                    .env("OMPI_MCA_orte_tmpdir_base", common::ompi_tmpdir());
                c
            } else {
                Command::new(exe)
            };
            c.args(["--device", "cpu"]).env("PJC_THREADS", "1");
            c
        }
    };
    for name in &inputs {
        let mut arg = std::ffi::OsString::from(format!("{name}="));
        arg.push(case_dir.join(format!("in_{name}.npy")));
        cmd.arg("--input").arg(arg);
    }
    cmd.arg("--output").arg(&out_dir);
    cmd.stdin(Stdio::null()).stdout(so).stderr(se);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return vec![format!("cannot start {}: {e}", pjc.display())],
    };
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() > CASE_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return vec![format!("waiting for pjc: {e}")],
        }
    };
    let stderr = fs::read_to_string(&stderr_path).unwrap_or_default();
    match status {
        None => {
            return vec![format!("the run did not finish within {CASE_TIMEOUT:?}")];
        }
        Some(s) if !s.success() => {
            return vec![format!(
                "the run failed ({s}); stderr:\n{}",
                tail(&stderr, 15)
            )];
        }
        _ => {}
    }

    // exactly the expected result files
    let produced: BTreeSet<String> = match fs::read_dir(&out_dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(e) => return vec![format!("cannot list {}: {e}", out_dir.display())],
    };
    let wanted: BTreeSet<String> = outputs.iter().map(|n| format!("{n}.npy")).collect();
    for extra in produced.difference(&wanted) {
        problems.push(format!("unexpected output file {extra}"));
    }

    for name in &outputs {
        let exp = match read_npy(&case_dir.join(format!("out_{name}.npy"))) {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!(
                    "result `{name}`: cannot read the expected value: {e}"
                ));
                continue;
            }
        };
        let got_path = out_dir.join(format!("{name}.npy"));
        if !got_path.is_file() {
            problems.push(format!(
                "result `{name}`: pjc wrote no {}",
                got_path.display()
            ));
            continue;
        }
        let got = match read_npy(&got_path) {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!(
                    "result `{name}`: cannot read {}: {e}",
                    got_path.display()
                ));
                continue;
            }
        };
        let dtype = exp.dtype().to_string();
        let rtol = tol
            .per_result
            .get(name)
            .copied()
            .or(tol.case_rtol)
            .unwrap_or_else(|| default_rtol(&dtype));
        // Spec section 11's rule; zeros keep their sign unless the case says `anyzero`.
        let rule = if tol.anyzero { Tolerance::reassoc(rtol) } else { Tolerance::reassoc(rtol).with_signed_zeros() };
        if let Err(msg) = close(&exp, &got, rule) {
            problems.push(format!("result `{name}`: {msg}"));
        }
    }
    problems
}

fn case_dirs() -> Vec<PathBuf> {
    let root = cases_root();
    let mut dirs: Vec<PathBuf> = match fs::read_dir(&root) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect(),
        Err(e) => panic!("cannot list the numeric cases in {}: {e}", root.display()),
    };
    dirs.sort();
    if let Ok(filter) = std::env::var("PJC_NUMERIC_FILTER") {
        let subs: Vec<&str> = filter
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if !subs.is_empty() {
            dirs.retain(|d| {
                let n = d.file_name().unwrap().to_string_lossy();
                subs.iter().any(|s| n.contains(s))
            });
        }
    }
    dirs
}

#[test]
fn numeric_reference_cases() {
    run_all(Mode::Eval);
}

/// The same cases compiled into executables: the generated x86-64 kernels,
/// GEMM and library steps of the CPU runtime against numpy's values.
#[test]
fn numeric_cases_as_executables() {
    run_all(Mode::Executable);
}

fn run_all(mode: Mode) {
    let pjc = PathBuf::from(env!("CARGO_BIN_EXE_pjc"));
    let mut dirs = case_dirs();
    assert!(
        !dirs.is_empty(),
        "no numeric cases found in {} (regenerate them with tests/numeric/gen.py; check PJC_NUMERIC_FILTER)",
        cases_root().display()
    );
    if mode == Mode::Executable {
        let all = dirs.len();
        dirs.retain(|d| !d.join("eval_only").exists());
        eprintln!("numeric: {} of {all} cases are eval_only, not compiled", all - dirs.len());
    }

    let kind = if mode == Mode::Eval { "eval" } else { "exe" };
    let scratch = std::env::temp_dir().join(format!("pjc-numeric-{kind}-{}", std::process::id()));
    let next = AtomicUsize::new(0);
    let failures: Mutex<Vec<(String, Vec<String>)>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(4)
        .clamp(1, 16);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(dir) = dirs.get(i) else { break };
                let name = dir.file_name().unwrap().to_string_lossy().into_owned();
                let work = scratch.join(&name);
                let problems = run_case(&pjc, dir, &work, mode);
                if problems.is_empty() {
                    let _ = fs::remove_dir_all(&work);
                } else {
                    failures.lock().unwrap().push((name, problems));
                }
            });
        }
    });

    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    if failures.is_empty() {
        let _ = fs::remove_dir_all(&scratch);
        eprintln!("numeric: all {} cases pass", dirs.len());
        return;
    }
    let mut report = format!(
        "{} of {} numeric cases failed (outputs kept under {}):\n",
        failures.len(),
        dirs.len(),
        scratch.display()
    );
    for (name, problems) in &failures {
        report.push_str(&format!("\n[{name}]\n"));
        for p in problems {
            for (k, line) in p.lines().enumerate() {
                report.push_str(if k == 0 { "  - " } else { "      " });
                report.push_str(line);
                report.push('\n');
            }
        }
    }
    panic!("{report}");
}
