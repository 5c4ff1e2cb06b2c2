//! Every PTX module the code generator emits — for all numeric cases and all
//! generated odd-size programs, for sm_80 and sm_90, library steps' device
//! kernels included — is assembled by ptxas
//! with `-v`: any ptxas error, a kernel that is not an `.entry`, or any
//! register spill fails the test. ptxas comes from `PJC_PTXAS` or the
//! project's `.venv` (scripts/ptxas.sh installs it); without it these tests
//! fail, they never skip.

mod common;
#[path = "common/gen.rs"]
mod gen;

use pjc_plan::Plan;

fn ptxas() -> std::path::PathBuf {
    common::ptxas().unwrap_or_else(|e| panic!("{e}"))
}

/// Emits and assembles one plan; returns the ptxas numbers per kernel.
fn check(
    name: &str,
    plan: &Plan,
    arch: &str,
    ptxas: &std::path::Path,
) -> Result<Vec<common::PtxasInfo>, String> {
    let m = pjc_codegen::compile_ptx(plan, arch)
        .map_err(|e| format!("{name}: emit_ptx {arch}: {e}"))?;
    // The PTX holds the CUDA view's kernels: the plan's own, the device
    // kernels of the library steps cuBLAS and cuDNN do not take, and those
    // of the cuDNN steps (their fallback without libcudnn).
    let cuda = pjc_host::device::cuda_plan(plan).map_err(|e| format!("{name}: {e}"))?;
    // One launch record per kernel, in order; kernels with one body share
    // one entry, which every other kernel's record names.
    let names: Vec<&str> = pjc_host::device::ptx_kernels(&cuda).into_iter().map(|k| k.name.as_str()).collect();
    let listed: Vec<&str> = m.kernels.iter().map(|k| k.name.as_str()).collect();
    if names != listed {
        return Err(format!("{name} {arch}: launch records {listed:?} for kernels {names:?}"));
    }
    let mut kernels: Vec<&str> = m.kernels.iter().map(|k| k.entry.as_str()).collect();
    kernels.sort();
    kernels.dedup();
    for k in &kernels {
        if !m.ptx.contains(&format!(".visible .entry {k}(")) {
            return Err(format!("{name} {arch}: kernel {k} is not an .entry"));
        }
    }
    if !m.ptx.contains(&format!(".target {arch}")) {
        return Err(format!("{name}: the PTX does not target {arch}"));
    }
    let infos = common::assemble(ptxas, &m.ptx, arch).map_err(|e| format!("{name}: {e}"))?;
    if infos.len() != kernels.len() {
        return Err(format!(
            "{name} {arch}: ptxas reported {} functions for {} kernels",
            infos.len(),
            kernels.len()
        ));
    }
    for i in &infos {
        if i.spill_stores != 0 || i.spill_loads != 0 {
            return Err(format!(
                "{name} {arch}: {} spills ({} bytes stores, {} bytes loads)",
                i.function, i.spill_stores, i.spill_loads
            ));
        }
    }
    Ok(infos)
}

