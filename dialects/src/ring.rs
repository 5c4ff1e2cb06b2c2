//! The ring algorithms' cost of each collective: the bytes a device sends
//! and the messages it sends them in, for the plan's cost model
//! (`pjc_plan::cost`); the partitioner's collective report (`pjc-partition`'s
//! `record`) computes the same bytes. Kept out of `kinds.rs`, whose text is
//! part of the artefact's schema hash: these formulas are not serialized.

use crate::kinds::CollectiveKind;

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
