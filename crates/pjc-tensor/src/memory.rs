//! How much memory this machine can give a process now: what the interpreter
//! and the executables compare the sizes a program implies against before
//! allocating (a failed allocation aborts a Rust process; a check first turns
//! it into one clear error).

/// Bytes available to this process: the kernel's `MemAvailable`, lowered to
/// the cgroup (v2) limit's remaining room when one is set (containers, Slurm
/// jobs). `None` where neither can be read (not Linux).
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|r| r.trim().strip_suffix("kB"))
            .and_then(|kb| kb.trim().parse::<u64>().ok())
            .map(|kb| kb.saturating_mul(1024))
    });
    let read = |name: &str| std::fs::read_to_string(format!("/sys/fs/cgroup/{name}")).ok();
    let cgroup = match (read("memory.max"), read("memory.current")) {
        (Some(max), Some(cur)) => match (max.trim().parse::<u64>(), cur.trim().parse::<u64>()) {
            (Ok(max), Ok(cur)) => Some(max.saturating_sub(cur)),
            _ => None, // "max": no limit
        },
        _ => None,
    };
    match (meminfo, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_linux_machine_reports_some_memory() {
        let m = super::available_memory().expect("Linux has /proc/meminfo");
        assert!(m > 1 << 20, "{m}");
    }
}
