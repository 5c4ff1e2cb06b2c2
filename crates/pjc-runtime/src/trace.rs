//! `--trace PATH.json`: a Chrome trace-event file (Perfetto, chrome://tracing)
//! with one track (process) per rank. Every rank records complete events
//! (`"ph": "X"`) against a clock started right after a barrier, so the tracks
//! line up across ranks (to the barrier's skew); rank 0 gathers them and
//! writes the file once.

use crate::world::World;
use crate::RuntimeError;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// One timed event of this rank.
#[derive(Clone, Debug)]
pub struct Event {
    pub name: String,
    /// Category: `kernel`, `gemm`, `library`, `collective`, `copy`, `io`, `step`.
    pub cat: String,
    pub start: Instant,
    pub dur: Duration,
    pub args: Value,
    /// The rank's track: 0 the step loop, 1 the collectives that run
    /// asynchronously beside it (so overlap shows in Perfetto).
    pub tid: u32,
}

impl Event {
    pub fn from_step(e: pjc_host::StepEvent) -> Event {
        let args = if e.kind == "collective" { json!({ "bytes": e.bytes }) } else { json!({}) };
        Event { name: e.name, cat: e.kind.to_string(), start: e.start, dur: e.dur, args, tid: e.track }
    }
}

/// This rank's recorder (a no-op when tracing is off).
pub struct Tracer<'w> {
    world: &'w World,
    on: bool,
    t0: Instant,
    events: Vec<Event>,
}

impl<'w> Tracer<'w> {
    /// Collective when `on` (a barrier aligns the ranks' clocks).
    pub fn new(world: &'w World, on: bool) -> Tracer<'w> {
        if on {
            world.barrier();
        }
        Tracer { world, on, t0: Instant::now(), events: vec![] }
    }

    pub fn now(&self) -> Instant {
        Instant::now()
    }

    /// An event from `start` until now.
    pub fn span(&mut self, name: &str, cat: &str, start: Instant, args: Value) {
        if self.on {
            self.events.push(Event { name: name.to_string(), cat: cat.to_string(), start, dur: start.elapsed(), args, tid: 0 });
        }
    }

    pub fn extend(&mut self, events: Vec<Event>) {
        if self.on {
            self.events.extend(events);
        }
    }

    fn to_json(&self) -> Vec<Value> {
        let pid = self.world.rank();
        self.events
            .iter()
            .map(|e| {
                let ts = e.start.saturating_duration_since(self.t0).as_secs_f64() * 1e6;
                json!({"name": e.name, "cat": e.cat, "ph": "X", "ts": ts, "dur": e.dur.as_secs_f64() * 1e6, "pid": pid, "tid": e.tid, "args": e.args})
            })
            .collect()
    }

    /// Gathers every rank's events; rank 0 writes `path` (collective) with
    /// their summary against the plan's cost `model` (`crate::summary`),
    /// which it also prints.
    pub fn write(&self, path: &Path, model: &pjc_plan::cost::Cost) -> Result<(), RuntimeError> {
        let mine = serde_json::to_vec(&self.to_json()).map_err(|e| RuntimeError::Internal(e.to_string()))?;
        let host = World::hostname();
        let all = self.world.gather_varlen_to_root(&mine)?;
        let Some(all) = all else { return Ok(()) };
        let mut events: Vec<Value> = vec![];
        for (r, bytes) in all.iter().enumerate() {
            events.push(json!({"name": "process_name", "ph": "M", "pid": r, "tid": 0, "args": {"name": format!("rank {r}")}}));
            events.push(json!({"name": "process_sort_index", "ph": "M", "pid": r, "tid": 0, "args": {"sort_index": r}}));
            events.push(json!({"name": "thread_name", "ph": "M", "pid": r, "tid": 0, "args": {"name": "steps"}}));
            events.push(json!({"name": "thread_name", "ph": "M", "pid": r, "tid": 1, "args": {"name": "collectives (asynchronous)"}}));
            let evs: Vec<Value> = serde_json::from_slice(bytes).map_err(|e| RuntimeError::Internal(format!("rank {r}'s trace: {e}")))?;
            events.extend(evs);
        }
        let summary = crate::summary::Summary::of_trace(&events, all.len(), model);
        eprint!("{}", summary.text());
        let doc = json!({"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"producer": "pjc", "host0": host, "summary": summary.json()}});
        let text = serde_json::to_string(&doc).map_err(|e| RuntimeError::Internal(e.to_string()))?;
        if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(d).map_err(|e| RuntimeError::Env(format!("cannot create '{}': {}", d.display(), crate::error::io_reason(&e))))?;
        }
        pjc_tensor::write_atomically(path, |f| std::io::Write::write_all(f, text.as_bytes())).map_err(RuntimeError::Env)
    }
}
