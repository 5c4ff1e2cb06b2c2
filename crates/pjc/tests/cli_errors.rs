//! Bad inputs and environments: exit 2 with one clear `error:` line naming the
//! file or parameter concerned (spec section 10), never a panic.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs pjc in the repository root; returns (exit code, stderr).
fn pjc(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pjc")).args(args).current_dir(repo()).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pjc-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

const CASE: &str = "tests/numeric/cases/binary_add_f32";

fn one_line_error(code: i32, err: &str, want_code: i32, needle: &str) {
    assert_eq!(code, want_code, "stderr: {err}");
    assert!(err.starts_with("error: "), "not an error line: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "more than one line: {err}");
    assert!(err.contains(needle), "'{needle}' not in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn missing_pir_file_is_an_environment_error() {
    let (c, e) = pjc(&["check", "no/such/file.pir"]);
    one_line_error(c, &e, 2, "no/such/file.pir");
}

#[test]
fn eval_input_errors() {
    assert!(Path::new(&repo().join(CASE)).exists(), "fixture {CASE} missing");
    let prog = format!("{CASE}/prog.pir");
    let a = format!("a={CASE}/in_a.npy");
    let b = format!("b={CASE}/in_b.npy");
    let sa = format!("sa={CASE}/in_sa.npy");
    let sb = format!("sb={CASE}/in_sb.npy");
    let out = tmp("out");
    let out = out.to_str().unwrap();
    let run = |first: &str, extra: &[&str]| {
        let mut args = vec!["eval", prog.as_str(), "--input", first, "--input", sa.as_str(), "--input", sb.as_str()];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--output", out]);
        pjc(&args)
    };
    // Works first, so the cases below fail for the stated reason.
    let (c, e) = run(&a, &["--input", &b]);
    assert_eq!(c, 0, "{e}");
    // A missing input file names the parameter and the file.
    let (c, e) = run("a=nope.npy", &["--input", &b]);
    one_line_error(c, &e, 2, "input 'a': cannot read 'nope.npy'");
    // A parameter with no value.
    let (c, e) = run(&a, &[]);
    one_line_error(c, &e, 2, "no input for parameter 'b'");
    // --input naming no parameter.
    let zz = format!("zz={CASE}/in_a.npy");
    let (c, e) = run(&a, &["--input", &b, "--input", &zz]);
    one_line_error(c, &e, 2, "has no parameter 'zz'");
    // Wrong shape or dtype: a's file fed to a parameter of another type.
    let other = repo().join("tests/numeric/cases").read_dir().unwrap().flatten().map(|e| e.path()).find(|p| {
        p.join("in_x.npy").exists() && std::fs::read_to_string(p.join("prog.pir")).is_ok_and(|s| s.contains("%x: i32"))
    });
    if let Some(other) = other {
        let x = format!("a={}", other.join("in_x.npy").display());
        let (c, e) = run(&x, &["--input", &b]);
        one_line_error(c, &e, 2, "parameter %a");
    }
    // A corrupt .npy.
    let bad = tmp("bad.npy");
    std::fs::write(&bad, b"\x93NUMPY\x01\x00garbage").unwrap();
    let bad_a = format!("a={}", bad.display());
    let (c, e) = run(&bad_a, &["--input", &b]);
    one_line_error(c, &e, 2, &bad.display().to_string());
}

#[test]
fn invalid_program_is_exit_1_with_a_diagnostic() {
    let dir = tmp("prog");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.pir");
    std::fs::write(&f, "func @main(%x: f32[8]) -> (f32[8]) {\n  %y = exp %q\n  return %y\n}\n").unwrap();
    let (c, e) = pjc(&["eval", f.to_str().unwrap(), "--output", dir.join("o").to_str().unwrap()]);
    assert_eq!(c, 1, "{e}");
    assert!(e.contains("bad.pir:2:12: error: use of undefined value '%q'"), "{e}");
    assert!(e.contains("  %y = exp %q\n           ^"), "{e}");
}

#[test]
fn mesh_override_must_keep_the_axis_names() {
    let (c, e) = pjc(&["compile", "tests/text/sharding/megatron_mlp.pir", "--emit", "sharded", "--mesh", "data=8"]);
    one_line_error(c, &e, 2, "--mesh names axes [data]");
}

/// Runs pjc with extra environment variables; returns (exit code, stderr).
fn pjc_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pjc"));
    c.args(args).current_dir(repo());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn compile_output_errors() {
    let prog = format!("{CASE}/prog.pir");
    let dir = tmp("compile");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("prog.bin");
    let out = out.to_str().unwrap();
    // Works first.
    let (c, e) = pjc(&["compile", &prog, "-o", out]);
    assert_eq!(c, 0, "{e}");
    assert!(Path::new(out).is_file());
    // Neither -o nor --emit.
    let (c, e) = pjc(&["compile", &prog]);
    one_line_error(c, &e, 2, "needs -o OUT");
    // An output in a directory that does not exist.
    let (c, e) = pjc(&["compile", &prog, "-o", "no/such/dir/prog.bin"]);
    one_line_error(c, &e, 2, "cannot write 'no/such/dir/prog.bin'");
    // An output that is a directory.
    let (c, e) = pjc(&["compile", &prog, "-o", dir.to_str().unwrap()]);
    one_line_error(c, &e, 2, "it is a directory");
    // No runner where PJC_RUNNER says.
    let (c, e) = pjc_env(&["compile", &prog, "-o", out], &[("PJC_RUNNER", "/no/such/pjc-runner")]);
    one_line_error(c, &e, 2, "PJC_RUNNER is '/no/such/pjc-runner'");
    // No C compiler driver to link the kernels.
    let (c, e) = pjc_env(&["compile", &prog, "-o", out], &[("CC", "/no/such/cc")]);
    one_line_error(c, &e, 2, "needs a C compiler driver");
    // A failed compile leaves the previous executable whole.
    let o = Command::new(out).args(["--input", &format!("a={CASE}/in_a.npy")]).current_dir(repo()).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "the old executable still runs and reports the missing inputs");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `cmd` with a file-size limit of `kib` KiB (RLIMIT_FSIZE, set by the
/// shell; SIGXFSZ ignored, which the child inherits), so that a write past
/// the limit fails with EFBIG the way a full disk fails with ENOSPC: no root,
/// no mount needed. Returns (exit code, stderr).
fn with_file_size_limit(kib: u64, cmd: &Path, args: &[&str], cwd: &Path) -> (i32, String) {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("trap '' XFSZ; ulimit -f {kib}; exec \"$0\" \"$@\""))
        .arg(cmd)
        .args(args)
        .current_dir(cwd)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect();
    v.sort();
    v
}

#[test]
fn a_failed_eval_output_write_keeps_the_earlier_result() {
    // A 1 MiB result; writes past 200 KiB fail.
    let d = tmp("atomic-eval");
    std::fs::create_dir_all(d.join("npy")).unwrap();
    std::fs::write(d.join("p.pir"), "func @main(%x: f32[512,512]) -> (y: f32[512,512], z: f32[512,512]) {\n  %y = add %x, %x\n  %z = mul %x, %x\n  return %y, %z\n}\n").unwrap();
    let x = pjc_tensor::Tensor::new(vec![512, 512], pjc_tensor::Buf::F32((0..512 * 512).map(|i| i as f32).collect()));
    pjc_tensor::write_npy(&d.join("x.npy"), &x).unwrap();
    std::fs::write(d.join("out.safetensors"), b"the earlier result").unwrap();
    std::fs::write(d.join("npy/y.npy"), b"earlier y").unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_pjc"));
    for (out, earlier) in [("out.safetensors", "out.safetensors"), ("npy", "npy/y.npy")] {
        let (c, e) = with_file_size_limit(200, bin, &["eval", "p.pir", "--input", "x=x.npy", "--output", out], &d);
        one_line_error(c, &e, 2, "cannot write '");
        assert!(e.contains("File too large"), "{e}");
        let kept = std::fs::read(d.join(earlier)).unwrap();
        assert!(kept.starts_with(b"the earlier result") || kept == b"earlier y", "{earlier} was overwritten ({} bytes)", kept.len());
    }
    assert_eq!(names_in(&d), ["npy", "out.safetensors", "p.pir", "x.npy"], "no temporaries");
    assert_eq!(names_in(&d.join("npy")), ["y.npy"], "no temporaries, no partial z.npy");
    // Without the limit both outputs are written whole.
    let (c, e) = pjc(&["eval", d.join("p.pir").to_str().unwrap(), "--input", &format!("x={}", d.join("x.npy").display()), "--output", d.join("npy").to_str().unwrap()]);
    assert_eq!(c, 0, "{e}");
    assert_eq!(pjc_tensor::read_npy(&d.join("npy/z.npy")).unwrap().shape, [512, 512]);
    let _ = std::fs::remove_dir_all(&d);
}
