//! Elastic training under real `mpirun` (docs/training.md section 10):
//! `pjc compile --elastic`, an executable that runs on each carried process
//! count and refuses others, and `model.bin supervise`, which survives a
//! killed rank by relaunching on the processes that remain, stops on
//! program errors, gives up after `--max-restarts`, and scales back up when
//! its hostfile grows.
//!
//! Rank deaths are made with the runtime's test hook
//! `PJC_TEST_KILL_RANK=R@S` (rank R kills itself with SIGKILL when S steps
//! are done, in the first launch only; `R@S/every`: in every launch).

mod common;

use pjc_tensor::compare::{assert_close, Tolerance};
use pjc_tensor::Tensor;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::DP_PROGRAM as PROGRAM;

const STEPS: u64 = 40;

fn scratch() -> PathBuf {
    common::scratch("elastic")
}


fn pjc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pjc")).args(args).output().unwrap()
}

fn mpi_env(c: &mut Command) {
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl", "self,vader")
        .env("OMPI_MCA_pml", "ob1")
        .env("OMPI_MCA_orte_tmpdir_base", common::ompi_tmpdir())
        .env("PJC_THREADS", "1")
        .env("RUST_BACKTRACE", "0")
        .env_remove("PJC_TEST_KILL_RANK")
        .env_remove("PJC_TEST_STEP_MS");
}

struct Setup {
    dir: PathBuf,
    /// `--elastic data=1,2,4`.
    exe: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let dir = scratch();
        common::write_dp_inputs(&dir);
        std::fs::write(dir.join("prog.pir"), PROGRAM).unwrap();
        let exe = dir.join("train.bin");
        let o = pjc(&["compile", dir.join("prog.pir").to_str().unwrap(), "--elastic", "data=1,2,4", "-o", exe.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        Setup { dir, exe }
    }

    fn p(&self, n: &str) -> String {
        self.dir.join(n).display().to_string()
    }

    /// The executable's flags: a run of `steps` steps writing `out`.
    fn flags(&self, steps: u64, out: &str, extra: &[&str]) -> Vec<String> {
        common::dp_flags(&self.dir, steps, out, extra)
    }

    fn mpirun(&self, np: usize, exe: &Path, flags: &[String]) -> Output {
        let mut c = Command::new("timeout");
        c.args(["--signal=TERM", "--kill-after=10", "120", "mpirun", "--oversubscribe", "-np", &np.to_string()]).arg(exe).args(flags);
        mpi_env(&mut c);
        let o = c.output().unwrap();
        assert_ne!(o.status.code(), Some(124), "hang: {flags:?}");
        o
    }

    /// `train.bin supervise SUP -- FLAGS` with extra environment `env`.
    fn supervise_cmd(&self, sup: &[&str], flags: &[String], env: &[(&str, &str)]) -> Command {
        let mut c = Command::new("timeout");
        c.args(["--signal=TERM", "--kill-after=10", "300"]).arg(&self.exe).arg("supervise").args(sup).arg("--").args(flags);
        mpi_env(&mut c);
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }

    fn supervise(&self, sup: &[&str], flags: &[String], env: &[(&str, &str)]) -> Output {
        let o = self.supervise_cmd(sup, flags, env).output().unwrap();
        assert_ne!(o.status.code(), Some(124), "hang: {sup:?} {flags:?}");
        o
    }

    fn read(&self, out: &str) -> Vec<(String, Tensor)> {
        pjc_tensor::read_safetensors(&self.dir.join(out)).unwrap()
    }

    fn manifest(&self, ck: &str, step: u64) -> serde_json::Value {
        let t = std::fs::read_to_string(self.dir.join(ck).join(format!("step-{step:08}")).join("manifest.json")).unwrap();
        serde_json::from_str(&t).unwrap()
    }
}

fn bits(ts: &[(String, Tensor)]) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = ts.iter().map(|(n, t)| (n.clone(), pjc_tensor::buf_to_le_bytes(&t.data))).collect();
    v.sort();
    v
}

