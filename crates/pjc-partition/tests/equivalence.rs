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

/// `sort`, `top_k` and `scatter` of every kind (the programs of
/// tests/partition that use them) on meshes of 2 and 4 devices, with random
/// shardings of every parameter and result: split sorted dimensions
/// (gathered), split batch dimensions (kept), split scatter bases and index
/// dimensions, over one axis and over two.
#[test]
fn sort_top_k_and_scatter_partition_correctly_on_meshes_of_2_and_4() {
    use pjc_ir::{Mesh, MeshAxis, Opcode, Span};
    let axis = |name: &str, size| MeshAxis { name: name.into(), size, span: Span::NONE };
    let meshes = [Mesh { axes: vec![axis("a", 2)] }, Mesh { axes: vec![axis("a", 4)] }, Mesh { axes: vec![axis("a", 2), axis("b", 2)] }];
    let ops = [Opcode::Sort, Opcode::TopK, Opcode::Scatter, Opcode::ScatterAdd];
    let mut files = vec![];
    pir_files(&repo().join("tests/partition"), &mut files);
    files.sort();
    let (mut checked, mut programs) = (0, 0);
    let mut failures = vec![];
    for path in &files {
        let src = std::fs::read_to_string(path).unwrap();
        let base = pjc_front::load(&src).unwrap_or_else(|d| panic!("{}", pjc_front::render(&path.display().to_string(), &src, &d)));
        let entry = base.func_by_name("main").unwrap();
        if !base.funcs[entry].insts.values().any(|i| ops.contains(&i.op)) {
            continue;
        }
        programs += 1;
        for (mi, mesh) in meshes.iter().enumerate() {
            for variant in 0..4u64 {
                let mut m = base.clone();
                m.mesh = Some(mesh.clone());
                let mut seed = 0x2545F4914F6CDD1Du64 ^ (variant * 3 + mi as u64 + 1).wrapping_mul(0x9E3779B97F4A7C15);
                let f = &mut m.funcs[entry];
                // Only the signature is sharded (randomly); inside, propagation chooses.
                let values: Vec<pjc_ir::Value> = f.values.keys().collect();
                for v in values {
                    f.values[v].sharding = None;
                }
                for &p in &f.params.clone() {
                    f.values[p].sharding = Some(random_sharding(&f.values[p].ty, mesh, &mut seed));
                }
                for k in 0..f.results.len() {
                    f.results[k].sharding = Some(random_sharding(&f.results[k].ty, mesh, &mut seed));
                }
                if let Err(d) = pjc_front::verify(&mut m) {
                    failures.push(format!("{} (mesh {mi}, variant {variant}): does not verify: {d:?}", path.display()));
                    continue;
                }
                checked += 1;
                if let Err(e) = check(path, &m, None) {
                    failures.push(format!("{} (mesh {mi}, variant {variant}): {e}", path.display()));
                }
            }
        }
    }
    assert!(programs >= 2 && checked >= 24, "only {checked} variants of {programs} programs checked");
    assert!(failures.is_empty(), "{} of {checked} variants differ:\n{}", failures.len(), failures.iter().take(6).cloned().collect::<Vec<_>>().join("\n\n"));
}

/// A random valid sharding of `ty` over the axes of `mesh` (each dim gets
/// none, the first or last axis, or the first two in either order; never an
/// axis twice, always dividing the dim).
fn random_sharding(ty: &pjc_ir::TensorType, mesh: &pjc_ir::Mesh, seed: &mut u64) -> pjc_ir::Sharding {
    use pjc_ir::DimSharding;
    let names: Vec<&str> = mesh.axes.iter().map(|a| a.name.as_str()).collect();
    let mut used: Vec<&str> = vec![];
    let mut dims = vec![];
    for &size in &ty.shape {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let choice: Vec<&str> = match *seed % 5 {
            0 => vec![names[0]],
            1 => vec![names[names.len() - 1]],
            2 if names.len() > 1 => vec![names[0], names[1]],
            3 if names.len() > 1 => vec![names[1], names[0]],
            _ => vec![],
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
