//! `./model.bin supervise --np N [--min-np M] [--max-restarts K] [--restart-delay S] [--mpirun "ARGS"] -- FLAGS...`:
//! elastic training (docs/training.md section 10).
//!
//! The supervisor is the executable itself, run without `mpirun`; it never
//! initializes MPI. It launches `mpirun -np N ARGS this-executable FLAGS`
//! (loop mode with `--checkpoint DIR`), passes the job's output through, and
//! reads what `mpirun` reports when the job ends:
//!
//! - exit 0: the run reached `--steps`; done.
//! - a rank ended by a signal that a relaunch can survive (SIGKILL: the OOM
//!   killer, `kill -9`, a node agent; SIGTERM, SIGHUP: a scheduler), from
//!   `mpirun`'s `process rank R ... exited on signal S` line, or a node's
//!   daemon lost: **a rank died**. The supervisor relaunches on the largest
//!   process count the executable carries that fits the processes still
//!   available (N minus the lost ranks; with a hostfile in ARGS that
//!   changed since the launch, its slots), so the run continues from the
//!   newest intact checkpoint (every launch gets `--resume`); at most
//!   `--max-restarts` times, and never below `--min-np`.
//! - anything else (the runtime's exit 1 or 2 after its `error:` line, a
//!   rank that crashed with SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT, a
//!   panic): a program or input error, which a relaunch would repeat; the
//!   supervisor stops with that exit status.
//!
//! Growing back: with a hostfile, a change that gives room for a larger
//! carried count (up to N) makes the supervisor stop the job right after its
//! next checkpoint is published and relaunch it on the larger count.

use crate::checkpoint;
use crate::exe::{carried_views, load, process_counts, ExeArgs};
use crate::payload::{or_list, Payload};
use clap::Parser;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Flags of `model.bin supervise`.
#[derive(Parser, Debug)]
#[command(
    name = "supervise",
    about = "Run this executable under mpirun in loop mode with checkpoints, and relaunch it on the processes that remain when a rank dies (docs/training.md).",
    override_usage = "model.bin supervise --np N [--min-np M] [--max-restarts K] [--restart-delay S] [--mpirun \"ARGS\"] -- FLAGS..."
)]
pub struct SuperviseArgs {
    /// Processes to start with, and the most the run uses.
    #[arg(long, value_name = "N")]
    pub np: u64,
    /// Stop instead of continuing on fewer than M processes.
    #[arg(long, value_name = "M", default_value_t = 1)]
    pub min_np: u64,
    /// How many times a job whose rank died is relaunched before giving up.
    #[arg(long, value_name = "K", default_value_t = 3)]
    pub max_restarts: u32,
    /// Seconds to wait after a rank died before re-reading the hostfile and
    /// relaunching (time for a node health check to update it).
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    pub restart_delay: f64,
    /// More mpirun arguments, split at spaces: "--oversubscribe", "--hostfile hosts", ...
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub mpirun: Option<String>,
    /// The executable's flags, after `--`: loop mode (--steps N) with --checkpoint DIR.
    #[arg(last = true, value_name = "FLAGS")]
    pub flags: Vec<String>,
}

/// Signals after which a relaunch can succeed: the process was ended from
/// outside (the OOM killer, `kill -9`, a scheduler or node agent).
const SURVIVABLE: [i32; 3] = [libc::SIGKILL, libc::SIGTERM, libc::SIGHUP];

/// How one launch ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// mpirun exited 0.
    Finished,
    /// The supervisor stopped it after a checkpoint, to scale up.
    Stopped,
    /// Ranks ended by a survivable signal (rank, what mpirun said), and
    /// lost node daemons.
    RanksDied { ranks: Vec<(u64, String)>, daemons: usize },
    /// A rank crashed (a fault in the program: a relaunch would repeat it).
    Crashed { rank: u64, signal: String, status: i32 },
    /// Any other failure: its exit status.
    Failed(i32),
}

