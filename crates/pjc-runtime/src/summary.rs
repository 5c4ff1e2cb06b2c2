//! The summary of a `--trace` run: per rank, the measured compute time
//! (`kernel`, `gemm` and `library` events), the collective time
//! (`collective` events) and their ratio, the figure `pjc explain`
//! estimates before the run (`pjc_plan::cost`). Rank 0 prints it and the
//! trace file carries it in `otherData.summary`.
//!
//! It is computed from the very events the file holds (their `cat` and
//! `dur`), so the file and the summary agree by construction. `control`
//! events (a loop, recorded after its blocks' steps) are left out: they
//! contain the steps already counted. With the cost model's collective bytes
//! per step, the collective time gives a measured link bandwidth, the
//! `--link-gbps` that makes `pjc explain` model this run; with its
//! operations per step, the compute time an effective device throughput
//! (`--device-gflops`).

use pjc_plan::cost::{duration_text, si_text, sig3, Cost};
use serde_json::{json, Value};

/// Measured times of one rank, microseconds over the whole run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankTimes {
    pub compute_us: f64,
    pub collective_us: f64,
    /// `step` events (at least 1: a run is one step).
    pub steps: u64,
}

impl RankTimes {
    /// Sums the events of one rank's track (trace-event JSON objects).
    pub fn of(events: &[Value]) -> RankTimes {
        let mut t = RankTimes::default();
        for e in events {
            let dur = e["dur"].as_f64().unwrap_or(0.0);
            match e["cat"].as_str() {
                Some("kernel" | "gemm" | "library") => t.compute_us += dur,
                Some("collective") => t.collective_us += dur,
                Some("step") => t.steps += 1,
                _ => {}
            }
        }
        t.steps = t.steps.max(1);
        t
    }

    /// Compute time over collective time: the R of "1:R".
    pub fn ratio(&self) -> Option<f64> {
        (self.collective_us > 0.0).then(|| self.compute_us / self.collective_us)
    }
}

/// Every rank's times and what the cost model says one step sends.
#[derive(Clone, Debug)]
pub struct Summary {
    pub ranks: Vec<RankTimes>,
    /// Ring-formula bytes a device sends per step (the cost model's).
    pub bytes_per_step: f64,
    /// Operations of the compute steps per step (the cost model's).
    pub flops_per_step: f64,
    /// A while loop's trips are unknown to the model: the bytes are a lower
    /// bound, and so is the measured link bandwidth.
    pub lower_bound: bool,
}

/// Ranks listed one by one; more are summarised by their extremes.
const LISTED: usize = 8;

impl Summary {
    /// The summary of every rank's events (`ranks[r]`: rank r's track) with
    /// the plan's cost-model figures.
    pub fn of(ranks: &[Vec<Value>], model: &Cost) -> Summary {
        Summary {
            ranks: ranks.iter().map(|e| RankTimes::of(e)).collect(),
            bytes_per_step: model.collective_bytes,
            flops_per_step: model.flops,
            lower_bound: model.lower_bound,
        }
    }

    /// The summary of a whole trace's events, each rank's found by its
    /// `pid` (ranks `0..ranks`).
    pub fn of_trace(events: &[Value], ranks: usize, model: &Cost) -> Summary {
        let mut tracks: Vec<Vec<Value>> = vec![vec![]; ranks];
        for e in events {
            if let Some(t) = e["pid"].as_u64().and_then(|p| tracks.get_mut(p as usize)) {
                t.push(e.clone());
            }
        }
        Summary::of(&tracks, model)
    }

    /// GB/s the collectives moved their bytes at on the rank that spent the
    /// least time in them (the others include waiting for slower ranks).
    pub fn link_gbps(&self) -> Option<f64> {
        Self::rate(self.bytes_per_step, self.ranks.iter().map(|r| r.collective_us / r.steps as f64))
    }

    /// GFLOP/s the compute steps ran at on the rank that spent the least
    /// time in them.
    pub fn device_gflops(&self) -> Option<f64> {
        Self::rate(self.flops_per_step, self.ranks.iter().map(|r| r.compute_us / r.steps as f64))
    }

    /// `amount` per step over the least of the ranks' times per step (µs),
    /// in 10^9 per second.
    fn rate(amount: f64, us_per_step: impl Iterator<Item = f64>) -> Option<f64> {
        let least = us_per_step.filter(|&t| t > 0.0).fold(f64::INFINITY, f64::min);
        (least.is_finite() && amount > 0.0).then(|| amount / (least * 1e-6) / 1e9)
    }

    /// What goes into the trace file's `otherData.summary`.
    pub fn json(&self) -> Value {
        let ranks: Vec<Value> = self
            .ranks
            .iter()
            .enumerate()
            .map(|(r, t)| {
                json!({
                    "rank": r,
                    "steps": t.steps,
                    "compute_ms": t.compute_us / 1e3,
                    "collective_ms": t.collective_us / 1e3,
                    "compute_ms_per_step": t.compute_us / 1e3 / t.steps as f64,
                    "collective_ms_per_step": t.collective_us / 1e3 / t.steps as f64,
                    "ratio": t.ratio(),
                })
            })
            .collect();
        json!({
            "compute": "kernel + gemm + library events",
            "collective": "collective events",
            "ranks": ranks,
            "collective_bytes_per_step": self.bytes_per_step,
            "bytes_lower_bound": self.lower_bound,
            "link_gbps_measured": self.link_gbps(),
            "flops_per_step": self.flops_per_step,
            "device_gflops_measured": self.device_gflops(),
        })
    }

