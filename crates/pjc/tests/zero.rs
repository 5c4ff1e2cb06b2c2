//! Sharded optimizer state (ZeRO) and fully sharded weights (FSDP) on the
//! Adam step of `examples/zero/`: three variants of one program that differ
//! only in their `on` annotations — (a) weights and state replicated, (b) the
//! state split over data, (c) weights and state split over data.
//!
//! - `pjc explain`'s totals: (b) and (c) send at most 1.05x the bytes of (a)
//!   (all_gather + reduce_scatter = all_reduce), by the collectives that say
//!   so, and need less memory per device;
//! - the partitioned programs in the interpreter equal the global one;
//! - executables of the three under `mpirun -np 4` compute the same step as
//!   `pjc eval` of the global program.

mod common;

use pjc_ir::DType;
use pjc_tensor::compare::{close, Tolerance};
use pjc_tensor::{Buf, Tensor};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

const VARIANTS: [&str; 3] = ["replicated", "zero", "fsdp"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn file(v: &str) -> String {
    format!("examples/zero/{v}.pir")
}

fn pjc(args: &[&str]) -> Output {
    let o = Command::new(env!("CARGO_BIN_EXE_pjc")).current_dir(repo()).args(args).output().unwrap();
    assert!(o.status.success(), "pjc {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    o
}

fn scratch() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!("pjc-zero-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One collective line of `pjc explain`: value, kind, bytes, reason.
struct Line {
    value: String,
    kind: String,
    bytes: u64,
    reason: String,
}

/// What `pjc explain` says about one variant.
struct Explained {
    collectives: Vec<Line>,
    total: u64,
    peak: u64,
}

fn explain(v: &str) -> Explained {
    let out = String::from_utf8(pjc(&["explain", &file(v)]).stdout).unwrap();
    let section = out.split("collectives inserted by the partitioner").nth(1).unwrap_or_else(|| panic!("{v}: no collectives:\n{out}"));
    let mut collectives = vec![];
    let mut total = None;
    for l in section.lines().skip(1) {
        let l = l.trim();
        if let Some(rest) = l.strip_prefix("total: ") {
            // "5 collectives, 221190 B per device"
            let b = rest.split(", ").nth(1).and_then(|s| s.strip_suffix(" B per device")).unwrap();
            total = Some(b.parse::<u64>().unwrap());
            break;
        }
        // "%w1.ag  all_gather  over [data]  98304 B  reason"
        let words: Vec<&str> = l.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "B").unwrap_or_else(|| panic!("{v}: {l}"));
        collectives.push(Line {
            value: words[0].to_string(),
            kind: words[1].to_string(),
            bytes: words[at - 1].parse().unwrap(),
            reason: words[at + 1..].join(" "),
        });
    }
    let peak = out
        .lines()
        .find_map(|l| l.strip_prefix("peak memory per device: "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{v}: no peak memory:\n{out}"))
        .parse()
        .unwrap();
    Explained { collectives, total: total.unwrap_or_else(|| panic!("{v}: no total:\n{out}")), peak }
}

#[test]
fn zero_and_fsdp_send_the_bytes_of_the_all_reduce_with_less_memory() {
    let [a, b, c] = VARIANTS.map(explain);
    let sum = |e: &Explained| e.collectives.iter().map(|l| l.bytes).sum::<u64>();
    for e in [&a, &b, &c] {
        assert_eq!(sum(e), e.total, "the total is the sum of the lines");
    }
    // (a): one all_reduce per gradient (and the loss's), nothing else.
    assert!(a.collectives.iter().all(|l| l.kind == "all_reduce"), "{:?}", a.collectives.iter().map(|l| &l.value).collect::<Vec<_>>());
    let kinds = |e: &Explained, k: &str| -> Vec<String> {
        let mut v: Vec<String> = e.collectives.iter().filter(|l| l.kind == k).map(|l| l.value.clone()).collect();
        v.sort();
        v
    };
    // (b): each weight's gradient is reduce-scattered onto the state's split,
    // the update runs there, and each new weight is all-gathered once.
    assert_eq!(kinds(&b, "reduce_scatter"), ["%w1.ct.rs", "%w2.ct.rs"]);
    let gathered: Vec<&str> = b.collectives.iter().filter(|l| l.kind == "all_gather").map(|l| l.reason.as_str()).collect();
    assert_eq!(gathered.len(), 2, "{gathered:?}");
    assert!(gathered.iter().all(|r| r.starts_with("result 'w")), "{gathered:?}");
    assert_eq!(kinds(&b, "all_reduce").len(), 1, "only the loss is all-reduced");
    // (c): each weight is all-gathered before its forward product (and that
    // copy serves the backward one), each gradient reduce-scattered, and no
    // activation moves.
    assert_eq!(kinds(&c, "all_gather"), ["%w1.ag", "%w2.ag"]);
    assert_eq!(kinds(&c, "reduce_scatter"), ["%w1.ct.rs", "%w2.ct.rs"]);
    assert!(kinds(&c, "all_to_all").is_empty());
    for l in c.collectives.iter().filter(|l| l.kind == "all_gather") {
        assert!(l.reason.starts_with("operand 1 of dot_general %z1") || l.reason.starts_with("operand 1 of dot_general %logits"), "{}", l.reason);
    }
    // The bytes: at most 1.05x the all-reduce's, from explain's own totals.
    assert!(b.total * 100 <= a.total * 105, "ZeRO sends {} B against {} B", b.total, a.total);
    assert!(c.total * 100 <= a.total * 105, "FSDP sends {} B against {} B", c.total, a.total);
    // The memory: a quarter of the state (and for FSDP of the weights) per device.
    assert!(b.peak < a.peak, "ZeRO peak {} B against {} B", b.peak, a.peak);
    assert!(c.peak < b.peak, "FSDP peak {} B against ZeRO's {} B", c.peak, b.peak);
}

fn random(shape: Vec<usize>, seed: &mut u64, lo: f32, hi: f32) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            lo + (hi - lo) * ((*seed % 10001) as f32 / 10000.0)
        })
        .collect();
    Tensor::new(shape, Buf::F32(v))
}

/// Inputs of the step, by parameter name: Adam's second moments positive,
/// as they are in training.
fn inputs() -> Vec<(String, Tensor)> {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    [
        ("x", vec![512, 128], -1.0, 1.0),
        ("labels", vec![512, 16], 0.0, 1.0),
        ("w1", vec![128, 256], -0.1, 0.1),
        ("w2", vec![256, 16], -0.1, 0.1),
        ("m1", vec![128, 256], -1e-3, 1e-3),
        ("v1", vec![128, 256], 1e-7, 1e-5),
        ("m2", vec![256, 16], -1e-3, 1e-3),
        ("v2", vec![256, 16], 1e-7, 1e-5),
    ]
    .into_iter()
    .map(|(n, s, lo, hi)| (n.to_string(), random(s, &mut seed, lo, hi)))
    .collect()
}

/// The global step in the interpreter: the reference every partitioning
/// must reproduce (the three variants have the same global meaning).
fn reference(named: &[(String, Tensor)]) -> Vec<(String, Tensor)> {
    let src = std::fs::read_to_string(repo().join(file("replicated"))).unwrap();
    let mut m = pjc_front::load(&src).unwrap();
    pjc_transforms::expand(&mut m).unwrap();
    let entry = m.func_by_name("main").unwrap();
    let f = &m.funcs[entry];
    let args: Vec<Tensor> = (0..f.params.len()).map(|i| named.iter().find(|(n, _)| n == f.param_name(i)).unwrap().1.clone()).collect();
    let got = pjc_interp::eval(&m, entry, args).unwrap();
    (0..f.results.len()).map(|k| (f.result_name(k).to_string(), got[k].clone())).collect()
}

/// Every result close to the reference: spec section 11's f32 tolerance
/// (1e-5 relative, the reassociation rule) — the partitioned steps add the
/// same products in other groupings (per device, then across devices).
fn assert_matches(what: &str, want: &[(String, Tensor)], got: &[(String, Tensor)]) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (name, w) in want {
        let g = &got.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("{what}: no result {name}")).1;
        close(w, g, Tolerance::spec(DType::F32)).unwrap_or_else(|e| panic!("{what}, {name}: {e}"));
    }
}