/// Every carried parameter of `want` matches `got` within the spec's
/// tolerance across process counts (a different count sums gradients in
/// another order): 1e-4 of the largest magnitude, as tests/training.rs.
fn assert_params_close(want: &[(String, Tensor)], got: &[(String, Tensor)]) {
    for n in ["w1", "w2"] {
        let w = &want.iter().find(|(m, _)| m == n).unwrap().1;
        let g = &got.iter().find(|(m, _)| m == n).unwrap_or_else(|| panic!("no {n}")).1;
        assert_close(w, g, Tolerance::of_max(1e-4), n);
    }
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// The supervisor's log lines.
fn log(err: &str) -> Vec<&str> {
    err.lines().filter(|l| l.starts_with("pjc supervise: ") || l.starts_with("error: supervise: ")).collect()
}

#[test]
fn an_elastic_executable_runs_on_each_carried_count_and_refuses_others() {
    let s = Setup::new();
    // A count it does not carry: one line listing those it does, exit 2.
    let o = s.mpirun(3, &s.exe, &s.flags(2, "r3.safetensors", &[]));
    let err = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(
        errors,
        ["error: this executable carries its program for 1, 2 or 4 processes (--elastic data=1,2,4), but 3 processes were started; launch it with mpirun -np 1, 2 or 4"],
        "{err}"
    );
    // On 2 it runs the program compiled for [data=2]: bitwise what a plain
    // --mesh data=2 build computes.
    let plain = s.dir.join("plain2.bin");
    let o = pjc(&["compile", &s.p("prog.pir"), "--mesh", "data=2", "-o", plain.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let o = s.mpirun(2, &s.exe, &s.flags(6, "e2.safetensors", &[]));
    assert!(o.status.success(), "{}", text(&o));
    let o = s.mpirun(2, &plain, &s.flags(6, "p2.safetensors", &[]));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(bits(&s.read("e2.safetensors")), bits(&s.read("p2.safetensors")));
    // On 4 and on 1 (no mpirun needed) it runs too, and agrees within the tolerance.
    let o = s.mpirun(4, &s.exe, &s.flags(6, "e4.safetensors", &[]));
    assert!(o.status.success(), "{}", text(&o));
    let mut one = Command::new(&s.exe);
    one.args(s.flags(6, "e1.safetensors", &[])).env("PJC_THREADS", "1");
    let o = one.output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_params_close(&s.read("e4.safetensors"), &s.read("e2.safetensors"));
    assert_params_close(&s.read("e4.safetensors"), &s.read("e1.safetensors"));

    // Flag errors: one line, exit 2.
    let prog = s.p("prog.pir");
    let out = s.p("x.bin");
    for (args, want) in [
        (vec!["--elastic", "model=1,2"], "the module's mesh has no axis 'model' (its axes: data)"),
        (vec!["--elastic", "data=2,2"], "lists size 2 twice"),
        (vec!["--elastic", "data=0,2"], "expected AXIS=N1,N2,... with positive sizes"),
        (vec!["--elastic", "data=2", "--emit", "plan"], "--elastic applies to executables (-o OUT), not to --emit"),
    ] {
        let mut a = vec!["compile", prog.as_str(), "-o", out.as_str()];
        a.extend(args.iter().copied());
        let o = pjc(&a);
        let err = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("error: ") && err.contains(want), "{args:?}: {err}");
    }
    // A size the program cannot be partitioned for says which size.
    let o = pjc(&["compile", &prog, "--elastic", "data=4,3", "-o", &out]);
    let err = text(&o);
    assert!(!o.status.success() && err.contains("data=3"), "{err}");
    let _ = std::fs::remove_dir_all(&s.dir);
}

#[test]
fn a_supervised_run_survives_a_killed_rank_and_finishes_on_two_processes() {
    let s = Setup::new();
    // The uninterrupted 4-process run.
    let o = s.mpirun(4, &s.exe, &s.flags(STEPS, "full.safetensors", &[]));
    assert!(o.status.success(), "{}", text(&o));
    let full = s.read("full.safetensors");

    // Rank 1 of 4 dies when 10 steps are done; the newest checkpoint is step 8.
    let ck = s.p("ck");
    let flags = s.flags(STEPS, "sup.safetensors", &["--checkpoint", &ck, "--checkpoint-every", "4"]);
    let o = s.supervise(&["--np", "4", "--mpirun", "--oversubscribe"], &flags, &[("PJC_TEST_KILL_RANK", "1@10")]);
    let err = text(&o);
    assert!(o.status.success(), "exit {:?}:\n{err}", o.status.code());
    let lines = log(&err);
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].starts_with("pjc supervise: launch 0 on 4 processes (this executable runs on 1, 2 or 4): starting at step 0"), "{err}");
    assert_eq!(
        lines[1],
        format!("pjc supervise: restart 1 of at most 3: rank 1 died (signal 9 (Killed)); 3 processes left, relaunching on 2 processes, resuming from step 8 of 40 ('{ck}/step-00000008')"),
        "{err}"
    );
    assert_eq!(lines[2], "pjc supervise: done: step 40 of 40 on 2 processes after 1 restart", "{err}");
    // The relaunched job itself says where it resumed.
    assert!(err.contains(&format!("pjc: resuming from '{ck}/step-00000008' (step 8 of 40, written by 4 processes on mesh [data=4])")), "{err}");
    // The final checkpoint: written by 2 processes, at step 40, with the data
    // stream where 40 steps leave it.
    let m = s.manifest("ck", STEPS);
    assert_eq!((m["step"].as_u64(), m["devices"].as_u64()), (Some(STEPS), Some(2)), "{m}");
    assert_eq!(m["data"]["next_example"].as_u64(), Some(STEPS * 128 % 200), "{m}");

    // Its parameters equal the uninterrupted 4-process run's within the tolerance.
    let sup = s.read("sup.safetensors");
    assert_params_close(&full, &sup);
    // And exactly what 8 steps on 4 processes then a resume on 2 compute: the
    // step count and the data position continued exactly.
    let ck2 = s.p("ck-manual");
    let o = s.mpirun(4, &s.exe, &s.flags(8, "m8.safetensors", &["--checkpoint", &ck2]));
    assert!(o.status.success(), "{}", text(&o));
    let o = s.mpirun(2, &s.exe, &s.flags(STEPS, "manual.safetensors", &["--checkpoint", &ck2, "--resume"]));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(bits(&s.read("manual.safetensors")), bits(&sup));
    let _ = std::fs::remove_dir_all(&s.dir);
}

