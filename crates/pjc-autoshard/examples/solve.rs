//! Runs auto-sharding alone on a PIR file and prints `explain`'s report
//! with the time of each phase, for profiling the search without the rest
//! of the compiler (benches/autoshard/run.sh times the whole `explain`):
//!
//!     cargo run --release -p pjc-autoshard --example solve -- FILE.pir [LIMIT_BYTES] [SECONDS]

use pjc_autoshard::{auto_shard, Link, Machine, Options};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: solve FILE.pir [LIMIT_BYTES] [SECONDS]");
        std::process::exit(2);
    };
    let src = std::fs::read_to_string(path).expect("reads the file");
    let t0 = Instant::now();
    let mut m = pjc_front::parse(&src).expect("parses");
    pjc_front::verify(&mut m).expect("verifies");
    pjc_transforms::expand(&mut m).expect("expands");
    let entry = m.func_by_name("main").expect("has @main");
    let limit = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(u64::MAX);
    let seconds = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10.0);
    let opts = Options {
        machine: Machine {
            gflops: 1000.0,
            gbps: 100.0,
            axis_links: vec![],
            link: Link { gbps: 25.0, latency_us: 5.0 },
        },
        memory_limit: limit,
        memory_weight: std::env::var("MEMORY_WEIGHT").ok().and_then(|v| v.parse().ok()).unwrap_or(1.0),
        time_limit: Duration::from_secs_f64(seconds),
        runner_up: std::env::var("RUNNER_UP").is_ok_and(|v| v == "1"),
    };
    let t1 = Instant::now();
    let r = auto_shard(&mut m, entry, &opts);
    println!("{}", r.text());
    println!("parse+expand {:.3} s, auto_shard {:.3} s", (t1 - t0).as_secs_f64(), t1.elapsed().as_secs_f64());
    for (what, s) in &r.phases {
        println!("  {what}: {s:.3} s");
    }
}
