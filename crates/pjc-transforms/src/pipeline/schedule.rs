//! The static schedule of a pipeline: which micro-batch each stage works on
//! at each tick, the bubble fraction, and `pjc explain`'s section about it.
//! Pure arithmetic on the pipeline's sizes; the generated per-stage program
//! (`pipeline/mod.rs`) computes the same table from the tick and the stage's
//! position (`m = t - k`, idle outside `0 <= m < M`).

use std::fmt::Write;

/// One scan made a pipeline: what `pjc explain` says about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Pipelined {
    /// The function holding the scan, the scan's first result, its body.
    pub func: String,
    pub value: String,
    pub body: String,
    /// The generated functions: the per-stage program, one tick, one layer.
    pub driver: String,
    pub tick: String,
    pub stage: String,
    pub axis: String,
    pub schedule: Schedule,
    pub stages: u64,
    pub layers: u64,
    pub microbatches: u64,
    /// The batch (dimension 0 of the activations) and the axes splitting it.
    pub rows: u64,
    pub batch_axes: Vec<String>,
    /// Rows of one micro-batch on one device.
    pub micro_rows: u64,
    /// Whether a `grad` differentiates through it (a backward pass follows).
    pub differentiated: bool,
    /// The axes each stage's layers are split over (tensor parallelism
    /// inside a stage; empty when a stage's devices each hold whole layers).
    pub tensor_axes: Vec<String>,
}

/// `explain`'s line on tensor parallelism inside a stage, if any.
fn inside_stage(p: &Pipelined) -> String {
    if p.tensor_axes.is_empty() {
        return String::new();
    }
    format!(
        "  inside a stage: its layers' weights are split over [{}] (tensor parallelism); @{} is the layer partitioned over them, with their collectives\n",
        p.tensor_axes.join(", "),
        p.stage
    )
}

/// `--schedule`: the order in which stages run micro-batches.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Every micro-batch's forward through the stages, then every backward in
    /// reverse (Huang et al., GPipe).
    GPipe,
    /// One forward, one backward, alternating once the pipeline is full
    /// (PipeDream-Flush), in lockstep ticks that each hold one forward and
    /// one backward slot per stage.
    OneFOneB,
}

impl Schedule {
    pub fn name(self) -> &'static str {
        match self {
            Schedule::GPipe => "GPipe",
            Schedule::OneFOneB => "1F1B",
        }
    }
}

/// Ticks of one pass (forward, or backward) through `stages` stages with
/// `micro` micro-batches: M + S - 1.
pub fn ticks(stages: u64, micro: u64) -> u64 {
    micro + stages - 1
}

/// The micro-batch stage `k` runs in forward tick `t` (GPipe), if any.
pub fn forward_at(stages: u64, micro: u64, t: u64, k: u64) -> Option<u64> {
    (t >= k && t - k < micro && k < stages).then(|| t - k)
}

/// The micro-batch stage `k` runs in backward tick `j` (counted from the
/// start of the backward pass): the forward ticks in reverse.
pub fn backward_at(stages: u64, micro: u64, j: u64, k: u64) -> Option<u64> {
    let t = ticks(stages, micro).checked_sub(j + 1)?;
    forward_at(stages, micro, t, k)
}

/// The bubble fraction of GPipe, (S - 1) / (M + S - 1), as (numerator,
/// denominator): the share of each stage's ticks in which it has no
/// micro-batch.
pub fn bubble(stages: u64, micro: u64) -> (u64, u64) {
    (stages - 1, ticks(stages, micro))
}

/// 1F1B's ticks: M + 2(S − 1), each with a forward and a backward slot.
pub fn ticks_1f1b(stages: u64, micro: u64) -> u64 {
    micro + 2 * (stages - 1)
}

/// The micro-batch whose forward stage `k` runs at 1F1B tick `t`, if any.
pub fn forward_1f1b(stages: u64, micro: u64, t: u64, k: u64) -> Option<u64> {
    forward_at(stages, micro, t, k)
}

/// The micro-batch whose backward stage `k` runs at 1F1B tick `t`, if any:
/// the last stage right after its forward, each stage before it one tick
/// after the next.
pub fn backward_1f1b(stages: u64, micro: u64, t: u64, k: u64) -> Option<u64> {
    let delay = 2 * (stages - 1) - k;
    (k < stages && t >= delay && t - delay < micro).then(|| t - delay)
}

/// The most micro-batches stage `k` holds between their forward and their
/// backward under 1F1B: min(M, 2(S − k) − 1).
pub fn in_flight_1f1b(stages: u64, micro: u64, k: u64) -> u64 {
    micro.min(2 * (stages - k) - 1)
}

/// The widest table `explain` prints (in ticks of one pass).
const MAX_TABLE_TICKS: u64 = 24;

