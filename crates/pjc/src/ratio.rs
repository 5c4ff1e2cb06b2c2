//! `pjc explain`'s communication/compute block: the plan's cost model
//! (`pjc_plan::cost`) against the peaks of a device class or the user's
//! figures, and the ratio the seed's rule of thumb (1:5 to 1:10) reads.

use crate::failure::Failure;
use pjc_plan::cost::{duration_text, plan_cost, si_text, sig3, Machine};

/// The device class whose default peaks `pjc explain --device` takes
/// (`pjc_plan::cost::Machine`'s constants say why these figures).
#[derive(Copy, Clone, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum DeviceClass {
    /// A CPU server: 1000 GFLOP/s, 100 GB/s, a 25 GB/s link (200 Gb/s), 5 us per message.
    Cpu,
    /// An H100 SXM GPU: 67000 GFLOP/s (f32), 3350 GB/s, a 50 GB/s link (400 Gb/s), 10 us per message.
    Cuda,
}

impl DeviceClass {
    pub fn name(self) -> &'static str {
        match self {
            DeviceClass::Cpu => "cpu",
            DeviceClass::Cuda => "cuda",
        }
    }
}

/// The peaks the flags ask for: the device class's defaults, each replaced
/// by its flag when given. Bandwidths and throughputs must be positive,
/// the latency non-negative.
pub fn machine(class: DeviceClass, gflops: Option<f64>, gbps: Option<f64>, link_gbps: Option<f64>, latency_us: Option<f64>) -> Result<Machine, Failure> {
    let mut m = match class {
        DeviceClass::Cpu => Machine::CPU,
        DeviceClass::Cuda => Machine::CUDA,
    };
    for (flag, v, slot, unit) in [
        ("--device-gflops", gflops, &mut m.gflops, "GFLOP/s"),
        ("--device-gbps", gbps, &mut m.gbps, "GB/s"),
        ("--link-gbps", link_gbps, &mut m.link_gbps, "GB/s"),
    ] {
        if let Some(v) = v {
            if !(v.is_finite() && v > 0.0) {
                return Err(Failure::Env(format!("{flag} {v}: must be a positive number of {unit}")));
            }
            *slot = v;
        }
    }
    if let Some(v) = latency_us {
        if !(v.is_finite() && v >= 0.0) {
            return Err(Failure::Env(format!("--link-latency-us {v}: must be a number of microseconds, 0 or more")));
        }
        m.link_latency_us = v;
    }
    Ok(m)
}

/// A count as an integer when it is one (a scan's trips make counts large).
fn count(x: f64) -> String {
    if x.fract() == 0.0 && x < 1e15 {
        format!("{}", x as u64)
    } else {
        sig3(x)
    }
}

/// The block `pjc explain` prints after the memory lines.
pub fn explain_ratio(plan: &pjc_plan::Plan, mesh: &pjc_ir::Mesh, m: &Machine, class: DeviceClass) -> String {
    let class = class.name();
    let c = plan_cost(plan, mesh, m);
    let at_least = if c.lower_bound { "at least " } else { "" };
    let mut out = format!(
        "\ncommunication/compute per step (cost model; {class} peaks {} GFLOP/s, {} GB/s per device; link {} GB/s, {} us per message):\n",
        sig3(m.gflops),
        sig3(m.gbps),
        sig3(m.link_gbps),
        sig3(m.link_latency_us)
    );
    out.push_str(&format!(
        "  compute      {at_least}~{} ({}, {} moved; each step at its roofline)\n",
        duration_text(c.compute_s),
        si_text(c.flops, "FLOP"),
        si_text(c.bytes, "B")
    ));
    if c.collectives == 0.0 {
        out.push_str("  collectives  none in the plan\n");
    } else {
        let calls = if c.collectives == 1.0 { "1 collective".to_string() } else { format!("{} collectives", count(c.collectives)) };
        out.push_str(&format!(
            "  collectives  {at_least}~{} ({} B per device in {calls}, ring formulas)\n",
            duration_text(c.collective_s),
            count(c.collective_bytes),
        ));
    }
    let verdict = match c.ratio() {
        None if c.collectives == 0.0 => "  ratio: nothing to communicate on this mesh, so the 1:5–1:10 rule of thumb does not apply\n".to_string(),
        None => "  ratio: the collectives span a single device here and cost nothing, so the 1:5–1:10 rule of thumb does not apply\n".to_string(),
        Some(r) => {
            let what = if r < 5.0 {
                "below 1:5, communication-bound: a larger batch per device, gradient accumulation or a faster link (--link-gbps) raises it"
            } else if r <= 10.0 {
                "within the range"
            } else {
                "above 1:10, compute-bound: communication is cheap here"
            };
            format!("  ratio 1:{} (communication:compute) — the seed's rule of thumb keeps it between 1:5 and 1:10; {what}\n", sig3(r))
        }
    };
    out.push_str(&verdict);
    if c.lower_bound {
        out.push_str("  (a while loop's trip count is unknown before the run: each counted once, so the times are lower bounds)\n");
    }
    out
}
