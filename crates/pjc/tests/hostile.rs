//! Hostile inputs found by a fuzzing and hand-written campaign (issue 13):
//! each is a clean error in the spec's format (section 10: one line or a
//! rendered diagnostic, exit 1 or 2) or correct behaviour, never a panic, an
//! abort or a stack overflow, and no stage's time grows faster than its input.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pjc-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs pjc; returns (exit code, stdout, stderr).
fn pjc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pjc")).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn no_crash(code: i32, err: &str) {
    for bad in ["panicked", "overflowed its stack", "memory allocation of", "LLVM ERROR", "stack backtrace"] {
        assert!(!err.contains(bad), "exit {code}: {err}");
    }
    assert!(code == 0 || code == 1 || code == 2, "exit {code}: {err}");
}

fn one_line_error(code: i32, err: &str, needle: &str) {
    no_crash(code, err);
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(needle), "'{needle}' not in: {err}");
}

/// A straight chain of `n` adds (each statement uses the previous one).
fn chain(n: usize, mesh: &str) -> String {
    let mut s = format!("{mesh}\nfunc @main(%x: f32[8]) -> (r: f32[8]) {{\n  %v0 = add %x, %x : f32[8]\n");
    for i in 1..n {
        s += &format!("  %v{i} = add %v{}, %x : f32[8]\n", i - 1);
    }
    s += &format!("  return %v{}\n}}\n", n - 1);
    s
}

/// A Megatron-style layer stack on [data=2, model=2], ten ops per layer.
fn stack(layers: usize) -> String {
    let mut s = String::from(
        "mesh [data=2, model=2]\nfunc @main(%x: f32[16,64] on [data, _], %w1: f32[64,128] on [_, model], \
         %w2: f32[128,64] on [model, _], %b: f32[128]) -> (r: f32[16,64] on [data, _], s: f32[16]) {\n",
    );
    let mut h = "x".to_string();
    for i in 0..layers {
        s += &format!(
            "  %a{i} = dot_general %{h}, %w1 {{lhs_contract=[1], rhs_contract=[0]}} : f32[16,128]
  %bb{i} = broadcast %b {{dims=[1]}} : f32[16,128]
  %z{i} = add %a{i}, %bb{i} : f32[16,128]
  %t{i} = tanh %z{i} : f32[16,128]
  %m{i} = mul %t{i}, %z{i} : f32[16,128]
  %o{i} = dot_general %m{i}, %w2 {{lhs_contract=[1], rhs_contract=[0]}} : f32[16,64]
  %e{i} = exp %o{i} : f32[16,64]
  %q{i} = div %o{i}, %e{i} : f32[16,64]
  %r{i} = add %{h}, %q{i} : f32[16,64]
  %h{i} = neg %r{i} : f32[16,64]
"
        );
        h = format!("h{i}");
    }
    s += &format!("  %s = reduce %{h} {{dims=[1], kind=sum}} : f32[16]\n  return %{h}, %s\n}}\n");
    s
}

// Defect 1: format widths above 65535 panic in Rust's formatter.
#[test]
fn explain_accepts_identifiers_of_any_length() {
    let d = tmp("longid");
    let name = "a".repeat(70_000);
    let p = d.join("long.pir");
    std::fs::write(&p, format!("func @main(%{name}: f32[4]) -> (r: f32[4]) {{\n  %y = add %{name}, %{name} : f32[4]\n  return %y\n}}\n"))
        .unwrap();
    let (c, out, err) = pjc(&["explain", p.to_str().unwrap()]);
    no_crash(c, &err);
    assert_eq!(c, 0, "{err}");
    assert!(out.contains(&format!("%{name}")), "the long name is not in explain's table");
    // Literals with more than 65535 significant digits compare too.
    let digits = "1".repeat(70_000);
    std::fs::write(&p, format!("func @main() -> (r: f32[]) {{\n  %c = constant {digits}.5 : f32[]\n  return %c\n}}\n")).unwrap();
    let (c, _, err) = pjc(&["check", p.to_str().unwrap()]);
    no_crash(c, &err);
}

// Defect 2: the fusion planner recursed once per fused producer.
#[test]
fn a_chain_of_14000_statements_compiles_to_an_executable() {
    let d = tmp("chain");
    let p = d.join("chain.pir");
    std::fs::write(&p, chain(14_000, "")).unwrap();
    let exe = d.join("chain.bin");
    let (c, _, err) = pjc(&["compile", p.to_str().unwrap(), "-o", exe.to_str().unwrap()]);
    no_crash(c, &err);
    assert_eq!(c, 0, "{err}");
    assert!(exe.exists());
    // The plan cuts the chain into kernels of bounded depth.
    let (c, plan, err) = pjc(&["compile", p.to_str().unwrap(), "--emit", "plan"]);
    assert_eq!(c, 0, "{err}");
    let kernels = plan.lines().filter(|l| l.trim_start().starts_with("kernel")).count();
    assert!(kernels >= 14_000 / pjc_fusion::MAX_FUSION_DEPTH, "{kernels} kernels");
    let _ = std::fs::remove_dir_all(&d);
}

