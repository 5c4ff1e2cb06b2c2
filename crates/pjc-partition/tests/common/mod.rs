//! What the equivalence tests share: random inputs and the check that a
//! partitioned program evaluates like its global one.
// Each test crate that includes it uses a part.
#![allow(dead_code)]

use pjc_ir::{FuncKind, Module};
use pjc_tensor::compare::{close, Tolerance};
use pjc_tensor::{Buf, Tensor};
use std::path::{Path, PathBuf};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Deterministic pseudo-random inputs of any dtype (xorshift).
pub fn random(ty: &pjc_ir::TensorType, seed: &mut u64) -> Tensor {
    let n = ty.num_elements() as usize;
    let mut next = || {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    };
    let shape: Vec<usize> = ty.shape.iter().map(|&d| d as usize).collect();
    let data = if ty.dtype.is_float() {
        let v: Vec<f64> = (0..n).map(|_| (next() % 4001) as f64 / 1000.0 - 2.0).collect();
        Buf::from_f64(ty.dtype, &v)
    } else if ty.dtype.is_int() {
        let v: Vec<i128> = (0..n)
            .map(|_| if ty.dtype.is_signed_int() { (next() % 11) as i128 - 5 } else { (next() % 11) as i128 })
            .collect();
        Buf::from_i128(ty.dtype, &v)
    } else {
        Buf::Pred((0..n).map(|_| next() % 2 == 0).collect())
    };
    Tensor::new(shape, data)
}

/// Checks one program; returns a failure message.
pub fn check(path: &Path, m: &Module, inputs: Option<Vec<Tensor>>) -> Result<(), String> {
    let entry = m.func_by_name("main").ok_or("no @main")?;
    let f = &m.funcs[entry];
    if f.kind == FuncKind::Spmd {
        return Ok(());
    }
    let mut seed = 0x9e3779b97f4a7c15u64 ^ path.to_string_lossy().len() as u64;
    let args = inputs.unwrap_or_else(|| f.params.iter().map(|&p| random(f.ty(p), &mut seed)).collect());
    let want = pjc_interp::eval(m, entry, args.clone()).map_err(|e| format!("global eval: {e}"))?;
    let prop = pjc_sharding::propagate(m, entry);
    let part = pjc_partition::partition(m, entry, &prop).map_err(|e| format!("partition: {e}"))?;
    let text = pjc_front::print_module(&part.module);
    let pm = pjc_front::load(&text).map_err(|d| format!("partitioned program does not verify:\n{}", pjc_front::render("spmd", &text, &d)))?;
    let pentry = pm.func_by_name("main").unwrap();
    let got = pjc_interp::eval(&pm, pentry, args).map_err(|e| format!("partitioned eval: {e}\n{text}"))?;
    for (k, (a, b)) in want.iter().zip(&got).enumerate() {
        // The spec's reassociation tolerance (f32: the long-sum one).
        close(a, b, Tolerance::spec_long_sums(f.results[k].ty.dtype)).map_err(|e| format!("result {k}: {e}\n{text}"))?;
    }
    Ok(())
}

/// The repository's PIR file `file` (a path from the repository root),
/// parsed, with `mesh` (`A=N,...`) replacing its mesh when given, and
/// verified; a bad file panics with the rendered diagnostics.
pub fn load(file: &str, mesh: Option<&str>) -> Module {
    let src = std::fs::read_to_string(repo().join(file)).unwrap();
    let mut m = pjc_front::parse(&src).unwrap_or_else(|d| panic!("{}", pjc_front::render(file, &src, &d)));
    if let Some(spec) = mesh {
        pjc_front::override_mesh(&mut m, spec).unwrap();
    }
    pjc_front::verify(&mut m).unwrap_or_else(|d| panic!("{}", pjc_front::render(file, &src, &d)));
    m
}
