//! How much memory this machine can still give: what the interpreter and the
//! executables compare the sizes a program implies against before allocating
//! (a failed allocation aborts a Rust process; a check first turns it into one
//! clear error).

/// A `KEY: N kB` line of /proc/meminfo, in bytes.
fn meminfo(text: &str, key: &str) -> Option<u64> {
    let l = text.lines().find(|l| l.starts_with(key) && l[key.len()..].starts_with(':'))?;
    let kb: u64 = l[key.len() + 1..].trim().trim_end_matches("kB").trim().parse().ok()?;
    kb.checked_mul(1024)
}

/// MemAvailable plus free swap, capped by the cgroup (v2) limit's remaining
/// room when one is set (containers, Slurm jobs). `None` when unknown (not
/// Linux).
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let mut avail = meminfo(&text, "MemAvailable")?.saturating_add(meminfo(&text, "SwapFree").unwrap_or(0));
    let read = |p: &str| std::fs::read_to_string(p).ok().and_then(|s| s.trim().parse::<u64>().ok());
    if let (Some(max), Some(cur)) = (read("/sys/fs/cgroup/memory.max"), read("/sys/fs/cgroup/memory.current")) {
        avail = avail.min(max.saturating_sub(cur));
    }
    Some(avail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_lines() {
        let t = "MemTotal:       16000000 kB\nMemAvailable:    8000000 kB\nSwapFree:              0 kB\n";
        assert_eq!(meminfo(t, "MemAvailable"), Some(8_192_000_000));
        assert_eq!(meminfo(t, "Mem"), None);
        assert!(available_memory().is_some_and(|a| a > 1 << 20));
    }
}

/// Parses a size: bytes, or a number with K, M, G or T (powers of 1024).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                'B' => 1,
                _ => return None,
            };
            (&s[..i], m)
        }
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}
