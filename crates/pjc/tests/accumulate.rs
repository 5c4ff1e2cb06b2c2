//! `pjc compile --accumulate K` end to end: executables under real `mpirun`
//! compute the full-batch step (K = 1, 2, 4, on 4 and 2 processes), run one
//! all-reduce per step however many micro-batches there are (counted in the
//! `--trace` output), `pjc eval --accumulate K` agrees, and `pjc explain`'s
//! peak memory falls with K.

mod common;

use pjc_tensor::compare::{close, Tolerance};
use pjc_tensor::{Buf, Tensor};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scratch() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!("pjc-accumulate-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn pjc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pjc")).current_dir(repo()).args(args).output().unwrap()
}

/// `pjc compile PROGRAM --mesh MESH [--accumulate K] -o OUT`.
fn compile(dir: &Path, mesh: &str, k: Option<u64>) -> PathBuf {
    let exe = dir.join(format!("step-{mesh}-{}.bin", k.map_or("full".to_string(), |k| k.to_string())));
    let mut args = vec!["compile", "tests/accumulate/mlp_dp.pir", "--mesh", mesh, "-o", exe.to_str().unwrap()];
    let ks = k.map(|k| k.to_string());
    if let Some(k) = &ks {
        args.extend(["--accumulate", k]);
    }
    let o = pjc(&args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    exe
}

fn mpirun(np: usize, exe: &Path, args: &[String]) -> Output {
    common::mpirun_ok(np, exe, args, 120)
}

fn random(shape: Vec<usize>, seed: &mut u64) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            (*seed % 2001) as f32 / 1000.0 - 1.0
        })
        .collect();
    Tensor::new(shape, Buf::F32(v))
}

/// The step's inputs, in one safetensors file.
fn inputs(dir: &Path) -> PathBuf {
    let mut seed = 0x1234_5678_9abc_def1u64;
    let named: Vec<(String, Tensor)> = [("w1", vec![16, 64]), ("b1", vec![64]), ("w2", vec![64, 8]), ("x", vec![32, 16]), ("y", vec![32, 8])]
        .into_iter()
        .map(|(n, s)| (n.to_string(), random(s, &mut seed)))
        .collect();
    let p = dir.join("in.safetensors");
    pjc_tensor::write_safetensors(&p, &named).unwrap();
    p
}