/// `mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).`
/// → (1, 9, "9 (Killed)").
fn signal_line(l: &str) -> Option<(u64, i32, String)> {
    let rank = l.split("process rank ").nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
    let sig = l.split("exited on signal ").nth(1)?;
    let text = sig.trim_end().trim_end_matches('.').to_string();
    let num = sig.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
    Some((rank, num, text))
}

/// A line in which mpirun says it lost a node's daemon (OpenMPI 4's ORTE,
/// 5's PRRTE).
fn daemon_lost(l: &str) -> bool {
    l.contains("lost communication with a remote daemon") || l.contains("daemon has unexpectedly failed")
}

/// Classifies a finished launch from mpirun's exit status and the lines of
/// its stderr that matter (see the module doc).
pub fn classify(status: i32, lines: &[String]) -> Outcome {
    if status == 0 {
        return Outcome::Finished;
    }
    let mut ranks: Vec<(u64, String)> = vec![];
    let mut crash = None;
    let mut daemons = 0;
    for l in lines {
        if let Some((r, sig, text)) = signal_line(l) {
            if SURVIVABLE.contains(&sig) {
                if !ranks.iter().any(|(q, _)| *q == r) {
                    ranks.push((r, text));
                }
            } else if crash.is_none() {
                crash = Some((r, text));
            }
        } else if daemon_lost(l) {
            daemons += 1;
        }
    }
    match crash {
        Some((rank, signal)) => Outcome::Crashed { rank, signal, status },
        None if !ranks.is_empty() || daemons > 0 => Outcome::RanksDied { ranks, daemons },
        None => Outcome::Failed(status),
    }
}

/// The `--hostfile`/`--machinefile` named in mpirun's arguments.
pub fn hostfile_of(args: &[String]) -> Option<PathBuf> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let a = a.as_str();
        for flag in ["--hostfile", "-hostfile", "--machinefile", "-machinefile"] {
            if a == flag {
                return it.next().map(PathBuf::from);
            }
            if let Some(v) = a.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
                return Some(PathBuf::from(v));
            }
        }
    }
    None
}

/// The slots of an OpenMPI hostfile: per line `HOST [slots=N] ...`, 1 slot
/// when it gives none; `#` starts a comment.
pub fn hostfile_slots(text: &str) -> u64 {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("slots=").and_then(|n| n.parse::<u64>().ok())).unwrap_or(1))
        .sum()
}

/// The largest of `counts` that is at most `available`.
pub fn best_fit(counts: &[u64], available: u64) -> Option<u64> {
    counts.iter().copied().filter(|&c| c <= available).max()
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A supervisor failure: one line, exit 2.
fn fail(m: String) -> ExitCode {
    eprintln!("error: supervise: {m}");
    ExitCode::from(2)
}

/// The signal the supervisor was asked to stop with (0: none).
static STOP: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP.store(sig, Ordering::SeqCst);
}

fn log(m: &str) {
    eprintln!("pjc supervise: {m}");
}

/// Where and how far the run is.
struct Job<'a> {
    payload: &'a Payload,
    counts: Vec<u64>,
    dir: PathBuf,
    steps: u64,
    mpirun_args: Vec<String>,
    hostfile: Option<PathBuf>,
    flags: Vec<String>,
    exe: PathBuf,
}

