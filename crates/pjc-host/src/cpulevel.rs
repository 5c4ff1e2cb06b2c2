//! Which x86-64 micro-architecture levels this CPU runs ([`CpuLevel`]): the
//! JIT compiles for the best one, and the runtime loads the best host-kernel
//! object an executable carries.

pub use pjc_plan::CpuLevel;

/// The features `level` needs that this CPU lacks (empty: it runs that
/// level's code). Off x86-64 every feature is missing.
pub fn missing(level: CpuLevel) -> Vec<&'static str> {
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! have {
            ($($f:tt),*) => { vec![$(($f, std::is_x86_feature_detected!($f))),*] };
        }
        let v2 = have!("sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "cmpxchg16b");
        let v3 = have!("avx", "avx2", "fma", "bmi1", "bmi2", "f16c", "lzcnt", "movbe");
        let v4 = have!("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl");
        let need: Vec<(&'static str, bool)> = match level {
            CpuLevel::V2 => v2,
            CpuLevel::V3 => [v2, v3].concat(),
            CpuLevel::V4 => [v2, v3, v4].concat(),
        };
        need.into_iter().filter(|(_, ok)| !ok).map(|(n, _)| n).collect()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = level;
        vec!["x86-64"]
    }
}

/// The most capable level this CPU runs, if any.
pub fn best() -> Option<CpuLevel> {
    CpuLevel::ALL.into_iter().find(|&l| missing(l).is_empty())
}