fn run_step(np: usize, exe: &Path, input: &Path, out: &Path, extra: &[&str]) -> Vec<(String, Tensor)> {
    let mut args = vec!["--inputs".to_string(), input.display().to_string(), "--output".to_string(), out.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    mpirun(np, exe, &args);
    pjc_tensor::read_safetensors(out).unwrap()
}

#[test]
fn accumulated_steps_equal_the_full_batch_step_under_mpirun() {
    let dir = scratch();
    let input = inputs(&dir);
    for (mesh, np) in [("data=4", 4), ("data=2", 2)] {
        let full = run_step(np, &compile(&dir, mesh, None), &input, &dir.join("full.safetensors"), &[]);
        let ks: &[u64] = if np == 4 { &[1, 2, 4] } else { &[4] };
        for &k in ks {
            let got = run_step(np, &compile(&dir, mesh, Some(k)), &input, &dir.join(format!("k{k}.safetensors")), &[]);
            assert_eq!(got.len(), full.len());
            for (name, want) in &full {
                let g = &got.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no result {name}")).1;
                // The same sums regrouped (micro-batch partial sums, then the
                // devices'): spec section 11's f32 tolerance, 1e-5.
                close(want, g, Tolerance::spec(pjc_ir::DType::F32)).unwrap_or_else(|e| panic!("{mesh}, K={k}, {name}: {e}"));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_all_reduce_per_step_whatever_the_micro_batch_count() {
    let dir = scratch();
    let input = inputs(&dir);
    let exe = compile(&dir, "data=4", Some(4));
    // The plan: one collective (the three gradients' and the loss's
    // all-reduces, moved out of the scan and combined), outside the loop.
    let o = pjc(&["compile", "tests/accumulate/mlp_dp.pir", "--mesh", "data=4", "--accumulate", "4", "--emit", "plan"]);
    let plan = String::from_utf8_lossy(&o.stdout);
    let collectives: Vec<&str> = plan.lines().filter(|l| l.trim_start().starts_with("collective ")).collect();
    assert_eq!(collectives.len(), 1, "{plan}");
    assert!(collectives[0].starts_with("  collective all_reduce"), "not at the step's top level: {plan}");
    assert!(plan.contains("scan {length=4}"), "{plan}");
    // The run: three steps in loop mode, one all-reduce each, on every rank.
    let trace = dir.join("trace.json");
    run_step(4, &exe, &input, &dir.join("out.safetensors"), &["--steps", "3", "--trace", trace.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    for rank in 0..4u64 {
        let count = |cat: &str| events.iter().filter(|e| e["pid"].as_u64() == Some(rank) && e["ph"] == "X" && e["cat"] == cat).count();
        assert_eq!(count("step"), 3, "rank {rank}");
        assert_eq!(count("collective"), 3, "rank {rank}: one all-reduce per step, not one per micro-batch");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pjc_eval_takes_accumulate_too() {
    let dir = scratch();
    let input = inputs(&dir);
    let eval = |k: Option<&str>| {
        let out = dir.join(format!("eval-{}.safetensors", k.unwrap_or("full")));
        let mut args = vec!["eval", "tests/accumulate/mlp_dp.pir", "--inputs", input.to_str().unwrap(), "--output", out.to_str().unwrap()];
        if let Some(k) = k {
            args.extend(["--accumulate", k]);
        }
        let o = pjc(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        pjc_tensor::read_safetensors(&out).unwrap()
    };
    let full = eval(None);
    for k in ["2", "4"] {
        for ((n, w), (m, g)) in full.iter().zip(&eval(Some(k))) {
            assert_eq!(n, m);
            close(w, g, Tolerance::spec(pjc_ir::DType::F32)).unwrap_or_else(|e| panic!("K={k}, {n}: {e}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `pjc explain`'s peak memory per device.
fn peak(args: &[&str]) -> u64 {
    let mut all = vec!["explain", "tests/accumulate/mlp_wide.pir"];
    all.extend(args);
    let o = pjc(&all);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let line = out.lines().find(|l| l.starts_with("peak memory per device: ")).unwrap_or_else(|| panic!("{out}"));
    line["peak memory per device: ".len()..].split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn peak_memory_falls_with_the_micro_batch_count() {
    let (plain, k1, k2, k4) = (peak(&[]), peak(&["--accumulate", "1"]), peak(&["--accumulate", "2"]), peak(&["--accumulate", "4"]));
    // One micro-batch's activations live at once: each halving of the
    // micro-batch saves a good part of the activations (here 256 x 1024 f32
    // per layer and their cotangents, over 4 devices).
    assert!(k4 < k2 && k2 < k1, "K=1: {k1}, K=2: {k2}, K=4: {k4}");
    assert!(k4 < plain, "K=4: {k4}, without --accumulate: {plain}");
    assert!(k1 - k4 > (k1 - k2), "K=1: {k1}, K=2: {k2}, K=4: {k4}");
}

#[test]
fn command_line_errors() {
    // B = 32 is not divisible by 3: a diagnostic at the batch parameter (exit 1).
    let o = pjc(&["compile", "tests/accumulate/mlp_dp.pir", "--emit", "pir", "--accumulate", "3"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("tests/accumulate/mlp_dp.pir:") && err.contains(": error: --accumulate 3: dimension 0 of batch parameter %x has size 32, which is not divisible by 3"), "{err}");
    // --batch-params naming no parameter, or without --accumulate (exit 2).
    let o = pjc(&["explain", "tests/accumulate/mlp_dp.pir", "--accumulate", "2", "--batch-params", "x,z"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr), "error: --batch-params names 'z', but @main has no parameter 'z' (its parameters: w1, b1, w2, x, y)\n");
    let o = pjc(&["compile", "tests/accumulate/mlp_dp.pir", "--emit", "pir", "--batch-params", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr), "error: --batch-params applies with --accumulate K\n");
}
