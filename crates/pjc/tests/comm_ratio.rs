//! The communication/compute ratio, estimated and measured: the data-parallel
//! MLP training step (examples/mlp_train.pir) on 2 processes under real
//! `mpirun` with `--trace`. The summary rank 0 prints and writes into the
//! trace's `otherData.summary` must be the trace's own events summed per rank
//! and category, and its bytes per step the ones `pjc explain` estimates.

mod common;

use pjc_plan::cost::{duration_text, sig3};
use pjc_tensor::{Buf, Tensor};
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("pjc-comm-ratio-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Deterministic values in [-scale, scale]: the test is about times, not values.
fn filled(shape: Vec<usize>, salt: usize, scale: f64) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::new(shape, Buf::F32((0..n).map(|i| (((i * 7 + salt) as f64 * 0.37).sin() * scale) as f32).collect()))
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/mlp_train.pir")
}

fn pjc(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_pjc")).args(args).output().unwrap();
    assert!(o.status.success(), "pjc {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The number after `key` in `text`, up to the next space.
fn number_after(text: &str, key: &str) -> f64 {
    let at = text.find(key).unwrap_or_else(|| panic!("no '{key}' in:\n{text}")) + key.len();
    text[at..].split(' ').next().unwrap().parse().unwrap_or_else(|e| panic!("'{key}' in {text}: {e}"))
}

#[test]
fn trace_summary_is_the_traces_events_and_explains_bytes() {
    let dir = scratch();
    let prog = example();
    let prog = prog.to_str().unwrap();
    let exe = dir.join("train.bin");
    pjc(&["compile", prog, "--mesh", "data=2", "-o", exe.to_str().unwrap()]);
    let mut args: Vec<String> = vec![];
    for (salt, (name, shape, scale)) in [
        ("x", vec![64, 784], 1.0),
        ("labels", vec![64, 10], 1.0),
        ("w1", vec![784, 128], 0.05),
        ("b1", vec![128], 0.05),
        ("w2", vec![128, 10], 0.05),
        ("b2", vec![10], 0.05),
    ]
    .into_iter()
    .enumerate()
    {
        let path = dir.join(format!("{name}.npy"));
        pjc_tensor::write_npy(&path, &filled(shape, salt, scale)).unwrap();
        args.extend(["--input".to_string(), format!("{name}={}", path.display())]);
    }
    let trace = dir.join("trace.json");
    let steps = 3u64;
    args.extend(["--steps".to_string(), steps.to_string(), "--trace".into(), trace.display().to_string(), "--output".into(), dir.join("out.safetensors").display().to_string()]);
    let o = common::mpirun_ok(2, &exe, &args, 120);
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).expect("valid JSON");
    let events = doc["traceEvents"].as_array().expect("traceEvents");
    let summary = &doc["otherData"]["summary"];
    let ranks = summary["ranks"].as_array().unwrap_or_else(|| panic!("no summary: {}", doc["otherData"]));
    assert_eq!(ranks.len(), 2);
    assert!(stderr.contains(&format!("pjc: trace summary per step (mean of {steps} steps;")), "{stderr}");
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-6);
    let (mut least_collective_ms, mut least_compute_ms) = (f64::INFINITY, f64::INFINITY);
    for (r, s) in ranks.iter().enumerate() {
        // The trace's own events of this rank, summed by category (µs).
        let sum = |cats: &[&str]| -> f64 {
            events
                .iter()
                .filter(|e| e["pid"].as_u64() == Some(r as u64) && e["ph"] == "X" && cats.iter().any(|c| e["cat"] == *c))
                .map(|e| e["dur"].as_f64().unwrap())
                .sum()
        };
        let (compute, collective) = (sum(&["kernel", "gemm", "library"]), sum(&["collective"]));
        assert!(compute > 0.0 && collective > 0.0, "rank {r}: compute {compute} us, collectives {collective} us");
        assert_eq!(s["steps"].as_u64(), Some(steps), "rank {r}: {s}");
        assert!(close(s["compute_ms"].as_f64().unwrap(), compute / 1e3), "rank {r}: {s} vs {compute} us");
        assert!(close(s["collective_ms"].as_f64().unwrap(), collective / 1e3), "rank {r}: {s} vs {collective} us");
        assert!(close(s["collective_ms_per_step"].as_f64().unwrap(), collective / 1e3 / steps as f64), "rank {r}: {s}");
        let ratio = s["ratio"].as_f64().unwrap();
        assert!(close(ratio, compute / collective), "rank {r}: {s}");
        // The printed line says the same.
        let n = steps as f64;
        let line = format!("  rank {r}: compute {}, collectives {}, ratio 1:{}\n", duration_text(compute * 1e-6 / n), duration_text(collective * 1e-6 / n), sig3(ratio));
        assert!(stderr.contains(&line), "no '{line}' in:\n{stderr}");
        least_collective_ms = least_collective_ms.min(collective / 1e3 / n);
        least_compute_ms = least_compute_ms.min(compute / 1e3 / n);
    }
    // The bytes per step are the cost model's, as pjc explain prints them
    // for the same program on the same mesh.
    let explain = pjc(&["explain", prog, "--mesh", "data=2"]);
    let line = explain.lines().find(|l| l.starts_with("  collectives  ")).unwrap();
    let bytes = number_after(line, "(");
    assert!(bytes > 0.0, "{line}");
    assert_eq!(summary["collective_bytes_per_step"].as_f64(), Some(bytes), "{summary}\n{line}");
    // The measured link: those bytes over the least time a rank spent in
    // collectives per step.
    let gbps = summary["link_gbps_measured"].as_f64().unwrap();
    assert!(close(gbps, bytes / (least_collective_ms * 1e-3) / 1e9), "{summary}");
    assert!(stderr.contains(&format!("pjc explain --link-gbps {} models it", sig3(gbps))), "{stderr}");
    // And the compute: the model's operations per step over the least compute
    // time per step.
    let flops = summary["flops_per_step"].as_f64().unwrap();
    let gflops = summary["device_gflops_measured"].as_f64().unwrap();
    assert!(flops > 0.0 && close(gflops, flops / (least_compute_ms * 1e-3) / 1e9), "{summary}");
    assert!(stderr.contains(&format!("pjc explain --device-gflops {} models it", sig3(gflops))), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