#[test]
fn partitioned_variants_compute_the_global_step_in_the_interpreter() {
    let named = inputs();
    let want = reference(&named);
    for v in VARIANTS {
        // The per-device program pjc compiles, in the interpreter's lockstep
        // devices (its global view: the same inputs and results).
        let spmd = pjc(&["compile", &file(v), "--emit", "spmd"]).stdout;
        let pm = pjc_front::load(std::str::from_utf8(&spmd).unwrap()).unwrap();
        let entry = pm.func_by_name("main").unwrap();
        let f = &pm.funcs[entry];
        let args: Vec<Tensor> = (0..f.params.len()).map(|i| named.iter().find(|(n, _)| n == f.param_name(i)).unwrap().1.clone()).collect();
        let got = pjc_interp::eval(&pm, entry, args).unwrap();
        let got: Vec<(String, Tensor)> = (0..f.results.len()).map(|k| (f.result_name(k).to_string(), got[k].clone())).collect();
        assert_matches(&format!("{v} (interpreter)"), &want, &got);
    }
}

#[test]
fn executables_of_the_three_variants_compute_the_same_step_under_mpirun() {
    let dir = scratch();
    let named = inputs();
    let input = dir.join("in.safetensors");
    pjc_tensor::write_safetensors(&input, &named).unwrap();
    let want = reference(&named);
    for v in VARIANTS {
        let exe = dir.join(format!("{v}.bin"));
        pjc(&["compile", &file(v), "-o", exe.to_str().unwrap()]);
        let out = dir.join(format!("{v}.safetensors"));
        common::mpirun_ok(4, &exe, &[std::ffi::OsStr::new("--inputs"), input.as_os_str(), "--output".as_ref(), out.as_os_str()], 120);
        assert_matches(&format!("{v} (mpirun -np 4)"), &want, &pjc_tensor::read_safetensors(&out).unwrap());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
