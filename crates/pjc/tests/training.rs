//! Training at scale with compiled executables under real `mpirun`:
//! checkpoints, a rank killed mid-run, resume (same and other process
//! counts), damaged checkpoints refused, traces, `--list-devices`.

mod common;

use pjc_ir::{DType, TensorType};
use pjc_tensor::compare::{assert_close, Tolerance};
use pjc_tensor::Tensor;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A data-parallel regression step heavy enough (a few ms per step) that a
/// rank can be killed while the run is in progress.
use common::DP_PROGRAM as PROGRAM;

const STEPS: u64 = 40;

fn scratch() -> PathBuf {
    common::scratch("training")
}

use common::random;

fn compile(dir: &Path, name: &str, mesh: &str) -> PathBuf {
    let prog = dir.join("prog.pir");
    std::fs::write(&prog, PROGRAM).unwrap();
    let exe = dir.join(name);
    let o = Command::new(env!("CARGO_BIN_EXE_pjc")).arg("compile").arg(&prog).args(["--mesh", mesh, "-o"]).arg(&exe).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    exe
}

fn mpirun(np: usize, exe: &Path, args: &[String]) -> Command {
    let mut c = Command::new("timeout");
    c.args(["--signal=TERM", "--kill-after=10", "120", "mpirun", "--oversubscribe", "-np", &np.to_string()]).arg(exe).args(args);
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl", "self,vader")
        .env("OMPI_MCA_pml", "ob1")
        .env("OMPI_MCA_orte_tmpdir_base", common::ompi_tmpdir())
        .env("PJC_THREADS", "1")
        .env("RUST_BACKTRACE", "0");
    c
}

fn run(np: usize, exe: &Path, args: &[String]) -> Output {
    let o = mpirun(np, exe, args).output().unwrap();
    assert_ne!(o.status.code(), Some(124), "hang: {args:?}");
    o
}

struct Setup {
    dir: PathBuf,
    exe4: PathBuf,
    exe2: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let dir = scratch();
        common::write_dp_inputs(&dir);
        let exe4 = compile(&dir, "train4.bin", "data=4");
        let exe2 = compile(&dir, "train2.bin", "data=2");
        Setup { dir, exe4, exe2 }
    }

    /// The inputs and the 4-process build only.
    fn four() -> Setup {
        let dir = scratch();
        common::write_dp_inputs(&dir);
        let exe4 = compile(&dir, "train4.bin", "data=4");
        Setup { dir, exe2: exe4.clone(), exe4 }
    }

    fn p(&self, n: &str) -> String {
        self.dir.join(n).display().to_string()
    }

    fn args(&self, steps: u64, out: &str, extra: &[&str]) -> Vec<String> {
        common::dp_flags(&self.dir, steps, out, extra)
    }

    fn read(&self, out: &str) -> Vec<(String, Tensor)> {
        pjc_tensor::read_safetensors(&self.dir.join(out)).unwrap()
    }
}

fn bits(ts: &[(String, Tensor)]) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = ts.iter().map(|(n, t)| (n.clone(), pjc_tensor::buf_to_le_bytes(&t.data))).collect();
    v.sort();
    v
}

/// Every result of `want` has a same-named one in `got` matching it within `tol`.
fn assert_all_close(want: &[(String, Tensor)], got: &[(String, Tensor)], tol: Tolerance) {
    for (n, w) in want {
        let g = &got.iter().find(|(m, _)| m == n).unwrap_or_else(|| panic!("no {n}")).1;
        assert_close(w, g, tol, n);
    }
}

/// Pids of the processes running executable `exe` (not mpirun itself).
fn ranks_of(exe: &Path) -> Vec<u32> {
    let want = std::fs::canonicalize(exe).unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| p == want))
        .collect()
}