#[test]
fn a_program_error_is_not_retried_and_repeated_failures_stop() {
    let s = Setup::new();
    // A missing input: the runtime's error, once, and no relaunch.
    let ck = s.p("ck");
    let mut flags = s.flags(STEPS, "o.safetensors", &["--checkpoint", &ck]);
    flags[1] = format!("w1={}", s.p("missing.npy"));
    let o = s.supervise(&["--np", "4", "--mpirun", "--oversubscribe"], &flags, &[]);
    let err = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().filter(|l| l.starts_with("error: input 'w1': cannot read")).count(), 1, "{err}");
    let lines = log(&err);
    assert_eq!(lines.len(), 2, "{err}");
    assert_eq!(lines[1], "pjc supervise: the job failed with exit status 2, not because a rank died (the error is above): not restarting");

    // Rank 1 dies in every launch, before any checkpoint: one restart (on 2
    // processes, from step 0), then the supervisor gives up.
    let flags = s.flags(STEPS, "o.safetensors", &["--checkpoint", &ck, "--checkpoint-every", "10"]);
    let o = s.supervise(&["--np", "4", "--max-restarts", "1", "--mpirun", "--oversubscribe"], &flags, &[("PJC_TEST_KILL_RANK", "1@3/every")]);
    let err = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let lines = log(&err);
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[1].starts_with("pjc supervise: restart 1 of at most 1: rank 1 died (signal 9 (Killed)); 3 processes left, relaunching on 2 processes, starting again at step 0"), "{err}");
    assert_eq!(lines[2], "error: supervise: rank 1 died (signal 9 (Killed)); giving up after 1 restart (--max-restarts 1)", "{err}");

    // --min-np 3: after the first loss only 2 would fit.
    let o = s.supervise(&["--np", "4", "--min-np", "3", "--mpirun", "--oversubscribe"], &flags, &[("PJC_TEST_KILL_RANK", "1@3")]);
    let err = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(
        log(&err).last().copied(),
        Some("error: supervise: rank 1 died (signal 9 (Killed)); 3 processes left, and this executable runs on 1, 2 or 4 processes with --min-np 3: not restarting"),
        "{err}"
    );

    // Flags the supervisor needs.
    let o = s.supervise(&["--np", "4"], &s.flags(STEPS, "o.safetensors", &[]), &[]);
    let err = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error: supervise: the run needs loop mode with checkpoints"), "{err}");
    let _ = std::fs::remove_dir_all(&s.dir);
}

#[test]
fn a_supervised_run_scales_up_when_its_hostfile_grows() {
    let s = Setup::new();
    let o = s.mpirun(4, &s.exe, &s.flags(STEPS, "full.safetensors", &[]));
    assert!(o.status.success(), "{}", text(&o));
    let hosts = s.p("hosts");
    std::fs::write(&hosts, "localhost slots=2\n").unwrap();
    let ck = s.p("ck");
    let flags = s.flags(STEPS, "grown.safetensors", &["--checkpoint", &ck, "--checkpoint-every", "4"]);
    let mpirun = format!("--oversubscribe --hostfile {hosts}");
    // Slow steps (50 ms) leave the supervisor time to see the change.
    let mut child = s
        .supervise_cmd(&["--np", "4", "--mpirun", &mpirun], &flags, &[("PJC_TEST_STEP_MS", "50")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = String::new();
    let mut r = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while r.read_line(&mut line).unwrap() > 0 {
        err.push_str(&line);
        if line.starts_with("pjc supervise: launch 0") {
            assert!(line.starts_with("pjc supervise: launch 0 on 2 processes"), "{line}");
            // Two more slots.
            std::fs::write(&hosts, "localhost slots=4\n").unwrap();
        }
        line.clear();
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{err}");
    let lines = log(&err);
    assert!(lines.iter().any(|l| l.starts_with("pjc supervise: the hostfile now has 4 slots: scaling up from 2 to 4 processes after the next checkpoint")), "{err}");
    assert!(lines.iter().any(|l| l.starts_with("pjc supervise: scaling up: relaunching on 4 processes (was 2), resuming from step ")), "{err}");
    assert_eq!(lines.last().copied(), Some("pjc supervise: done: step 40 of 40 on 4 processes after 0 restarts"), "{err}");
    assert_eq!(s.manifest("ck", STEPS)["devices"].as_u64(), Some(4));
    assert_params_close(&s.read("full.safetensors"), &s.read("grown.safetensors"));
    let _ = std::fs::remove_dir_all(&s.dir);
}
