//! Programs that declare more bytes than a u64 counts (found by the
//! `compile_plan` fuzz target): the planner says "unsupported" instead of
//! overflowing in byte sizes, alignment or the arena offsets.

fn plan_of(src: &str) -> Result<pjc_plan::Plan, pjc_fusion::Unplannable> {
    let m = pjc_front::load(src).unwrap_or_else(|d| panic!("{}", pjc_front::render("t.pir", src, &d)));
    let f = m.funcs.values().next().unwrap();
    pjc_fusion::plan(f)
}

#[test]
fn a_value_of_2_pow_64_bytes_has_no_plan() {
    let e = plan_of("func @main(%x: f32[4611686018427387904]) -> (y: f32[4611686018427387904]) {\n  %y = neg %x\n  return %y\n}\n").unwrap_err();
    assert!(e.to_string().contains("%x (f32[4611686018427387904]) needs more than 2^64 bytes"), "{e}");
}

#[test]
fn a_buffer_just_under_2_pow_64_bytes_cannot_be_aligned() {
    // 2^64 - 16 bytes: aligning it to 64 bytes does not fit.
    let e = plan_of("func @main(%x: f32[4611686018427387900]) -> (y: f32[]) {\n  %y = reduce %x {dims=[0], kind=sum}\n  return %y\n}\n").unwrap_err();
    assert!(e.to_string().contains("needs more than 2^64 bytes"), "{e}");
}

#[test]
fn buffers_that_together_exceed_2_pow_64_bytes_have_no_plan() {
    // Two buffers of 2^63 bytes: each fits, the arena does not.
    let e = plan_of("func @main(%x: f32[2305843009213693952]) -> (y: f32[2305843009213693952]) {\n  %y = neg %x\n  return %y\n}\n").unwrap_err();
    assert!(e.to_string().contains("@main together need more than 2^64 bytes"), "{e}");
}

#[test]
fn large_but_representable_programs_still_plan() {
    // 2^62 bytes in and out: the arena (2^63 bytes) fits in u64.
    let p = plan_of("func @main(%x: f32[1152921504606846976]) -> (y: f32[1152921504606846976]) {\n  %y = neg %x\n  return %y\n}\n").unwrap();
    let mem = pjc_fusion::plan_memory(&p, &[]);
    assert_eq!(mem.peak, 1 << 63);
}
