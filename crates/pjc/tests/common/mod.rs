//! What several of pjc's test files share: the data-parallel training step
//! the training and elastic tests run, scratch directories and
//! deterministic inputs.
#![allow(dead_code)]

use pjc_tensor::{Buf, Tensor};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A data-parallel regression step on `[data=4]`: a two-layer network's SGD
/// update written with `grad`; `w1`, `w2` carry from step to step, `loss`
/// is logged, `x`, `y` are fed from datasets.
pub const DP_PROGRAM: &str = "mesh [data=4]

func @loss(%w1: f32[256,256], %w2: f32[256,32], %x: f32[128,256] on [data, _], %y: f32[128,32] on [data, _]) -> (l: f32[]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[128,256]
  %t = tanh %h
  %o = dot_general %t, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[128,32]
  %d = sub %o, %y
  %d2 = mul %d, %d
  %l = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  return %l
}

func @main(%w1: f32[256,256], %w2: f32[256,32], %x: f32[128,256] on [data, _], %y: f32[128,32] on [data, _]) -> (loss: f32[], w1: f32[256,256], w2: f32[256,32]) {
  %l, %g1, %g2 = grad @loss(%w1, %w2, %x, %y) {wrt=[0,1]} : (f32[], f32[256,256], f32[256,32])
  %k1 = constant 0.0001 : f32[256,256]
  %u1 = mul %g1, %k1
  %w1n = sub %w1, %u1
  %k2 = constant 0.0001 : f32[256,32]
  %u2 = mul %g2, %k2
  %w2n = sub %w2, %u2
  return %l, %w1n, %w2n
}
";

/// A fresh, empty directory under the system's temporary directory, named
/// after `what`, this process and a counter.
pub fn scratch(what: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!("pjc-{what}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Deterministic pseudo-random f32 values in [-scale, scale] (xorshift).
pub fn random(shape: Vec<usize>, seed: &mut u64, scale: f64) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            (((*seed % 2001) as f64 / 1000.0 - 1.0) * scale) as f32
        })
        .collect();
    Tensor::new(shape, Buf::F32(v))
}

/// `mpirun --oversubscribe -np NP EXE ARGS...` under `timeout` (`limit_s`),
/// one kernel thread per rank, shared-memory transport only; fails the test
/// on a hang or a non-zero exit, with the job's stderr.
pub fn mpirun_ok<S: AsRef<std::ffi::OsStr>>(np: usize, exe: &std::path::Path, args: &[S], limit_s: u64) -> std::process::Output {
    mpirun_ok_env(np, exe, args, limit_s, &[])
}

/// [`mpirun_ok`] with these environment variables set as well (for every rank).
pub fn mpirun_ok_env<S: AsRef<std::ffi::OsStr>>(np: usize, exe: &std::path::Path, args: &[S], limit_s: u64, env: &[(&str, &str)]) -> std::process::Output {
    let o = std::process::Command::new("timeout")
        .args(["--signal=TERM", "--kill-after=10", &limit_s.to_string(), "mpirun", "--oversubscribe", "-np", &np.to_string()])
        .arg(exe)
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl", "self,vader")
        .env("OMPI_MCA_pml", "ob1")
        .env("OMPI_MCA_orte_tmpdir_base", ompi_tmpdir())
        .env("PJC_THREADS", "1")
        .env("RUST_BACKTRACE", "0")
        .envs(env.iter().copied())
        .output()
        .expect("cannot start `timeout` (coreutils)");
    assert_ne!(o.status.code(), Some(124), "hang: mpirun -np {np} {}", exe.display());
    assert!(o.status.success(), "mpirun -np {np} {}: {}", exe.display(), String::from_utf8_lossy(&o.stderr));
    o
}

/// A directory of its own for one `mpirun`'s session files (OpenMPI's
/// `orte_tmpdir_base`, passed as `OMPI_MCA_orte_tmpdir_base`): mpiruns that
/// parallel tests start at the same moment otherwise race to create the
/// shared `/tmp/ompi.HOST.UID` and one fails ("A call to mkdir was unable to
/// create the desired directory ... File exists").
pub fn ompi_tmpdir() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!("pjc-ompi-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// [`DP_PROGRAM`]'s inputs in `dir` as `w1.npy`, `w2.npy` (scale 0.1) and
/// the datasets `x.npy`, `y.npy` of 200 examples (batch 128: the data stream
/// wraps around), from one fixed seed.
pub fn write_dp_inputs(dir: &std::path::Path) {
    let mut seed = 0x1234_5678_9abc_def1u64;
    for (n, shape) in [("w1", vec![256, 256]), ("w2", vec![256, 32]), ("x", vec![200, 256]), ("y", vec![200, 32])] {
        let scale = if n.starts_with('w') { 0.1 } else { 1.0 };
        pjc_tensor::write_npy(&dir.join(format!("{n}.npy")), &random(shape, &mut seed, scale)).unwrap();
    }
}

/// An executable's flags for [`DP_PROGRAM`] in loop mode on the inputs of
/// [`write_dp_inputs`] in `dir`: `steps` steps, results into `dir/out`, then
/// `extra`.
pub fn dp_flags(dir: &std::path::Path, steps: u64, out: &str, extra: &[&str]) -> Vec<String> {
    let p = |n: &str| dir.join(n).display().to_string();
    let mut a: Vec<String> = vec![
        "--input".into(),
        format!("w1={}", p("w1.npy")),
        "--input".into(),
        format!("w2={}", p("w2.npy")),
        "--data".into(),
        format!("x={}", p("x.npy")),
        "--data".into(),
        format!("y={}", p("y.npy")),
        "--steps".into(),
        steps.to_string(),
        "--log-every".into(),
        "10".into(),
        "--output".into(),
        p(out),
    ];
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// Every `.pir` file under `dir`, recursively, in sorted path order (none
/// when `dir` cannot be read).
pub fn pir_files(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            pir_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "pir") {
            out.push(p);
        }
    }
}

/// One rank's collective events of a `--trace` file's `traceEvents` on track
/// `tid` (start, end, microseconds), and how many microseconds of them overlap
/// the rank's compute (kernel, GEMM and library events of the step loop,
/// track 0; compute events of one thread do not overlap each other).
pub fn collective_overlap(events: &[serde_json::Value], rank: u64, tid: u64) -> (Vec<(f64, f64)>, f64) {
    let of = |cats: &[&str], tid: u64| -> Vec<(f64, f64)> {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["pid"] == rank && e["tid"] == tid && cats.contains(&e["cat"].as_str().unwrap_or("")))
            .map(|e| (e["ts"].as_f64().unwrap(), e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap()))
            .collect()
    };
    let colls = of(&["collective"], tid);
    let compute = of(&["kernel", "gemm", "library"], 0);
    let hidden = colls.iter().map(|&(s, e)| compute.iter().map(|&(a, b)| (b.min(e) - a.max(s)).max(0.0)).sum::<f64>()).sum();
    (colls, hidden)
}
