//! Correctness by construction: for every test program, the per-device program
//! the partitioner produces evaluates (simulating every device, with real
//! collective semantics) to the same results as the global program.

mod common;

use common::{check, repo};
use pjc_ir::{DType, FuncKind};
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
fn partitioned_programs_evaluate_like_global_ones() {
    let mut files = vec![];
    for d in ["tests/text/sharding", "tests/text/spmd", "tests/text/control", "tests/spec", "examples", "tests/numeric/cases", "tests/partition"] {
        pir_files(&repo().join(d), &mut files);
    }
    files.sort();
    let mut failures = vec![];
    let mut checked = 0;
    for path in &files {
        let src = std::fs::read_to_string(path).unwrap();
        let Ok(mut m) = pjc_front::load(&src) else { continue };
        // grad/vmap are expanded before sharding, as the compiler does.
        pjc_transforms::expand(&mut m).unwrap_or_else(|e| panic!("{}: expand: {}", path.display(), e.msg));
        // Numeric cases come with their own inputs.
        let inputs = path.parent().filter(|d| d.join("prog.pir") == *path).and_then(|dir| {
            let entry = m.func_by_name("main")?;
            let f = &m.funcs[entry];
            (0..f.params.len())
                .map(|i| {
                    let t = pjc_tensor::read_npy(&dir.join(format!("in_{}.npy", f.param_name(i)))).ok()?;
                    if f.ty(f.params[i]).dtype == DType::BF16 {
                        pjc_tensor::convert(&t, DType::BF16).ok()
                    } else {
                        Some(t)
                    }
                })
                .collect::<Option<Vec<_>>>()
        });
        // Full-size models (examples/jax_resnet/resnet50.pir: 25M parameters at
        // 224x224) take minutes in the interpreter, and fifty layers of batch norm
        // amplify reassociation differences past a per-op tolerance; their small
        // siblings (resnet18_small.pir) are checked here, and the big ones are
        // compiled by their example scripts.
        if let Some(entry) = m.func_by_name("main") {
            let f = &m.funcs[entry];
            let elements: u64 = f.params.iter().map(|&p| f.ty(p).num_elements()).sum();
            if elements > 4_000_000 {
                continue;
            }
        }
        checked += 1;
        if let Err(e) = check(path, &m, inputs) {
            failures.push(format!("{}: {e}", path.display()));
        }
    }
    assert!(checked >= 50, "only {checked} programs checked");
    assert!(failures.is_empty(), "{} of {checked} programs differ:\n{}", failures.len(), failures.join("\n\n"));
}

/// A random valid sharding of `ty` over axes `a` (2) and `b` (3).
fn random_sharding(ty: &pjc_ir::TensorType, mesh: &pjc_ir::Mesh, seed: &mut u64) -> pjc_ir::Sharding {
    use pjc_ir::DimSharding;
    let mut used: Vec<&str> = vec![];
    let mut dims = vec![];
    for &size in &ty.shape {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let choice: &[&str] = match *seed % 5 {
            0 => &["a"],
            1 => &["b"],
            2 => &["a", "b"],
            3 => &["b", "a"],
            _ => &[],
        };
        let n = mesh.group_size(choice.iter().copied());
        if choice.is_empty() || size % n != 0 || choice.iter().any(|x| used.contains(x)) {
            dims.push(DimSharding::Replicated);
        } else {
            used.extend(choice.iter().copied());
            dims.push(DimSharding::Axes(choice.iter().map(|s| s.to_string()).collect()));
        }
    }
    pjc_ir::Sharding { dims }
}

#[test]
fn random_shardings_of_every_numeric_case_partition_correctly() {
    let mut files = vec![];
    pir_files(&repo().join("tests/numeric/cases"), &mut files);
    files.sort();
    let mesh = pjc_ir::Mesh {
        axes: vec![
            pjc_ir::MeshAxis { name: "a".into(), size: 2, span: pjc_ir::Span::NONE },
            pjc_ir::MeshAxis { name: "b".into(), size: 3, span: pjc_ir::Span::NONE },
        ],
    };
    let mut failures = vec![];
    let mut checked = 0;
    for path in &files {
        let src = std::fs::read_to_string(path).unwrap();
        let Ok(base) = pjc_front::load(&src) else { continue };
        if base.mesh.is_some() || base.funcs.values().any(|f| f.kind == FuncKind::Spmd) {
            continue;
        }
        for variant in 0..3u64 {
            let mut m = base.clone();
            m.mesh = Some(mesh.clone());
            let mut seed = 0x2545F4914F6CDD1Du64 ^ (variant + 1).wrapping_mul(0x9E3779B97F4A7C15) ^ path.to_string_lossy().len() as u64;
            let entry = m.func_by_name("main").unwrap();
            let f = &mut m.funcs[entry];
            for &p in &f.params.clone() {
                let s = random_sharding(&f.values[p].ty, &mesh, &mut seed);
                f.values[p].sharding = Some(s);
            }
            for k in 0..f.results.len() {
                let s = random_sharding(&f.results[k].ty, &mesh, &mut seed);
                f.results[k].sharding = Some(s);
            }
            if pjc_front::verify(&mut m).is_err() {
                continue;
            }
            checked += 1;
            if let Err(e) = check(path, &m, None) {
                failures.push(format!("{} (variant {variant}): {e}", path.display()));
            }
        }
    }
    assert!(checked >= 300, "only {checked} variants checked");
    assert!(failures.is_empty(), "{} of {checked} variants differ:\n{}", failures.len(), failures.iter().take(8).cloned().collect::<Vec<_>>().join("\n\n"));
}