/// `pjc explain`'s section for one pipelined scan.
pub fn explain(p: &Pipelined) -> String {
    if p.schedule == Schedule::OneFOneB {
        return explain_1f1b(p);
    }
    let (s, m) = (p.stages, p.microbatches);
    let per = p.layers / s;
    let t = ticks(s, m);
    let (bn, bd) = bubble(s, m);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\npipeline over {} ({} schedule): scan %{} of @{} (body @{}) runs as {s} stages",
        p.axis,
        p.schedule.name(),
        p.value,
        p.func,
        p.body
    );
    let held = if per == 1 { "layer k".to_string() } else { format!("layers {per}k..{per}k+{}", per - 1) };
    let _ = writeln!(out, "  stage k of {s} holds {held} of the {} stacked layers ({per} per stage) and never gathers the others", p.layers);
    out.push_str(&inside_stage(p));
    let _ = writeln!(out, "  micro-batches: {m} of {} rows per device (batch of {} rows{})", p.micro_rows, p.rows, batch_split(p));
    let _ = writeln!(
        out,
        "  per-stage program: @{} (ticks @{}, layers @{}); activations go to the next stage by collective_permute over [{}] shift=1{}",
        p.driver,
        p.tick,
        p.stage,
        p.axis,
        if p.differentiated { ", their gradients back by shift=-1" } else { "" }
    );
    let passes = if p.differentiated { format!("{t} forward + {t} backward") } else { format!("{t} forward") };
    let _ = writeln!(
        out,
        "  ticks: {passes} (M+S-1 = {m}+{s}-1 each); bubble fraction (S-1)/(M+S-1) = {bn}/{bd} = {:.3}",
        bn as f64 / bd as f64
    );
    if p.differentiated {
        let _ = writeln!(
            out,
            "  activations kept for the backward: {t} ticks of one micro-batch's residuals through {per} layers per stage (all micro-batches in flight, as GPipe keeps them)"
        );
    }
    if t > MAX_TABLE_TICKS {
        let _ = writeln!(out, "  schedule: {t} ticks per pass, too many to draw (stage k runs micro-batch t-k at tick t)");
        return out;
    }
    let _ = writeln!(out, "  schedule (Fm: forward of micro-batch m, Bm: its backward, .: idle; one column per tick):");
    let cell = |x: Option<u64>, c: char| x.map_or(".".to_string(), |m| format!("{c}{m}"));
    let mut head = String::from("    tick    ");
    for j in 0..t * if p.differentiated { 2 } else { 1 } {
        if j == t {
            head.push_str(" |");
        }
        let _ = write!(head, " {j:>3}");
    }
    let _ = writeln!(out, "{}", head.trim_end());
    for k in 0..s {
        let mut row = format!("    stage {k:<2}");
        for j in 0..t {
            let _ = write!(row, " {:>3}", cell(forward_at(s, m, j, k), 'F'));
        }
        if p.differentiated {
            row.push_str(" |");
            for j in 0..t {
                let _ = write!(row, " {:>3}", cell(backward_at(s, m, j, k), 'B'));
            }
        }
        let _ = writeln!(out, "{}", row.trim_end());
    }
    out
}

/// How the batch is split over devices, for `explain`.
fn batch_split(p: &Pipelined) -> String {
    if p.batch_axes.is_empty() {
        String::new()
    } else {
        format!(", split over [{}]", p.batch_axes.join(", "))
    }
}

