//! `pjc explain --trace PATH.json`: the measured step time of a run, split
//! per rank into compute, collectives and waiting, read from the trace an
//! executable writes with `--trace` (`pjc-runtime`'s `trace.rs`: Chrome
//! trace events, one process per rank, `cat` one of kernel, gemm, library,
//! collective, wait, copy, io, step, control; `tid` 1 the collectives that run
//! asynchronously beside the step loop).
//!
//! The step loop (`tid` 0) is what a step takes: its compute (kernel, gemm
//! and library events, as the runtime's own summary counts them), the
//! collectives it runs in line, the time it waits for asynchronous ones to
//! finish (`wait`), and copies and file I/O. Asynchronous collectives (`tid`
//! 1) overlap the step loop, so they are reported beside the split, not in
//! it. `control` events (a loop, recorded around its blocks' steps) are left
//! out: their steps are counted already.

use crate::failure::{io_reason, Failure};
use pjc_plan::cost::duration_text;
use serde_json::Value;
use std::fmt::Write;
use std::path::Path;

/// One rank's measured times, microseconds over the whole run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankSplit {
    /// `step` events (at least 1).
    pub steps: u64,
    /// The `step` events' total duration (0 when the trace has none).
    pub step_us: f64,
    pub compute_us: f64,
    /// Collectives run in the step loop (`tid` 0).
    pub collective_us: f64,
    /// Waiting for asynchronous collectives to finish (`wait` events).
    pub wait_us: f64,
    /// Copies and file I/O.
    pub other_us: f64,
    /// Asynchronous collectives (`tid` 1), overlapping the step loop.
    pub async_us: f64,
}

impl RankSplit {
    /// Per step, in microseconds: step, compute, collectives, waiting, other, asynchronous.
    pub fn per_step(&self) -> [f64; 6] {
        let n = self.steps as f64;
        [self.step_us / n, self.compute_us / n, self.collective_us / n, self.wait_us / n, self.other_us / n, self.async_us / n]
    }
}

/// A trace's measured split, every rank.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// The file as given.
    pub path: String,
    pub ranks: Vec<RankSplit>,
}

impl Trace {
    /// Reads a trace file; anything that is not one is one `error:` line (exit 2).
    pub fn read(path: &Path) -> Result<Trace, Failure> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Failure::Env(format!("cannot read trace '{shown}': {}", io_reason(&e))))?;
        let doc: Value = serde_json::from_str(&text).map_err(|e| Failure::Env(format!("trace '{shown}' is not JSON: {e}")))?;
        Trace::of(&shown, &doc).map_err(|e| Failure::Env(format!("trace '{shown}' is not a pjc trace: {e}")))
    }

    /// The split of a trace document (`{"traceEvents": [...]}` or a bare array).
    pub fn of(path: &str, doc: &Value) -> Result<Trace, String> {
        let events = match doc {
            Value::Array(a) => a,
            Value::Object(o) => o.get("traceEvents").and_then(|e| e.as_array()).ok_or("no traceEvents array")?,
            _ => return Err("neither an array of events nor an object with traceEvents".into()),
        };
        let mut ranks: Vec<RankSplit> = vec![];
        for e in events.iter().filter(|e| e["ph"] == "X") {
            let pid = e["pid"].as_u64().ok_or("an event without a numeric pid")?;
            if pid > 1 << 20 {
                return Err(format!("rank {pid} is out of range"));
            }
            let dur = e["dur"].as_f64().filter(|d| d.is_finite() && *d >= 0.0).ok_or("an event without a duration")?;
            if ranks.len() <= pid as usize {
                ranks.resize(pid as usize + 1, RankSplit::default());
            }
            let r = &mut ranks[pid as usize];
            let asynchronous = e["tid"].as_u64() == Some(1);
            match e["cat"].as_str() {
                Some("step") => {
                    r.steps += 1;
                    r.step_us += dur;
                }
                Some("kernel" | "gemm" | "library") => r.compute_us += dur,
                Some("collective") if asynchronous => r.async_us += dur,
                Some("collective") => r.collective_us += dur,
                Some("wait") => r.wait_us += dur,
                Some("copy" | "io") => r.other_us += dur,
                _ => {}
            }
        }
        if ranks.is_empty() {
            return Err("no timed events".into());
        }
        for r in &mut ranks {
            r.steps = r.steps.max(1);
        }
        Ok(Trace { path: path.to_string(), ranks })
    }

    /// The block `pjc explain --trace` prints.
    pub fn text(&self) -> String {
        let steps = self.ranks[0].steps;
        let mut out = format!(
            "\nmeasured per step ({}, {}; compute = kernel+gemm+library, collectives = in the step loop, waiting = for asynchronous collectives):\n",
            self.path,
            if steps == 1 { "1 step".to_string() } else { format!("mean of {steps} steps") }
        );
        for (k, r) in self.ranks.iter().enumerate() {
            let [step, compute, coll, wait, other, asy] = r.per_step().map(|us| duration_text(us * 1e-6));
            let _ = write!(out, "  rank {k}: step {step}: compute {compute}, collectives {coll}, waiting {wait}, other {other}");
            if r.async_us > 0.0 {
                let _ = write!(out, "; asynchronous collectives {asy} beside it");
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn splits_each_rank_by_category_and_track() {
        let ev = |pid: u64, tid: u64, cat: &str, dur: f64| json!({"name": "e", "cat": cat, "ph": "X", "ts": 0.0, "dur": dur, "pid": pid, "tid": tid});
        let doc = json!({"traceEvents": [
            {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "rank 0"}},
            ev(0, 0, "step", 100.0), ev(0, 0, "step", 80.0),
            ev(0, 0, "kernel", 30.0), ev(0, 0, "gemm", 20.0), ev(0, 0, "library", 10.0),
            ev(0, 0, "collective", 40.0), ev(0, 1, "collective", 25.0), ev(0, 0, "wait", 6.0),
            ev(0, 0, "copy", 2.0), ev(0, 0, "io", 3.0), ev(0, 0, "control", 500.0),
            ev(1, 0, "step", 50.0), ev(1, 0, "kernel", 50.0),
        ]});
        let t = Trace::of("t.json", &doc).unwrap();
        assert_eq!(t.ranks.len(), 2);
        let r = &t.ranks[0];
        assert_eq!((r.steps, r.step_us, r.compute_us, r.collective_us, r.async_us, r.wait_us, r.other_us), (2, 180.0, 60.0, 40.0, 25.0, 6.0, 5.0));
        assert_eq!(t.ranks[1].per_step()[1], 50.0);
        let text = t.text();
        assert!(text.contains("mean of 2 steps"), "{text}");
        assert!(text.contains("  rank 0: step 90 us: compute 30 us, collectives 20 us, waiting 3 us, other 2.5 us; asynchronous collectives 12.5 us beside it\n"), "{text}");
        assert!(text.contains("  rank 1: step 50 us: compute 50 us, collectives 0 us,"), "{text}");
    }

    #[test]
    fn what_is_not_a_trace_says_why() {
        assert_eq!(Trace::of("t", &json!({"a": 1})).unwrap_err(), "no traceEvents array");
        assert_eq!(Trace::of("t", &json!([])).unwrap_err(), "no timed events");
        assert_eq!(Trace::of("t", &json!([{"ph": "X", "pid": 0}])).unwrap_err(), "an event without a duration");
    }
}