    /// The block rank 0 prints on stderr.
    pub fn text(&self) -> String {
        let steps = self.ranks.first().map_or(1, |r| r.steps);
        let mut out = format!(
            "pjc: trace summary per step ({}; compute = kernel+gemm+library events, collectives = collective events):\n",
            if steps == 1 { "1 step".to_string() } else { format!("mean of {steps} steps") }
        );
        let line = |r: usize, t: &RankTimes| {
            let n = t.steps as f64;
            let ratio = match t.ratio() {
                Some(x) => format!("ratio 1:{}", sig3(x)),
                None => "no collective time".to_string(),
            };
            format!("  rank {r}: compute {}, collectives {}, {ratio}\n", duration_text(t.compute_us * 1e-6 / n), duration_text(t.collective_us * 1e-6 / n))
        };
        if self.ranks.len() <= LISTED {
            for (r, t) in self.ranks.iter().enumerate() {
                out.push_str(&line(r, t));
            }
        } else {
            let key = |t: &RankTimes| t.ratio().unwrap_or(f64::INFINITY);
            let (lo, hi) = self.ranks.iter().enumerate().fold((0, 0), |(lo, hi), (r, t)| {
                (if key(t) < key(&self.ranks[lo]) { r } else { lo }, if key(t) > key(&self.ranks[hi]) { r } else { hi })
            });
            out.push_str(&format!("  {} ranks; the lowest and highest ratios (every rank in the trace's otherData.summary):\n", self.ranks.len()));
            out.push_str(&line(lo, &self.ranks[lo]));
            out.push_str(&line(hi, &self.ranks[hi]));
        }
        if let Some(g) = self.device_gflops() {
            out.push_str(&format!(
                "  compute: {} per step at {} GFLOP/s on the rank that took least (pjc explain --device-gflops {} models it)\n",
                si_text(self.flops_per_step, "FLOP"),
                sig3(g),
                sig3(g)
            ));
        }
        if let Some(g) = self.link_gbps() {
            let at_least = if self.lower_bound { "at least " } else { "" };
            out.push_str(&format!(
                "  link: {at_least}{} B per device per step (ring formulas) at {at_least}{} GB/s on the rank that waited least (pjc explain --link-gbps {} models it)\n",
                self.bytes_per_step,
                sig3(g),
                sig3(g)
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(cat: &str, dur: f64) -> Value {
        json!({"name": "e", "cat": cat, "ph": "X", "ts": 0.0, "dur": dur, "pid": 0, "tid": 0})
    }

    #[test]
    fn sums_by_category() {
        // Two steps: compute 100 + 50 + 30 + 20 us, collectives 40 + 10 us;
        // the control event (its blocks' steps are counted) and io are not.
        let events = vec![
            ev("step", 500.0),
            ev("kernel", 100.0),
            ev("gemm", 50.0),
            ev("collective", 40.0),
            ev("control", 90.0),
            ev("step", 400.0),
            ev("library", 30.0),
            ev("kernel", 20.0),
            ev("collective", 10.0),
            ev("io", 1000.0),
        ];
        let t = RankTimes::of(&events);
        assert_eq!(t, RankTimes { compute_us: 200.0, collective_us: 50.0, steps: 2 });
        assert_eq!(t.ratio(), Some(4.0));
        // 1000 B per step; rank 1 spent 10 us per step in collectives, the
        // least: 1000 B / 10 us = 0.1 GB/s.
        let quick = vec![ev("kernel", 10.0), ev("collective", 10.0)];
        let model = Cost { collective_bytes: 1000.0, flops: 2000.0, ..Cost::default() };
        let s = Summary::of(&[events, quick], &model);
        assert!((s.link_gbps().unwrap() - 0.1).abs() < 1e-12);
        let text = s.text();
        assert!(text.contains("mean of 2 steps"), "{text}");
        assert!(text.contains("rank 0: compute 100 us, collectives 25 us, ratio 1:4\n"), "{text}");
        assert!(text.contains("rank 1: compute 10 us, collectives 10 us, ratio 1:1\n"), "{text}");
        assert!(text.contains("at 0.1 GB/s"), "{text}");
        // 2000 operations per step; rank 1's 10 us is the least: 0.2 GFLOP/s.
        assert!((s.device_gflops().unwrap() - 0.2).abs() < 1e-12);
        assert!(text.contains("compute: 2 kFLOP per step at 0.2 GFLOP/s"), "{text}");
        let j = s.json();
        assert_eq!(j["ranks"][0]["collective_ms"], 0.05);
        assert_eq!(j["ranks"][0]["compute_ms_per_step"], 0.1);
        assert_eq!(j["ranks"][1]["ratio"], 1.0);
    }

    #[test]
    fn no_collectives_no_ratio() {
        let s = Summary::of(&[vec![ev("kernel", 10.0)]], &Cost::default());
        assert_eq!(s.ranks[0].ratio(), None);
        assert_eq!((s.link_gbps(), s.device_gflops()), (None, None));
        assert!(s.text().contains("rank 0: compute 10 us, collectives 0 us, no collective time\n"), "{}", s.text());
        assert_eq!(s.json()["ranks"][0]["ratio"], Value::Null);
    }

    #[test]
    fn many_ranks_show_their_extremes() {
        let ranks: Vec<Vec<Value>> = (1..=10).map(|k| vec![ev("kernel", 10.0 * k as f64), ev("collective", 10.0)]).collect();
        let text = Summary::of(&ranks, &Cost::default()).text();
        assert!(text.contains("10 ranks"), "{text}");
        assert!(text.contains("rank 0: compute 10 us, collectives 10 us, ratio 1:1\n") && text.contains("rank 9: compute 100 us, collectives 10 us, ratio 1:10\n"), "{text}");
        assert!(!text.contains("rank 4:"), "{text}");
    }
}
