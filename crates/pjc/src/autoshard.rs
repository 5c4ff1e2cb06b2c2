//! `--auto-shard` and its flags (compile and explain): what the auto-sharding
//! stage (`pjc-autoshard`, run by `pipeline.rs`) is given.

use crate::failure::Failure;
use crate::ratio::DeviceClass;

/// `--auto-shard [--memory-limit B] [--axis-link AXIS=GBPS:US]... [--auto-shard-time S]`.
#[derive(clap::Args, Clone, Default)]
pub struct AutoShardArgs {
    /// Choose the shardings of the unannotated entry values by a cost model
    /// (docs/auto-sharding.md); written annotations are kept.
    #[arg(long)]
    pub auto_shard: bool,
    /// With --auto-shard: the memory of one device, bytes (suffix K, M, G or
    /// T: powers of 1024). Default: this machine's memory for the cpu class,
    /// 80G for cuda.
    #[arg(long, value_name = "BYTES")]
    pub memory_limit: Option<String>,
    /// With --auto-shard: the link of one mesh axis, GB/s and microseconds
    /// per message, e.g. model=450:1 (an NVLink axis). Repeatable; other axes
    /// use the device class's link.
    #[arg(long, value_name = "AXIS=GBPS:US")]
    pub axis_link: Vec<String>,
    /// With --auto-shard: how long the search may take, seconds (default 10);
    /// past it the best plan found is used, or none.
    #[arg(long, value_name = "S")]
    pub auto_shard_time: Option<f64>,
    /// With --auto-shard: how much peak memory counts beside step time
    /// (default 1: a plan may spend f of the all-replicated step time to cut
    /// f of its peak; 0: time alone, memory only bounded by the limit).
    #[arg(long, value_name = "W")]
    pub memory_weight: Option<f64>,
}

/// Bytes from `N`, `NK`, `NM`, `NG`, `NT` (powers of 1024).
pub fn parse_bytes(s: &str) -> Option<u64> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last()? {
        (i, 'K' | 'k') => (&t[..i], 1u64 << 10),
        (i, 'M' | 'm') => (&t[..i], 1 << 20),
        (i, 'G' | 'g') => (&t[..i], 1 << 30),
        (i, 'T' | 't') => (&t[..i], 1 << 40),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()?
        .checked_mul(mult)
        .filter(|&b| b > 0)
}

/// This machine's physical memory, bytes (the cpu class's default limit).
fn physical_memory() -> u64 {
    // SAFETY: sysconf only reads system configuration.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && size > 0 {
        (pages as u64).saturating_mul(size as u64)
    } else {
        16 << 30
    }
}

impl AutoShardArgs {
    /// The stage's options, or `None` without `--auto-shard`.
    pub fn get(
        &self,
        machine: &pjc_plan::cost::Machine,
        class: DeviceClass,
    ) -> Result<Option<pjc_autoshard::Options>, Failure> {
        if !self.auto_shard {
            if self.memory_limit.is_some()
                || !self.axis_link.is_empty()
                || self.auto_shard_time.is_some()
                || self.memory_weight.is_some()
            {
                return Err(Failure::Env(
                    "--memory-limit, --axis-link, --auto-shard-time and --memory-weight apply with --auto-shard"
                        .into(),
                ));
            }
            return Ok(None);
        }
        let memory_limit = match &self.memory_limit {
            Some(s) => parse_bytes(s).ok_or_else(|| {
                Failure::Env(format!(
                    "--memory-limit {s}: expected bytes, e.g. 16G or 1048576"
                ))
            })?,
            None => match class {
                DeviceClass::Cpu => physical_memory(),
                DeviceClass::Cuda => 80 << 30,
            },
        };
        let mut axis_links = vec![];
        for spec in &self.axis_link {
            let bad = || {
                Failure::Env(format!(
                    "--axis-link {spec}: expected AXIS=GBPS:US, e.g. model=450:1"
                ))
            };
            let (axis, rest) = spec.split_once('=').ok_or_else(bad)?;
            let (g, us) = rest.split_once(':').ok_or_else(bad)?;
            let (gbps, latency_us) = (
                g.parse::<f64>().map_err(|_| bad())?,
                us.parse::<f64>().map_err(|_| bad())?,
            );
            if !(gbps > 0.0 && gbps.is_finite() && latency_us >= 0.0 && latency_us.is_finite()) {
                return Err(bad());
            }
            axis_links.push((axis.to_string(), pjc_autoshard::Link { gbps, latency_us }));
        }
        let seconds = self.auto_shard_time.unwrap_or(10.0);
        if !(seconds > 0.0 && seconds.is_finite()) {
            return Err(Failure::Env(format!(
                "--auto-shard-time {seconds}: expected a positive number of seconds"
            )));
        }
        let memory_weight = self.memory_weight.unwrap_or(1.0);
        if !(memory_weight >= 0.0 && memory_weight.is_finite()) {
            return Err(Failure::Env(format!(
                "--memory-weight {memory_weight}: expected a number >= 0"
            )));
        }
        let link = pjc_autoshard::Link {
            gbps: machine.link_gbps,
            latency_us: machine.link_latency_us,
        };
        Ok(Some(pjc_autoshard::Options {
            machine: pjc_autoshard::Machine {
                gflops: machine.gflops,
                gbps: machine.gbps,
                axis_links,
                link,
            },
            memory_limit,
            memory_weight,
            time_limit: std::time::Duration::from_secs_f64(seconds),
            runner_up: true,
        }))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes() {
        assert_eq!(super::parse_bytes("16G"), Some(16 << 30));
        assert_eq!(super::parse_bytes("1048576"), Some(1 << 20));
        assert_eq!(super::parse_bytes("2k"), Some(2048));
        assert_eq!(super::parse_bytes("0"), None);
        assert_eq!(super::parse_bytes("G"), None);
        assert_eq!(super::parse_bytes("1.5G"), None);
    }
}
