//! Fusion must not change results: every single-device test program, planned
//! and executed kernel by kernel, equals the interpreter bit for bit (kernels
//! compute exactly the ops they fuse, bf16/f16 rounding per op included).

use pjc_ir::{DType, FuncKind};
use pjc_tensor::compare::{close, Tolerance};
use pjc_tensor::Tensor;
use std::path::{Path, PathBuf};

fn pir_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            pir_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "pir") {
            out.push(p);
        }
    }
}

#[test]
fn fused_plans_execute_like_the_interpreter() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut dirs = vec![];
    pir_files(&root.join("tests/numeric/cases"), &mut dirs);
    dirs.sort();
    let mut failures = vec![];
    let mut checked = 0;
    let mut device_checked = 0;
    for path in &dirs {
        let src = std::fs::read_to_string(path).unwrap();
        let Ok(m) = pjc_front::load(&src) else { continue };
        let entry = m.func_by_name("main").unwrap();
        let f = &m.funcs[entry];
        if f.kind == FuncKind::Spmd || m.funcs.len() > 1 || m.mesh.as_ref().is_some_and(|x| x.device_count() > 1) {
            continue;
        }
        let dir = path.parent().unwrap();
        let args: Vec<Tensor> = (0..f.params.len())
            .map(|i| {
                let t = pjc_tensor::read_npy(&dir.join(format!("in_{}.npy", f.param_name(i)))).unwrap();
                if f.ty(f.params[i]).dtype == DType::BF16 {
                    pjc_tensor::convert(&t, DType::BF16).unwrap()
                } else {
                    t
                }
            })
            .collect();
        let want = pjc_interp::eval(&m, entry, args.clone()).unwrap();
        let plan = match pjc_fusion::plan(f) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{}: plan: {e}", path.display()));
                continue;
            }
        };
        checked += 1;
        match pjc_plan::exec::execute(&plan, &args, &mut pjc_plan::exec::SingleDevice) {
            Ok(got) => {
                for (k, (a, b)) in want.iter().zip(&got).enumerate() {
                    // Bit for bit but for NaN payloads.
                    if let Err(e) = close(a, b, Tolerance::EXACT.with_signed_zeros()) {
                        failures.push(format!("{}: result {k}: {e}\n{plan}", path.display()));
                    }
                }
            }
            Err(e) => failures.push(format!("{}: exec: {e}\n{plan}", path.display())),
        }
        // The same plan with every library step run as its device kernel (what
        // the CUDA backend runs where cuBLAS does not take a step): a direct
        // sum, so within the spec's reassociation tolerance rather than bitwise.
        if plan.steps.iter().any(|s| matches!(s, pjc_plan::Step::Library { .. })) {
            let dev = plan.with_device_kernels();
            if dev.steps.iter().any(|s| matches!(s, pjc_plan::Step::Library { .. })) {
                failures.push(format!("{}: a library step without a device kernel\n{plan}", path.display()));
                continue;
            }
            device_checked += 1;
            match pjc_plan::exec::execute(&dev, &args, &mut pjc_plan::exec::SingleDevice) {
                Ok(got) => {
                    for (k, (a, b)) in want.iter().zip(&got).enumerate() {
                        if let Err(e) = close(a, b, Tolerance::spec_long_sums(a.dtype())) {
                            failures.push(format!("{}: device kernels: result {k}: {e}\n{dev}", path.display()));
                        }
                    }
                }
                Err(e) => failures.push(format!("{}: device kernels: exec: {e}\n{dev}", path.display())),
            }
        }
    }
    assert!(device_checked >= 20, "only {device_checked} programs with library steps");
    assert!(checked >= 150, "only {checked} programs planned");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.iter().take(6).cloned().collect::<Vec<_>>().join("\n"));
}