impl Job<'_> {
    /// The newest checkpoint the program for `np` processes would load
    /// (the runtime's own check), if any.
    fn newest_intact(&self, np: u64) -> Option<u64> {
        let p = load(self.payload, np as usize).ok()?;
        let views = carried_views(&p);
        checkpoint::list(&self.dir).into_iter().rev().find(|&s| checkpoint::validate(&checkpoint::step_dir(&self.dir, s), &views).is_ok())
    }

    fn resume_text(&self, np: u64, first: bool) -> String {
        match self.newest_intact(np) {
            Some(s) => format!("resuming from step {s} of {} ('{}')", self.steps, checkpoint::step_dir(&self.dir, s).display()),
            None => format!("starting {}at step 0 (no intact checkpoint in '{}' yet)", if first { "" } else { "again " }, self.dir.display()),
        }
    }

    fn hostfile_text(&self) -> Option<String> {
        self.hostfile.as_ref().map(|h| std::fs::read_to_string(h).unwrap_or_default())
    }

    /// Launch `launch` on `np` processes, always with `--resume` (the first
    /// launch too: restarting the supervisor continues the run).
    fn spawn(&self, np: u64, launch: u32) -> Result<Child, String> {
        let launcher = std::env::var("PJC_MPIRUN").unwrap_or_else(|_| "mpirun".into());
        let mut c = Command::new(&launcher);
        c.args(&self.mpirun_args).arg("-np").arg(np.to_string()).arg(&self.exe).args(&self.flags);
        if !self.flags.iter().any(|f| f == "--resume") {
            c.arg("--resume");
        }
        c.env("PJC_SUPERVISE_LAUNCH", launch.to_string()).stdin(Stdio::null()).stderr(Stdio::piped());
        c.spawn().map_err(|e| format!("cannot run '{launcher}': {}", crate::error::io_reason(&e)))
    }

    /// Runs one launch to its end: passes its stderr through, watches the
    /// hostfile for growth (`grow_to`: the count it would scale up to) and
    /// stops the job after the next checkpoint when it grew.
    fn watch(&self, mut child: Child, np: u64, max_np: u64, launched_hosts: &Option<String>) -> Result<(Outcome, Option<u64>), String> {
        let stderr = child.stderr.take().expect("piped");
        let kept: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = kept.clone();
        let reader = std::thread::spawn(move || {
            let mut r = std::io::BufReader::new(stderr);
            let mut buf = vec![];
            let mut out = std::io::stderr();
            while r.read_until(b'\n', &mut buf).map_or(false, |n| n > 0) {
                let _ = out.write_all(&buf);
                let l = String::from_utf8_lossy(&buf);
                if signal_line(&l).is_some() || daemon_lost(&l) {
                    sink.lock().expect("not poisoned").push(l.trim_end().to_string());
                }
                buf.clear();
            }
        });
        let mut grow: Option<(u64, Option<u64>)> = None;
        let mut stopped = false;
        let status = loop {
            if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
                break s;
            }
            let sig = STOP.load(Ordering::SeqCst);
            if sig != 0 {
                // SAFETY: signalling our own child.
                unsafe { libc::kill(child.id() as i32, sig) };
                let _ = child.wait();
                let _ = reader.join();
                return Err(format!("stopped by signal {sig}; the job was stopped too (the same command continues it from its newest checkpoint)"));
            }
            if grow.is_none() && !stopped {
                if let (Some(now), Some(then)) = (self.hostfile_text(), launched_hosts) {
                    if &now != then {
                        let slots = hostfile_slots(&now);
                        if let Some(to) = best_fit(&self.counts, slots.min(max_np)).filter(|&to| to > np) {
                            let newest = checkpoint::list(&self.dir).last().copied();
                            log(&format!(
                                "the hostfile now has {}: scaling up from {np} to {to} processes after the next checkpoint",
                                plural(slots, "slot", "slots")
                            ));
                            grow = Some((to, newest));
                        }
                    }
                }
            }
            if let Some((_, seen)) = grow {
                if !stopped && checkpoint::list(&self.dir).last().copied() > seen {
                    // SAFETY: signalling our own child; mpirun ends its ranks.
                    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
                    stopped = true;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let _ = reader.join();
        use std::os::unix::process::ExitStatusExt;
        let code = status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
        let lines = kept.lock().expect("not poisoned").clone();
        let outcome = if stopped && code != 0 { Outcome::Stopped } else { classify(code, &lines) };
        Ok((outcome, grow.map(|g| g.0)))
    }
}

/// `model.bin supervise ...`: `args` are the words after `supervise`.
pub fn main(args: &[String]) -> ExitCode {
    let a = match SuperviseArgs::try_parse_from(std::iter::once("model.bin supervise".to_string()).chain(args.iter().cloned())) {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    if crate::world::launched_by_mpirun() {
        return fail("it launches mpirun itself: run `./model.bin supervise ...` without mpirun".into());
    }
    let payload = match crate::exe::read_payload() {
        Ok(p) => p,
        Err(code) => return code,
    };
    let flags = match ExeArgs::try_parse_from(std::iter::once("model.bin".to_string()).chain(a.flags.iter().cloned())) {
        Ok(f) => f,
        Err(e) => return fail(format!("the executable's flags after `--`: {}", e.to_string().lines().next().unwrap_or("").trim_start_matches("error: "))),
    };
    let (Some(dir), Some(steps)) = (flags.checkpoint.clone(), flags.steps) else {
        return fail("the run needs loop mode with checkpoints: give --steps N and --checkpoint DIR among its flags, after `--`".into());
    };
    if flags.list_devices {
        return fail("--list-devices runs nothing: run it with mpirun".into());
    }
    let counts = match process_counts(&payload) {
        Ok(c) => c,
        Err(e) => return fail(e.to_string()),
    };
    if a.np == 0 || a.min_np == 0 {
        return fail("--np and --min-np must be at least 1".into());
    }
    if !(a.restart_delay >= 0.0 && a.restart_delay.is_finite()) {
        return fail("--restart-delay must be a number of seconds, 0 or more".into());
    }
    let mpirun_args: Vec<String> = a.mpirun.as_deref().unwrap_or("").split_whitespace().map(String::from).collect();
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(format!("cannot find this executable: {e}")),
    };
    let hostfile = hostfile_of(&mpirun_args);
    let job = Job { payload: &payload, counts, dir, steps, mpirun_args, hostfile, flags: a.flags.clone(), exe };
    // SAFETY: the handler only stores into an atomic.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    supervise(&job, &a)
}

fn supervise(job: &Job, a: &SuperviseArgs) -> ExitCode {
    let carried = or_list(&job.counts);
    let fits = |available: u64| best_fit(&job.counts, available.min(a.np));
    let mut hosts = job.hostfile_text();
    if let (Some(h), Some(t)) = (&job.hostfile, &hosts) {
        if t.is_empty() {
            return fail(format!("the hostfile '{}' cannot be read or is empty", h.display()));
        }
    }
    let first = hosts.as_deref().map_or(a.np, hostfile_slots);
    let Some(mut np) = fits(first).filter(|&n| n >= a.min_np) else {
        return fail(format!(
            "this executable runs on {carried} processes; none of them fits {} and --min-np {}",
            plural(first.min(a.np), "process", "processes"),
            a.min_np
        ));
    };
    let mut restarts = 0u32;
    let mut launch = 0u32;
    log(&format!("launch 0 on {} (this executable runs on {carried}): {}", plural(np, "process", "processes"), job.resume_text(np, true)));
    loop {
        let child = match job.spawn(np, launch) {
            Ok(c) => c,
            Err(m) => return fail(m),
        };
        let (outcome, grow_to) = match job.watch(child, np, a.np, &hosts) {
            Ok(o) => o,
            Err(m) => return fail(m),
        };
        let mut now_hosts = job.hostfile_text();
        launch += 1;
        match outcome {
            Outcome::Finished => {
                log(&format!(
                    "done: step {} of {} on {} after {}",
                    job.steps,
                    job.steps,
                    plural(np, "process", "processes"),
                    plural(restarts as u64, "restart", "restarts")
                ));
                return ExitCode::SUCCESS;
            }
            Outcome::Stopped => {
                let to = grow_to.expect("stopped only to grow");
                log(&format!("scaling up: relaunching on {to} processes (was {np}), {}", job.resume_text(to, false)));
                np = to;
            }
            Outcome::Failed(code) => {
                log(&format!("the job failed with exit status {code}, not because a rank died (the error is above): not restarting"));
                return ExitCode::from(code.clamp(1, 255) as u8);
            }
            Outcome::Crashed { rank, signal, status } => {
                log(&format!("rank {rank} crashed (signal {signal}): a fault in the program, which a relaunch would repeat: not restarting"));
                return ExitCode::from(status.clamp(1, 255) as u8);
            }
            Outcome::RanksDied { ranks, daemons } => {
                let why = if ranks.is_empty() {
                    format!("mpirun lost {}", plural(daemons as u64, "node's daemon", "nodes' daemons"))
                } else {
                    ranks.iter().map(|(r, s)| format!("rank {r} died (signal {s})")).collect::<Vec<_>>().join(", ")
                };
                if restarts >= a.max_restarts {
                    return fail(format!("{why}; giving up after {} (--max-restarts {})", plural(restarts as u64, "restart", "restarts"), a.max_restarts));
                }
                if a.restart_delay > 0.0 {
                    std::thread::sleep(Duration::from_secs_f64(a.restart_delay));
                    now_hosts = job.hostfile_text();
                }
                let lost = (ranks.len() as u64).max(1);
                let available = match (&now_hosts, now_hosts != hosts) {
                    (Some(t), true) => hostfile_slots(t),
                    (Some(t), false) => np.saturating_sub(lost).min(hostfile_slots(t)),
                    (None, _) => np.saturating_sub(lost),
                };
                let Some(next) = fits(available).filter(|&n| n >= a.min_np) else {
                    return fail(format!(
                        "{why}; {} left, and this executable runs on {carried} processes with --min-np {}: not restarting",
                        plural(available, "process", "processes"),
                        a.min_np
                    ));
                };
                restarts += 1;
                log(&format!(
                    "restart {restarts} of at most {}: {why}; {} left, relaunching on {}, {}",
                    a.max_restarts,
                    plural(available, "process", "processes"),
                    plural(next, "process", "processes"),
                    job.resume_text(next, false)
                ));
                np = next;
            }
        }
        hosts = now_hosts;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KILLED: &str = "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).";

    #[test]
    fn a_killed_rank_is_survivable_and_errors_are_not() {
        assert_eq!(signal_line(KILLED), Some((1, 9, "9 (Killed)".into())));
        assert_eq!(classify(137, &[KILLED.into()]), Outcome::RanksDied { ranks: vec![(1, "9 (Killed)".into())], daemons: 0 });
        assert_eq!(classify(0, &[]), Outcome::Finished);
        // The runtime's own errors (exit 2 after an `error:` line): no signal line.
        assert_eq!(classify(2, &["error: input 'w': cannot read 'w.npy'".into()]), Outcome::Failed(2));
        let segv = "mpirun noticed that process rank 3 with PID 0 on node vm exited on signal 11 (Segmentation fault).";
        assert_eq!(classify(139, &[KILLED.into(), segv.into()]), Outcome::Crashed { rank: 3, signal: "11 (Segmentation fault)".into(), status: 139 });
        let lost = "ORTE has lost communication with a remote daemon.";
        assert_eq!(classify(1, &[lost.into()]), Outcome::RanksDied { ranks: vec![], daemons: 1 });
    }

    #[test]
    fn hostfiles_and_sizes() {
        let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(hostfile_of(&w(&["--oversubscribe", "--hostfile", "h.txt"])), Some(PathBuf::from("h.txt")));
        assert_eq!(hostfile_of(&w(&["--machinefile=m"])), Some(PathBuf::from("m")));
        assert_eq!(hostfile_of(&w(&["--oversubscribe"])), None);
        assert_eq!(hostfile_slots("# nodes\nn1 slots=4\nn2 slots=2 max_slots=8\n\nn3\n"), 7);
        assert_eq!(best_fit(&[1, 2, 4], 3), Some(2));
        assert_eq!(best_fit(&[2, 4], 1), None);
        assert_eq!(best_fit(&[1, 2, 4], 8), Some(4));
    }
}
