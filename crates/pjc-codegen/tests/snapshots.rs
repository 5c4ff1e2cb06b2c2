//! Snapshots of the emitted x86-64 LLVM IR (`pjc compile --emit llvm`) and PTX
//! (`--emit ptx`, sm_90) for three small kernels. `PJC_BLESS=1 cargo test -p
//! pjc-codegen --test snapshots` rewrites the expected files under
//! tests/snapshots/ (review the diff!).

mod common;

use std::path::PathBuf;

const PROGRAMS: [(&str, &str); 3] = [
    ("bf16_add", "func @main(%a: bf16[3], %b: bf16[3]) -> (r: bf16[3]) {\n  %r = add %a, %b\n  return %r\n}\n"),
    ("i32_div", "func @main(%a: i32[4], %b: i32[4]) -> (r: i32[4]) {\n  %r = div %a, %b\n  return %r\n}\n"),
    ("f32_row_sum", "func @main(%x: f32[2,5]) -> (s: f32[2]) {\n  %s = reduce %x {dims=[1], kind=sum}\n  return %s\n}\n"),
];

fn check(file: &str, got: &str) -> Option<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(file);
    if std::env::var_os("PJC_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
        return None;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    if want == got {
        None
    } else {
        let line = want
            .lines()
            .zip(got.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(got.lines().count()));
        Some(format!(
            "{file} differs from the snapshot at line {} (run with PJC_BLESS=1 to update):\n  want: {}\n  got:  {}",
            line + 1,
            want.lines().nth(line).unwrap_or("<end>"),
            got.lines().nth(line).unwrap_or("<end>")
        ))
    }
}

#[test]
fn llvm_ir_snapshots() {
    let mut diffs = vec![];
    for (name, src) in PROGRAMS {
        let (_, plan) = common::program(src);
        diffs.extend(check(
            &format!("{name}.ll"),
            &pjc_codegen::emit_llvm(&plan).unwrap(),
        ));
        diffs.extend(check(
            &format!("{name}.unopt.ll"),
            &pjc_codegen::cpu::emit_llvm_unoptimized(&plan).unwrap(),
        ));
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

#[test]
fn ptx_snapshots() {
    let mut diffs = vec![];
    for (name, src) in PROGRAMS {
        let (_, plan) = common::program(src);
        diffs.extend(check(
            &format!("{name}.sm_90.ptx"),
            &pjc_codegen::emit_ptx(&plan, "sm_90").unwrap(),
        ));
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}