fn run_all(plans: &[(String, Plan)], arch: &str) {
    let ptxas = ptxas();
    let mut failures = vec![];
    let mut kernels = 0;
    let mut max_regs = (0, String::new());
    for (name, plan) in plans {
        match check(name, plan, arch, &ptxas) {
            Ok(infos) => {
                kernels += infos.len();
                for i in infos {
                    if i.registers > max_regs.0 {
                        max_regs = (i.registers, format!("{name}/{}", i.function));
                    }
                }
            }
            Err(e) => failures.push(e),
        }
    }
    eprintln!(
        "{arch}: {} modules, {kernels} kernels assembled; most registers: {} ({})",
        plans.len(),
        max_regs.0,
        max_regs.1
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn numeric_plans() -> Vec<(String, Plan)> {
    let cases = common::numeric_cases();
    assert!(cases.len() >= 150, "only {} numeric cases", cases.len());
    cases.into_iter().map(|c| (c.name, c.plan)).collect()
}

fn generated_plans() -> Vec<(String, Plan)> {
    gen::programs()
        .into_iter()
        .map(|g| (g.name, common::program(&g.src).1))
        .collect()
}

#[test]
fn ptxas_is_available() {
    let p = ptxas();
    let out = std::process::Command::new(&p)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", p.display()));
    assert!(out.status.success(), "{} --version failed", p.display());
}

#[test]
fn numeric_cases_assemble_for_sm_80() {
    run_all(&numeric_plans(), "sm_80");
}

#[test]
fn numeric_cases_assemble_for_sm_90() {
    run_all(&numeric_plans(), "sm_90");
}

#[test]
fn generated_programs_assemble_for_sm_80() {
    run_all(&generated_plans(), "sm_80");
}

#[test]
fn generated_programs_assemble_for_sm_90() {
    run_all(&generated_plans(), "sm_90");
}

/// sort's and top_k's rank, perm and gather kernels and every scatter kind's
/// reductions, as the CUDA backend runs them.
#[test]
fn sort_top_k_and_scatter_device_kernels_assemble() {
    let plans: Vec<(String, Plan)> = common::ranked::programs().into_iter().map(|(n, src)| (n.to_string(), common::program(src).1)).collect();
    for (name, plan) in &plans {
        let cuda = pjc_host::device::cuda_plan(plan).unwrap();
        assert!(cuda.steps.iter().all(|s| matches!(s, pjc_plan::Step::Kernel(_))), "{name}: host steps on CUDA:\n{cuda}");
    }
    run_all(&plans, "sm_80");
    run_all(&plans, "sm_90");
}

/// No FMA contraction and no flush-to-zero in generated arithmetic: a*b+c is
/// a rounded multiply and a rounded add.
#[test]
fn no_fma_contraction_or_ftz() {
    let (_, plan) = common::program(
        "func @main(%a: f32[64], %b: f32[64], %c: f32[64]) -> (r: f32[64]) {\n  %m = mul %a, %b\n  %r = add %m, %c\n  return %r\n}\n",
    );
    let ptx = pjc_codegen::emit_ptx(&plan, "sm_90").unwrap();
    assert!(
        ptx.contains("mul.rn.f32") && ptx.contains("add.rn.f32"),
        "{ptx}"
    );
    assert!(!ptx.contains("fma") && !ptx.contains(".ftz"), "{ptx}");
    let ir = pjc_codegen::emit_llvm(&plan).unwrap();
    assert!(
        !ir.contains("fmuladd") && !ir.contains("llvm.fma") && !ir.contains(" contract "),
        "{ir}"
    );
}

/// Reduction kernels use warp shuffles and shared memory and require 256 threads.
#[test]
fn reductions_use_shuffles_and_shared_memory() {
    let (_, plan) = common::program(
        "func @main(%x: f32[8,1000]) -> (s: f32[8]) {\n  %s = reduce %x {dims=[1], kind=sum}\n  return %s\n}\n",
    );
    let m = pjc_codegen::compile_ptx(&plan, "sm_90").unwrap();
    assert!(m.ptx.contains("shfl.sync.down.b32"), "{}", m.ptx);
    assert!(
        m.ptx.contains(".shared") && m.ptx.contains("bar.sync"),
        "{}",
        m.ptx
    );
    assert!(m.ptx.contains(".maxntid 256"), "{}", m.ptx);
    assert_eq!(m.kernels.len(), 1);
    assert_eq!(m.kernels[0].required_block, Some(256));
    assert_eq!(m.kernels[0].points, 8);
    let infos = common::assemble(&ptxas(), &m.ptx, "sm_90").unwrap();
    eprintln!("f32 row-sum reduction on sm_90: {:?}", infos);
}

#[test]
fn unknown_arch_is_an_error() {
    let (_, plan) =
        common::program("func @main(%a: f32[4]) -> (r: f32[4]) {\n  %r = neg %a\n  return %r\n}\n");
    let e = pjc_codegen::emit_ptx(&plan, "gfx90a").unwrap_err();
    assert!(
        e.to_string().contains("unsupported GPU architecture 'gfx90a'"),
        "{e}"
    );
}

/// The kernel of a one-kernel plan, assembled for sm_80 and sm_90 (no spills),
/// with its sm_90 PTX, launch information and ptxas numbers.
fn one_kernel(src: &str) -> (String, pjc_codegen::PtxKernel, Vec<common::PtxasInfo>) {
    let (_, plan) = common::program(src);
    let ptxas = ptxas();
    let mut infos = vec![];
    for arch in ["sm_80", "sm_90"] {
        infos.extend(check("wide", &plan, arch, &ptxas).unwrap_or_else(|e| panic!("{e}")));
    }
    let m = pjc_codegen::compile_ptx(&plan, "sm_90").unwrap();
    assert_eq!(m.kernels.len(), 1, "{}", m.ptx);
    (m.ptx, m.kernels[0].clone(), infos)
}

/// The PTX's global loads and stores.
fn global_accesses(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("ld.global") || l.starts_with("st.global"))
        .collect()
}

/// An identity-indexed f32 elementwise chain (with a libdevice function, whose
/// inline asm must not keep the loads apart) does 4 points per thread and
/// step with 16-byte accesses, and a scalar loop for the rest; the buffer
/// pointers are declared 16-byte aligned.
#[test]
fn f32_elementwise_chain_uses_wide_accesses() {
    let (ptx, k, infos) = one_kernel(
        "func @main(%a: f32[1030], %b: f32[1030], %c: f32[1030]) -> (r: f32[1030]) {\n  %m = mul %a, %b\n  %t = add %m, %c\n  %r = tanh %t\n  return %r\n}\n",
    );
    eprintln!("f32 chain (sm_80, sm_90): {infos:?}");
    assert_eq!(k.vector_width, 4);
    let acc = global_accesses(&ptx);
    let count = |p: &str| acc.iter().filter(|l| l.starts_with(p)).count();
    // Three inputs and one output, each once wide and once scalar (the n % 4 rest).
    assert_eq!(count("ld.global.v4.b32"), 3, "{}", acc.join("\n"));
    assert_eq!(count("st.global.v4.b32"), 1, "{}", acc.join("\n"));
    assert_eq!(count("ld.global.b32"), 3, "{}", acc.join("\n"));
    assert_eq!(count("st.global.b32"), 1, "{}", acc.join("\n"));
    assert_eq!(ptx.matches(".ptr .global .align 16").count(), 4, "{ptx}");
}

/// 16-bit elements move 8 bytes per access, 1-byte elements 4; kernels
/// without loads (iota) store wide.
#[test]
fn narrow_elementwise_kernels_use_wide_accesses() {
    let (ptx, k, _) = one_kernel(
        "func @main(%a: bf16[64], %b: bf16[64]) -> (r: bf16[64]) {\n  %r = add %a, %b\n  return %r\n}\n",
    );
    assert_eq!(k.vector_width, 4);
    let acc = global_accesses(&ptx);
    assert_eq!(
        acc.iter()
            .filter(|l| l.starts_with("ld.global.v4.b16"))
            .count(),
        2,
        "{}",
        acc.join("\n")
    );
    assert!(
        acc.iter()
            .any(|l| l.starts_with("st.global.v2.b32") || l.starts_with("st.global.v4.b16")),
        "{}",
        acc.join("\n")
    );

    let (ptx, k, _) = one_kernel(
        "func @main(%p: pred[64], %a: u8[64], %b: u8[64]) -> (r: u8[64]) {\n  %r = select %p, %a, %b\n  return %r\n}\n",
    );
    assert_eq!(k.vector_width, 4);
    let acc = global_accesses(&ptx);
    assert_eq!(
        acc.iter()
            .filter(|l| l.starts_with("ld.global.b32"))
            .count(),
        3,
        "{}",
        acc.join("\n")
    );
    assert_eq!(
        acc.iter()
            .filter(|l| l.starts_with("st.global.b32"))
            .count(),
        1,
        "{}",
        acc.join("\n")
    );

    let (ptx, k, _) = one_kernel(
        "func @main() -> (r: i32[8,8]) {\n  %r = iota {dim=1} : i32[8,8]\n  return %r\n}\n",
    );
    assert_eq!(k.vector_width, 4);
    assert!(ptx.contains("st.global.v4.b32"), "{ptx}");
}

/// Kernels whose loads are not at the output's own index (transpose,
/// broadcast), with 8-byte elements, or with fewer than 4 points keep one
/// point per thread and scalar accesses.
#[test]
fn other_kernels_keep_scalar_accesses() {
    for src in [
        "func @main(%a: f32[64,32]) -> (r: f32[32,64]) {\n  %r = transpose %a {perm=[1,0]}\n  return %r\n}\n",
        "func @main(%a: f32[32], %b: f32[64,32]) -> (r: f32[64,32]) {\n  %c = broadcast %a {dims=[1]} : f32[64,32]\n  %r = add %c, %b\n  return %r\n}\n",
        "func @main(%a: f64[64], %b: f64[64]) -> (r: f64[64]) {\n  %r = add %a, %b\n  return %r\n}\n",
        "func @main(%a: f32[3], %b: f32[3]) -> (r: f32[3]) {\n  %r = add %a, %b\n  return %r\n}\n",
    ] {
        let (ptx, k, _) = one_kernel(src);
        assert_eq!(k.vector_width, 1, "{src}");
        let acc = global_accesses(&ptx);
        assert!(acc.iter().all(|l| !l.contains(".v2") && !l.contains(".v4")), "{src}\n{}", acc.join("\n"));
    }
}

/// Every architecture `--gpu-arch` accepts compiles and assembles (a sample of
/// plans that use warp shuffles, shared memory, libdevice math and vector
/// loads); the ones it refuses give an error before LLVM sees them, as LLVM
/// aborts the process on architectures it cannot select instructions for.
#[test]
fn every_supported_arch_assembles_and_others_are_refused() {
    let plans: Vec<(String, Plan)> = numeric_plans()
        .into_iter()
        .filter(|(n, _)| n.starts_with("reduce") || n.starts_with("unary_exp") || n.starts_with("binary_add"))
        .take(12)
        .collect();
    assert!(plans.len() >= 6, "{}", plans.len());
    for arch in pjc_codegen::ptx::SUPPORTED_ARCHS {
        run_all(&plans, arch);
    }
    for bad in ["sm_35", "sm_10", "sm_999", "sm_1", "sm_", "compute_90", "sm_60", ""] {
        let e = pjc_codegen::compile_ptx(&plans[0].1, bad).expect_err(bad).to_string();
        assert!(e.contains(&format!("unsupported GPU architecture '{bad}'")) && e.contains("sm_70, "), "{bad}: {e}");
    }
}