/// `pjc explain`'s section for a 1F1B pipeline.
fn explain_1f1b(p: &Pipelined) -> String {
    let (s, m) = (p.stages, p.microbatches);
    let per = p.layers / s;
    let t = ticks_1f1b(s, m);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\npipeline over {} (1F1B schedule): grad of @{} with its scan %{} (body @{}) runs as {s} stages",
        p.axis, p.func, p.value, p.body
    );
    let held = if per == 1 { "layer k".to_string() } else { format!("layers {per}k..{per}k+{}", per - 1) };
    let _ = writeln!(out, "  stage k of {s} holds {held} of the {} stacked layers ({per} per stage) and never gathers the others", p.layers);
    out.push_str(&inside_stage(p));
    let _ = writeln!(out, "  micro-batches: {m} of {} rows per device (batch of {} rows{})", p.micro_rows, p.rows, batch_split(p));
    let _ = writeln!(out, "  per-stage program: @{} (ticks @{}, layers @{}); activations go to the next stage by collective_permute over [{}] shift=1, their gradients back by shift=-1; the last stage takes the loss's gradient of each micro-batch it finishes", p.driver, p.tick, p.stage, p.axis);
    let (bn, bd) = (2 * (s - 1), t);
    let _ = writeln!(
        out,
        "  ticks: {t} (M+2(S-1) = {m}+2*({s}-1)), each with a forward and a backward slot; bubble fraction 2(S-1)/(M+2(S-1)) = {bn}/{bd} = {:.3} of the slots",
        bn as f64 / bd as f64
    );
    let flight: Vec<String> = (0..s).map(|k| in_flight_1f1b(s, m, k).to_string()).collect();
    let _ = writeln!(
        out,
        "  peak activations: stage k keeps at most min(M, 2(S-k)-1) micro-batch inputs ({} for stages 0..{}), recomputing its layers in the backward; GPipe keeps {} ticks of residuals",
        flight.join(", "),
        s - 1,
        ticks(s, m)
    );
    if t > MAX_TABLE_TICKS {
        let _ = writeln!(out, "  schedule: {t} ticks, too many to draw (stage k: forward of micro-batch t-k, backward of t-(2S-2-k) at tick t)");
        return out;
    }
    let _ = writeln!(out, "  schedule (Fm: forward of micro-batch m, Bm: its backward, .: idle slot; one column per tick):");
    let mut head = String::from("    tick    ");
    for j in 0..t {
        let _ = write!(head, " {j:>5}");
    }
    let _ = writeln!(out, "{}", head.trim_end());
    for k in 0..s {
        let mut row = format!("    stage {k:<2}");
        for j in 0..t {
            let f = forward_1f1b(s, m, j, k).map_or(".".to_string(), |x| format!("F{x}"));
            let b = backward_1f1b(s, m, j, k).map_or(".".to_string(), |x| format!("B{x}"));
            let _ = write!(row, " {:>5}", format!("{f}{}", if b == "." { String::new() } else { b }));
        }
        let _ = writeln!(out, "{}", row.trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_micro_batch_visits_every_stage_once_in_order() {
        for (s, m) in [(1, 1), (2, 3), (4, 4), (4, 8), (3, 1)] {
            for k in 0..s {
                let fwd: Vec<u64> = (0..ticks(s, m)).filter_map(|t| forward_at(s, m, t, k)).collect();
                assert_eq!(fwd, (0..m).collect::<Vec<_>>(), "S={s} M={m} stage {k}");
                let bwd: Vec<u64> = (0..ticks(s, m)).filter_map(|j| backward_at(s, m, j, k)).collect();
                assert_eq!(bwd, (0..m).rev().collect::<Vec<_>>(), "S={s} M={m} stage {k}");
            }
            // Micro-batch i reaches stage k+1 one tick after stage k ran it.
            for t in 1..ticks(s, m) {
                for k in 1..s {
                    assert_eq!(forward_at(s, m, t, k), forward_at(s, m, t - 1, k - 1));
                }
            }
        }
    }

    #[test]
    fn one_f_one_b_runs_each_backward_after_its_forward_and_the_next_stage_s_backward() {
        for (s, m) in [(1, 3), (2, 4), (4, 4), (4, 8), (3, 2)] {
            for k in 0..s {
                let fwd: Vec<u64> = (0..ticks_1f1b(s, m)).filter_map(|t| forward_1f1b(s, m, t, k)).collect();
                let bwd: Vec<u64> = (0..ticks_1f1b(s, m)).filter_map(|t| backward_1f1b(s, m, t, k)).collect();
                assert_eq!(fwd, (0..m).collect::<Vec<_>>(), "S={s} M={m} stage {k}");
                assert_eq!(bwd, (0..m).collect::<Vec<_>>(), "S={s} M={m} stage {k}");
                let at = |f: &dyn Fn(u64) -> Option<u64>, i: u64| (0..ticks_1f1b(s, m)).find(|&t| f(t) == Some(i)).unwrap();
                let mut most = 0;
                for i in 0..m {
                    let (tf, tb) = (at(&|t| forward_1f1b(s, m, t, k), i), at(&|t| backward_1f1b(s, m, t, k), i));
                    assert!(tf <= tb, "S={s} M={m} stage {k} micro {i}");
                    if k + 1 < s {
                        // The gradient arrives from the next stage one tick earlier.
                        assert_eq!(at(&|t| backward_1f1b(s, m, t, k + 1), i) + 1, tb);
                    }
                    // In flight at the forward of i: those started and not yet back.
                    let open = (0..=i).filter(|&q| at(&|t| backward_1f1b(s, m, t, k), q) >= tf).count() as u64;
                    most = most.max(open);
                }
                assert_eq!(most, in_flight_1f1b(s, m, k), "S={s} M={m} stage {k}");
            }
        }
    }

    #[test]
    fn bubble_is_the_idle_share_of_the_table() {
        for (s, m) in [(2, 1), (4, 4), (4, 16), (8, 3)] {
            let t = ticks(s, m);
            let idle = (0..t).flat_map(|j| (0..s).map(move |k| (j, k))).filter(|&(j, k)| forward_at(s, m, j, k).is_none()).count() as u64;
            let (n, d) = bubble(s, m);
            // idle / (S * T) == (S - 1) / (M + S - 1)
            assert_eq!(idle * d, n * s * t, "S={s} M={m}");
        }
    }
}