#[test]
fn checkpoint_kill_resume_reshard_and_refuse_damage() {
    let s = Setup::new();
    // The uninterrupted run.
    let o = run(4, &s.exe4, &s.args(STEPS, "full.safetensors", &[]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let full = s.read("full.safetensors");

    // A run whose rank is killed after its second checkpoint.
    let ck = s.p("ck");
    let child = mpirun(4, &s.exe4, &s.args(STEPS, "crashed.safetensors", &["--checkpoint", &ck, "--checkpoint-every", "4"]))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let second = Path::new(&ck).join("step-00000008");
    while !second.exists() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(second.exists(), "no checkpoint at step 8 after 60 s");
    let victims = ranks_of(&s.exe4);
    let killed = if let Some(&pid) = victims.get(1) {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        true
    } else {
        false
    };
    let t_kill = Instant::now();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let finished = Path::new(&ck).join(format!("step-{STEPS:08}")).exists();
    eprintln!("killed a rank: {killed}; the run finished anyway: {finished}; it stopped {:?} after the kill with {:?}:\n{err}", t_kill.elapsed(), out.status.code());
    if killed && !finished {
        // The job stopped, quickly, with a failure status that names the rank.
        assert!(!out.status.success(), "the job survived a killed rank:\n{err}");
        assert!(t_kill.elapsed() < Duration::from_secs(30), "the job took {:?} to stop", t_kill.elapsed());
        assert!(err.contains("rank") || err.contains("process"), "no rank named:\n{err}");
    }
    // Resume on 4 processes: bitwise the uninterrupted result.
    let ckdir = PathBuf::from(&ck);
    let snapshot = s.p("ck-snapshot");
    let _ = Command::new("cp").args(["-r", &ck, &snapshot]).status();
    let o = run(4, &s.exe4, &s.args(STEPS, "resumed.safetensors", &["--checkpoint", &ck, "--checkpoint-every", "4", "--resume"]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("resuming from"), "{err}");
    assert_eq!(bits(&s.read("resumed.safetensors")), bits(&full), "resume on the same process count must be bitwise exact");
    assert!(ckdir.join(format!("step-{STEPS:08}")).join("manifest.json").exists());

    // 4 -> 2: the snapshot (written by 4 ranks) resumed by the 2-process build.
    let o = run(2, &s.exe2, &s.args(STEPS, "r42.safetensors", &["--checkpoint", &snapshot, "--resume"]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("written by 4 processes"), "{err}");
    // Another process count sums in another order: within 1e-4 of the largest magnitude.
    assert_all_close(&full, &s.read("r42.safetensors"), Tolerance::of_max(1e-4));

    // 2 -> 4: 12 steps on 2 processes, then on to the end on 4.
    let ck2 = s.p("ck2");
    let o = run(2, &s.exe2, &s.args(12, "part.safetensors", &["--checkpoint", &ck2]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(4, &s.exe4, &s.args(STEPS, "r24.safetensors", &["--checkpoint", &ck2, "--resume"]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("step 12 of 40") && err.contains("written by 2 processes"), "{err}");
    assert_all_close(&full, &s.read("r24.safetensors"), Tolerance::of_max(1e-4));

    // Damage: the newest checkpoint of a copy has a flipped byte, the one
    // before it a missing file: both refused, the third newest used, and the
    // result is still bitwise the uninterrupted one.
    let ck3 = s.p("ck3");
    let o = run(4, &s.exe4, &s.args(12, "p3.safetensors", &["--checkpoint", &ck3, "--checkpoint-every", "4"]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let f = Path::new(&ck3).join("step-00000012/rank0.safetensors");
    let mut b = std::fs::read(&f).unwrap();
    let n = b.len();
    b[n - 5] ^= 0x40;
    std::fs::write(&f, b).unwrap();
    std::fs::remove_file(Path::new(&ck3).join("step-00000008/rank3.safetensors")).unwrap();
    let o = run(4, &s.exe4, &s.args(STEPS, "r3.safetensors", &["--checkpoint", &ck3, "--resume"]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("step-00000012") && err.contains("checksum"), "the corrupted checkpoint is named:\n{err}");
    assert!(err.contains("step-00000008") && err.contains("rank3.safetensors"), "the torn checkpoint is named:\n{err}");
    assert!(err.contains("resuming from") && err.contains("step-00000004"), "{err}");
    assert_eq!(bits(&s.read("r3.safetensors")), bits(&full));

    // Only damaged checkpoints: a clear error, exit 2.
    let ck4 = s.p("ck4");
    let o = run(4, &s.exe4, &s.args(4, "p4.safetensors", &["--checkpoint", &ck4]));
    assert!(o.status.success());
    std::fs::write(Path::new(&ck4).join("step-00000004/manifest.json"), "{").unwrap();
    let o = run(4, &s.exe4, &s.args(STEPS, "r4.safetensors", &["--checkpoint", &ck4, "--resume"]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no complete checkpoint"), "{err}");

    // --keep 2 keeps the newest two.
    let ck5 = s.p("ck5");
    let o = run(4, &s.exe4, &s.args(12, "p5.safetensors", &["--checkpoint", &ck5, "--checkpoint-every", "2", "--keep", "2"]));
    assert!(o.status.success());
    let mut left: Vec<String> = std::fs::read_dir(&ck5).unwrap().flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect();
    left.sort();
    assert_eq!(left, vec!["step-00000010", "step-00000012"]);
    let _ = std::fs::remove_dir_all(&s.dir);
}

#[test]
fn trace_has_every_rank_and_collective() {
    let s = Setup::new();
    let trace = s.p("trace.json");
    let o = run(4, &s.exe4, &s.args(3, "t.safetensors", &["--trace", &trace, "--checkpoint", &s.p("tck")]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).expect("valid JSON");
    let events = doc["traceEvents"].as_array().expect("traceEvents");
    // The plan's collectives, from --emit plan.
    let plan = Command::new(env!("CARGO_BIN_EXE_pjc")).arg("compile").arg(s.dir.join("prog.pir")).args(["--mesh", "data=4", "--emit", "plan"]).output().unwrap();
    let plan = String::from_utf8_lossy(&plan.stdout);
    let collectives: Vec<&str> = plan.lines().filter_map(|l| l.trim().strip_prefix("collective ")).map(|l| l.split(' ').next().unwrap()).collect();
    assert!(!collectives.is_empty(), "{plan}");
    for rank in 0..4u64 {
        let mine: Vec<&serde_json::Value> = events.iter().filter(|e| e["pid"].as_u64() == Some(rank)).collect();
        assert!(mine.iter().any(|e| e["ph"] == "M" && e["name"] == "process_name"), "rank {rank} has no track name");
        for e in mine.iter().filter(|e| e["ph"] == "X") {
            assert!(e["ts"].as_f64().is_some() && e["dur"].as_f64().is_some_and(|d| d >= 0.0) && e["name"].is_string(), "{e}");
        }
        let count = |cat: &str| mine.iter().filter(|e| e["cat"] == cat).count();
        assert_eq!(count("step"), 3, "rank {rank}: one event per step");
        assert!(count("kernel") > 0 && count("gemm") > 0, "rank {rank}");
        assert!(count("io") >= 2, "rank {rank}: input reading and the checkpoint");
        // Every collective of the program, in every step, with its bytes.
        for c in &collectives {
            let n = mine.iter().filter(|e| e["cat"] == "collective" && e["name"] == *c && e["args"]["bytes"].as_u64().is_some_and(|b| b > 0)).count();
            assert!(n >= 3, "rank {rank}: collective {c} appears {n} times");
        }
    }
    let _ = std::fs::remove_dir_all(&s.dir);
}

#[test]
fn list_devices_names_every_rank() {
    let s = Setup::new();
    let o = run(4, &s.exe4, &["--list-devices".to_string()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "mesh [data=4]", "{out}");
    for r in 0..4 {
        let l = lines.iter().find(|l| l.starts_with(&format!("rank {r}: "))).unwrap_or_else(|| panic!("no rank {r}:\n{out}"));
        assert!(l.contains(&format!("local rank {r}")) && l.contains(&format!("mesh [data={r}]")), "{l}");
        assert!(l.contains("CPU: ") || l.contains("GPU "), "{l}");
    }
    // Without running the program: no outputs, no inputs needed.
    let o = Command::new(env!("CARGO_BIN_EXE_pjc")).arg("devices").output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && out.contains("cpu: ") && out.contains("gpus: ") || out.contains("GPU 0"), "{out}");
    let _ = std::fs::remove_dir_all(&s.dir);
    let _ = TensorType::new(DType::F32, vec![]);
}

/// CRC-32 (IEEE), as the checkpoint manifest records it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xedb8_8320 } else { c >> 1 };
        }
    }
    !c
}

/// Replaces `file` of checkpoint `step_dir` with `bytes`, and updates the
/// manifest's size and checksum to match (damage no checksum can see).
fn replace_shard(step_dir: &Path, file: &str, bytes: &[u8]) {
    std::fs::write(step_dir.join(file), bytes).unwrap();
    let mpath = step_dir.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&mpath).unwrap()).unwrap();
    m["files"][file]["bytes"] = serde_json::json!(bytes.len());
    m["files"][file]["crc32"] = serde_json::json!(crc32(bytes));
    std::fs::write(&mpath, serde_json::to_string_pretty(&m).unwrap()).unwrap();
}

#[test]
fn resume_skips_shards_of_the_wrong_shape_and_garbage_with_a_matching_checksum() {
    let s = Setup::four();
    let ck = s.p("ck");
    let o = run(4, &s.exe4, &s.args(12, "p.safetensors", &["--checkpoint", &ck, "--checkpoint-every", "4"]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ck = PathBuf::from(ck);
    // Step 12: a valid safetensors file whose w1 has the wrong shape.
    let st = |w1: Vec<usize>| {
        let mut seed = 5u64;
        pjc_tensor::safetensors_bytes(&[("w1".into(), random(w1, &mut seed, 0.1)), ("w2".into(), random(vec![256, 32], &mut seed, 0.1))]).unwrap()
    };
    replace_shard(&ck.join("step-00000012"), "rank0.safetensors", &st(vec![128, 256]));
    // Step 8: rank 0's file cut in half, rank 1's garbage.
    let half = std::fs::read(ck.join("step-00000008/rank0.safetensors")).unwrap();
    replace_shard(&ck.join("step-00000008"), "rank0.safetensors", &half[..half.len() / 2]);
    replace_shard(&ck.join("step-00000008"), "rank1.safetensors", b"garbage garbage garbage garbage");
    let o = run(4, &s.exe4, &s.args(12, "r.safetensors", &["--checkpoint", ck.to_str().unwrap(), "--resume"]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "exit {:?}:\n{err}", o.status.code());
    assert!(!err.contains("panicked"), "{err}");
    let line = |step: &str| err.lines().find(|l| l.starts_with("pjc: not loading checkpoint") && l.contains(step)).unwrap_or_else(|| panic!("{step} not skipped:\n{err}"));
    assert!(line("step-00000012").ends_with("rank0.safetensors's block of 'w1' is f32[128,256], its manifest says f32[256,256]"), "{err}");
    assert!(line("step-00000008").contains("is not a valid .safetensors file"), "{err}");
    assert!(err.contains("resuming from") && err.contains("step-00000004"), "{err}");
    // Steps 4..12 again: bitwise the uninterrupted run's results.
    assert_eq!(bits(&s.read("r.safetensors")), bits(&s.read("p.safetensors")));
    let _ = std::fs::remove_dir_all(&s.dir);
}

#[test]
fn a_failed_checkpoint_leaves_no_temporary_directory() {
    let s = Setup::four();
    // A file where the checkpoint of step 4 is to be published: the rename
    // fails after every rank has written its shard.
    let ck = PathBuf::from(s.p("ck"));
    std::fs::create_dir_all(&ck).unwrap();
    std::fs::write(ck.join("step-00000004"), b"in the way").unwrap();
    let o = run(4, &s.exe4, &s.args(4, "p.safetensors", &["--checkpoint", ck.to_str().unwrap()]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && !err.contains("panicked"), "{err}");
    assert_eq!(err.lines().filter(|l| l.starts_with("error:")).count(), 1, "{err}");
    assert!(err.contains("step-00000004"), "{err}");
    let left: Vec<String> = std::fs::read_dir(&ck).unwrap().flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect();
    assert_eq!(left, ["step-00000004"], "a temporary checkpoint directory is left");
    assert_eq!(std::fs::read(ck.join("step-00000004")).unwrap(), b"in the way");
    let _ = std::fs::remove_dir_all(&s.dir);
}
