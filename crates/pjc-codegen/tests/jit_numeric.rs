//! Every single-device program of tests/numeric/cases, JIT-compiled for the
//! host and run with `execute_plan_jit`, equals the interpreter: integers and
//! pred bit for bit, floats within the tolerance of `common::compare`.

mod common;

#[test]
fn numeric_cases_run_like_the_interpreter() {
    let cases = common::numeric_cases();
    assert!(
        cases.len() >= 150,
        "only {} numeric cases found",
        cases.len()
    );
    let mut failures = vec![];
    for c in &cases {
        let want = common::interpret(&c.module, &c.args);
        match pjc_codegen::execute_plan_jit(&c.plan, &c.args) {
            Ok(got) => {
                for (k, (w, g)) in want.iter().zip(&got).enumerate() {
                    if let Err(e) = common::compare(w, g, &c.plan) {
                        failures.push(format!("{}: result {k}: {e}", c.name));
                    }
                }
            }
            Err(e) => failures.push(format!("{}: {e}", c.name)),
        }
    }
    eprintln!(
        "{} numeric cases checked, {} failures",
        cases.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The CUDA backend runs library steps cuBLAS does not take as their device
/// kernels (`pjc_host::device`): every numeric case with a library step, with
/// all of them replaced by their device kernels and JIT-compiled for the host,
/// equals the interpreter too. This is where those kernels' logic is tested.
#[test]
fn device_kernels_run_like_the_interpreter() {
    let cases = common::numeric_cases();
    let mut failures = vec![];
    let mut checked = 0;
    for c in &cases {
        if !c.plan.steps.iter().any(|s| matches!(s, pjc_plan::Step::Library { .. })) {
            continue;
        }
        let dev = c.plan.with_device_kernels();
        checked += 1;
        let want = common::interpret(&c.module, &c.args);
        match pjc_codegen::execute_plan_jit(&dev, &c.args) {
            Ok(got) => {
                for (k, (w, g)) in want.iter().zip(&got).enumerate() {
                    if let Err(e) = common::compare(w, g, &dev) {
                        failures.push(format!("{}: result {k}: {e}", c.name));
                    }
                }
            }
            Err(e) => failures.push(format!("{}: {e}", c.name)),
        }
    }
    assert!(checked >= 20, "only {checked} cases with library steps");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[path = "common/gen.rs"]
mod gen;

#[test]
fn generated_programs_run_like_the_interpreter() {
    let progs = gen::programs();
    let mut failures = vec![];
    for g in &progs {
        let (m, plan) = common::program(&g.src);
        let want = common::interpret(&m, &g.args);
        match pjc_codegen::execute_plan_jit(&plan, &g.args) {
            Ok(got) => {
                for (k, (w, gt)) in want.iter().zip(&got).enumerate() {
                    if let Err(e) = common::compare(w, gt, &plan) {
                        failures.push(format!("{}: result {k}: {e}", g.name));
                    }
                }
            }
            Err(e) => failures.push(format!("{}: {e}", g.name)),
        }
    }
    eprintln!(
        "{} generated programs checked, {} failures",
        progs.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}\n\nfirst program:\n{}",
        failures.len(),
        failures.join("\n"),
        progs
            .iter()
            .find(|g| failures[0].starts_with(&g.name))
            .map_or("", |g| g.src.as_str())
    );
}
