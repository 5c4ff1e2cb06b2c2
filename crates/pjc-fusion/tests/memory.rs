//! The buffer plan's report of its fullest moment (`pjc explain`).

use pjc_fusion::{peak_live, plan_memory};

fn plan_of(src: &str) -> pjc_plan::Plan {
    let m = pjc_front::load(src).unwrap_or_else(|e| panic!("{e:?}"));
    pjc_fusion::plan_program(&m, m.func_by_name("main").unwrap()).unwrap()
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


/// A stacked scan output is written from the scan's first iteration: its
/// bytes must not be lent to a buffer the scan still reads (here the
/// operand it scans, the first scan's stacked output), even when the stacked
/// output is first named afterwards by another control step. The buffer
/// plan of this program was unsound until the stacked output's life started
/// at its scan (found by running the plan on the arena: `check_memory`).
#[test]
fn a_stacked_output_lives_from_its_scan_on() {
    let p = plan_of("func @fwd(%c: f32[16], %x: f32[16]) -> (f32[16], f32[16]) {
  %e = exp %x
  %n = add %c, %e
  return %n, %n
}

func @bwd(%c: f32[16], %h: f32[16]) -> (f32[16], f32[16]) {
  %t = tanh %h
  %n = mul %c, %t
  return %n, %t
}

func @b0(%g: f32[4,16]) -> (f32[4,16]) {
  %y = neg %g
  return %y
}

func @b1(%g: f32[4,16]) -> (f32[4,16]) {
  return %g
}

func @main(%c0: f32[16], %xs: f32[4,16], %i: i32[]) -> (c: f32[16], r: f32[4,16]) {
  %c1, %hs = scan @fwd(%c0, %xs) {length=4, carries=1}
  %c2, %gs = scan @bwd(%c1, %hs) {length=4, carries=1, reverse=true}
  %r = switch %i, @b0, @b1(%gs)
  return %c2, %r
}");
    let mem = plan_memory(&p, &[]);
    for device_forms in [false, true] {
        pjc_fusion::check_memory(&p, &mem, &[], device_forms).unwrap_or_else(|e| panic!("{e}\n{p}\n{mem:?}"));
    }
}

/// The check finds two buffers live at once that share bytes, and names
/// both and where each was written and read.
#[test]
fn the_memory_check_names_buffers_that_overlap() {
    let p = plan_of("func @main(%x: f32[64], %y: f32[64]) -> (s: f32[]) {
  %a = exp %x
  %b = tanh %y
  %s = dot_general %a, %b {lhs_contract=[0], rhs_contract=[0]} : f32[]
  return %s
}");
    let mem = plan_memory(&p, &[]);
    pjc_fusion::check_memory(&p, &mem, &[], false).unwrap();
    let temps: Vec<usize> = (0..p.buffers.len()).filter(|&i| matches!(p.buffers[i].kind, pjc_plan::BufferKind::Temp) && !p.results.contains(&i)).collect();
    assert!(!temps.is_empty(), "{p}");
    // Put a temporary on top of parameter %y, which the plan reads after
    // (or while) the temporary is written.
    let y = p.params[1];
    let mut broken = mem.clone();
    for &t in &temps {
        broken.offsets[t] = mem.offsets[y];
    }
    let e = pjc_fusion::check_memory(&p, &broken, &[], false).expect_err("overlapping live buffers");
    assert!(e.contains("overwritten by") && e.contains("is read at"), "{e}");
    let names: Vec<&str> = temps.iter().map(|&t| p.buffers[t].name.as_str()).collect();
    assert!(e.contains("%y") || names.iter().any(|n| e.contains(&format!("%{n} "))), "{e}\n{p}");
}

/// The overlap scheduler's memory bound: keeping a big all-reduce's input
/// live until its done would raise the peak far beyond the slack (here the
/// input is as large as everything else live), so the collective stays
/// blocking; a small one beside the same work overlaps it.
#[test]
fn overlap_stays_within_the_memory_bound() {
    let prog = |n: u64| {
        format!(
            "mesh [data=2]

spmd func @main(%x: f32[{n}] on [data], %y: f32[512,512]) -> (r: f32[{n}] on [data], s: f32[512,512]) {{
  %a = exp %x
  %r = all_reduce %a {{axes=[data], kind=sum}}
  %t1 = tanh %y
  %t2 = dot_general %t1, %t1 {{lhs_contract=[1], rhs_contract=[0]}} : f32[512,512]
  %t3 = tanh %t2
  %s = dot_general %t3, %t3 {{lhs_contract=[1], rhs_contract=[0]}} : f32[512,512]
  return %r, %s
}}"
        )
    };
    let pairs = |p: &pjc_plan::Plan| p.steps.iter().filter(|s| matches!(s, pjc_plan::Step::Collective { done: Some(_), .. })).count();
    // 4 MiB in flight beside 3 MiB of products: blocking.
    let big = plan_of(&prog(1 << 20));
    assert_eq!(pairs(&big), 0, "{big}");
    // 4 KiB in flight: overlapped, within the bound.
    let small = plan_of(&prog(1 << 10));
    assert_eq!(pairs(&small), 1, "{small}");
    for p in [&big, &small] {
        pjc_fusion::check_memory(p, &plan_memory(p, &[]), &[], false).unwrap();
    }
}
