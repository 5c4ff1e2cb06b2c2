//! The buffer plan's report of its fullest moment (`pjc explain`).

use pjc_fusion::{peak_live, plan_memory};

fn plan_of(src: &str) -> pjc_plan::Plan {
    let m = pjc_front::load(src).unwrap_or_else(|e| panic!("{e:?}"));
    pjc_fusion::plan(&m.funcs[m.func_by_name("main").unwrap()]).unwrap()
}

/// The fullest moment holds the buffers live at once, sums them, is at
/// most the arena's peak, and names its step.
#[test]
fn the_fullest_moment_lists_what_is_live() {
    // %big lives from its kernel to the product that reads it: then
    // everything is live (parameters, %big, the result).
    let p = plan_of("func @main(%x: f32[64], %w: f32[64,8]) -> (s: f32[32,8]) {
  %b = broadcast %x {dims=[1]} : f32[32,64]
  %big = exp %b
  %s = dot_general %big, %w {lhs_contract=[1], rhs_contract=[0]} : f32[32,8]
  return %s
}");
    let mem = plan_memory(&p, &[]);
    let peak = peak_live(&p, &mem);
    assert!(peak.bytes <= mem.peak, "{peak:?} {mem:?}");
    assert_eq!(peak.bytes, peak.buffers.iter().map(|b| b.1).sum::<u64>());
    assert_eq!(peak.bytes, 256 + 2048 + 8192 + 1024, "{peak:?}");
    assert_eq!(peak.step.as_deref(), Some("dot_general"), "{peak:?}");
    assert_eq!(peak.at, (2, 2), "{peak:?}");
    let names: Vec<&str> = peak.buffers.iter().map(|&(i, _)| p.buffers[i].name.as_str()).collect();
    assert_eq!(names, ["big", "w", "s", "x"], "{peak:?}");
}