/// The best of two runs of pjc with `args`.
fn best_time(args: &[&str]) -> Duration {
    (0..2)
        .map(|_| {
            let t = Instant::now();
            let (c, _, err) = pjc(args);
            assert_eq!(c, 0, "{args:?}: {err}");
            t.elapsed()
        })
        .min()
        .unwrap()
}

/// Asserts that a 4x larger input takes less than 10x as long (linear: 4x;
/// quadratic: 16x) for each command — a growth check, not a speed target.
fn grows_linearly(small: &std::path::Path, large: &std::path::Path, commands: &[&[&str]]) {
    for cmd in commands {
        let with = |p: &std::path::Path| {
            let mut a: Vec<&str> = cmd.to_vec();
            a.push(p.to_str().unwrap());
            best_time(&a)
        };
        let (s, l) = (with(small), with(large));
        let ratio = l.as_secs_f64() / s.as_secs_f64().max(0.02);
        assert!(ratio < 10.0, "{cmd:?}: {s:?} -> {l:?} for 4x the input (x{ratio:.1})");
    }
}

// Defect 3: the partitioner's builder re-collected every name per
// instruction; propagation re-ran every link each round and carried its whole
// path in each reason; the combiner kept one open group per layer.
#[test]
fn every_stage_grows_linearly_with_the_program() {
    let d = tmp("growth");
    let (small, large) = (d.join("small.pir"), d.join("large.pir"));
    std::fs::write(&small, stack(250)).unwrap();
    std::fs::write(&large, stack(1000)).unwrap();
    grows_linearly(
        &small,
        &large,
        &[&["check"], &["compile", "--emit", "sharded"], &["compile", "--emit", "spmd"], &["compile", "--emit", "plan"], &["explain"]],
    );
    let axes = |n: usize| {
        let a: Vec<String> = (0..n).map(|i| format!("a{i}=1")).collect();
        format!("mesh [{}]\nfunc @main(%x: f32[8]) -> (r: f32[8]) {{\n  return %x\n}}\n", a.join(", "))
    };
    std::fs::write(&small, axes(25_000)).unwrap();
    std::fs::write(&large, axes(100_000)).unwrap();
    grows_linearly(&small, &large, &[&["check"]]);
    let _ = std::fs::remove_dir_all(&d);
}

// Defect 4: a failed allocation aborted the interpreter.
#[test]
fn eval_refuses_values_larger_than_memory_before_allocating() {
    let d = tmp("big");
    let p = d.join("big.pir");
    for op in ["constant 0.0", "iota {dim=0}"] {
        std::fs::write(
            &p,
            format!("func @main() -> (r: f32[100000,100000,100000]) {{\n  %c = {op} : f32[100000,100000,100000]\n  return %c\n}}\n"),
        )
        .unwrap();
        let out = d.join("out.safetensors");
        let (c, _, err) = pjc(&["eval", p.to_str().unwrap(), "--output", out.to_str().unwrap()]);
        one_line_error(c, &err, "value %c of @main (f32[100000,100000,100000]) needs ");
        assert!(err.contains("bytes of available memory"), "{err}");
        assert!(!out.exists());
    }
}

// Defect 5: LLVM aborts on architectures it cannot select instructions for.
#[test]
fn unsupported_gpu_architectures_are_refused_with_the_list() {
    let d = tmp("arch");
    let exe = d.join("x.bin");
    for arch in ["sm_35", "sm_10", "sm_999", "sm_1", "sm_", "compute_90"] {
        for extra in [&["--emit", "ptx"][..], &["-o", exe.to_str().unwrap()][..]] {
            let mut args = vec!["compile", "examples/mlp.pir", "--gpu-arch", arch];
            args.extend_from_slice(extra);
            let out = Command::new(env!("CARGO_BIN_EXE_pjc"))
                .args(&args)
                .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            one_line_error(out.status.code().unwrap_or(-1), &err, &format!("unsupported GPU architecture '{arch}'"));
            assert!(err.contains("sm_70, sm_72, sm_75, sm_80, sm_86"), "{err}");
        }
    }
    assert!(!exe.exists());
}

// Defect 7: fmt printed modules that check rejects.
#[test]
fn fmt_reports_an_invalid_module_exactly_as_check_does() {
    let d = tmp("fmt");
    let p = d.join("nomain.pir");
    std::fs::write(&p, "func @f(%x: f32[8]) -> (r: f32[8]) {\n  return %x\n}\n").unwrap();
    let (cc, _, check) = pjc(&["check", p.to_str().unwrap()]);
    let (fc, out, fmt) = pjc(&["fmt", p.to_str().unwrap()]);
    assert_eq!((cc, fc), (1, 1), "{check}\n{fmt}");
    assert_eq!(check, fmt);
    assert!(out.is_empty(), "fmt printed: {out}");
    assert!(fmt.contains("no entry function @main"), "{fmt}");
}
