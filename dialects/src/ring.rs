//! The ring algorithms' cost of each collective: the bytes a device sends
//! and the messages it sends them in, for the plan's cost model
//! (`pjc_plan::cost`); the partitioner's collective report (`pjc-partition`'s
//! `record`) computes the same bytes. And the device and link figures
//! ([`Machine`]) that cost model and the partitioner's all-reduce combiner
//! price them against. Kept out of `kinds.rs`, whose text is
//! part of the artefact's schema hash: these formulas are not serialized.

use crate::kinds::CollectiveKind;

/// The peaks the model divides by, for one device and its link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    /// Arithmetic throughput, GFLOP/s (10^9 operations per second).
    pub gflops: f64,
    /// Device memory bandwidth, GB/s (10^9 bytes per second).
    pub gbps: f64,
    /// Bandwidth of each device's link to the others, GB/s (bytes, not bits).
    pub link_gbps: f64,
    /// Latency of one message of a collective, microseconds.
    pub link_latency_us: f64,
}

impl Machine {
    /// A CPU device (one rank, one server): 1 TFLOP/s — e.g. 16 AVX2 cores at
    /// 2 GHz with two 8-lane f32 FMA units each (16 × 2 × 8 × 2 × 2 GHz) —,
    /// 100 GB/s of memory bandwidth (one socket of DDR4/DDR5, sustained), and
    /// a 200 Gb/s (HDR InfiniBand) link with 5 µs per message.
    pub const CPU: Machine = Machine { gflops: 1000.0, gbps: 100.0, link_gbps: 25.0, link_latency_us: 5.0 };
    /// A CUDA device, an H100 SXM: 67 TFLOP/s (f32 without tensor cores:
    /// what cuBLAS runs pjc's f32 products with), 3350 GB/s of HBM3, and one
    /// 400 Gb/s (NDR InfiniBand) link per GPU, as multi-node DGX/HGX H100
    /// systems have, with 10 µs per message. Within one NVLink node pass
    /// `--link-gbps 450`.
    pub const CUDA: Machine = Machine { gflops: 67_000.0, gbps: 3350.0, link_gbps: 50.0, link_latency_us: 10.0 };
}

impl CollectiveKind {
    /// Bytes each device of a group of `n` sends, by the ring algorithms'
    /// formulas, for an operand of `operand` and a result of `result` bytes
    /// (per device): all-reduce 2(n−1)/n·S, all-gather (n−1)/n of the
    /// gathered result, reduce-scatter (n−1)/n of the operand, all-to-all
    /// (n−1)/n·S, permute S. Saturates at `u64::MAX`; 0 for a group of one.
    pub fn ring_bytes(self, operand: u64, result: u64, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        let ring = |k: u128, s: u64| (k * (n as u128 - 1)).checked_mul(s as u128).and_then(|x| u64::try_from(x / n as u128).ok()).unwrap_or(u64::MAX);
        match self {
            CollectiveKind::AllReduce => ring(2, result),
            CollectiveKind::AllGather | CollectiveKind::AllToAll => ring(1, result),
            CollectiveKind::ReduceScatter => ring(1, operand),
            CollectiveKind::CollectivePermute => result,
        }
    }

    /// How many messages one device sends one after another in the ring
    /// algorithm over `n` devices (what a per-message latency multiplies):
    /// 2(n−1) for all-reduce (reduce-scatter then all-gather), n−1 for
    /// all-gather, reduce-scatter and all-to-all, 1 for permute; 0 for a
    /// group of one.
    pub fn ring_messages(self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        match self {
            CollectiveKind::AllReduce => 2 * (n - 1),
            CollectiveKind::AllGather | CollectiveKind::ReduceScatter | CollectiveKind::AllToAll => n - 1,
            CollectiveKind::CollectivePermute => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_formulas() {
        // 4 devices, 1024-byte per-device tensors (a reduce-scatter's result is a quarter).
        assert_eq!(CollectiveKind::AllReduce.ring_bytes(1024, 1024, 4), 1536);
        assert_eq!(CollectiveKind::AllGather.ring_bytes(256, 1024, 4), 768);
        assert_eq!(CollectiveKind::ReduceScatter.ring_bytes(1024, 256, 4), 768);
        assert_eq!(CollectiveKind::AllToAll.ring_bytes(1024, 1024, 4), 768);
        assert_eq!(CollectiveKind::CollectivePermute.ring_bytes(1024, 1024, 4), 1024);
        assert_eq!(CollectiveKind::AllReduce.ring_messages(4), 6);
        assert_eq!(CollectiveKind::AllGather.ring_messages(4), 3);
        for k in CollectiveKind::ALL {
            assert_eq!((k.ring_bytes(1024, 1024, 1), k.ring_messages(1)), (0, 0), "{k}");
        }
        assert_eq!(CollectiveKind::AllReduce.ring_bytes(u64::MAX, u64::MAX, 8), u64::MAX);
    }
}
