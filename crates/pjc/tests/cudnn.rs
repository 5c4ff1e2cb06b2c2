//! cuDNN's convolutions, checked without a GPU: every convolution of every
//! program in the repository (examples, benches, tests), as the planner
//! leaves it in the per-device plan, is mapped onto cuDNN
//! (`pjc_host::cudnn::cudnn_step`, what `--emit plan --device cuda` lists and
//! the CUDA backend calls), and the mapping's result, computed by
//! `pjc_host::cudnn::emulate` (cuDNN's three operations over the mapped
//! descriptors, with its size checks), equals the reference convolution's.
//! Batch and feature sizes are shrunk to at most two per group; spatial
//! sizes, attributes and group counts are the program's, so the padding and
//! stride arithmetic is exactly the program's.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;


/// `f32[2,8,8,3]` as (dtype, shape).
fn parse_type(t: &str) -> Option<(String, Vec<usize>)> {
    let (d, rest) = t.split_once('[')?;
    let dims = rest.strip_suffix(']')?;
    let shape = if dims.is_empty() {
        vec![]
    } else {
        dims.split(',')
            .map(|x| x.trim().parse().ok())
            .collect::<Option<Vec<usize>>>()?
    };
    Some((d.to_string(), shape))
}

/// The convolution library steps of a plan listing: (attributes, lhs type,
/// rhs type).
fn convolutions(plan: &str) -> Vec<(String, String, String)> {
    let mut types = std::collections::HashMap::new();
    let mut out = vec![];
    for line in plan.lines() {
        let l = line.trim();
        if let Some((b, rest)) = l.split_once(" = %") {
            if let (Some(n), Some((_, ty))) = (b.strip_prefix('b'), rest.split_once(" : ")) {
                if let Some(ty) = ty.split(' ').next() {
                    types.insert(n.to_string(), ty.to_string());
                }
            }
        }
        if let Some(rest) = l.strip_prefix("library convolution ") {
            let Some(close) = rest.rfind("} (") else {
                continue;
            };
            let attrs = &rest[..=close];
            let args = &rest[close + 3..];
            let Some((ins, _)) = args.split_once(')') else {
                continue;
            };
            let ins: Vec<&str> = ins.split(", ").map(|b| b.trim_start_matches('b')).collect();
            if let [a, k] = ins[..] {
                if let (Some(ta), Some(tk)) = (types.get(a), types.get(k)) {
                    out.push((attrs.to_string(), ta.clone(), tk.clone()));
                }
            }
        }
    }
    out
}

fn values(n: usize, seed: u64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            (((i as u64).wrapping_mul(2654435761).wrapping_add(seed * 97) >> 7) % 7) as f64 - 3.0
        })
        .collect()
}

struct Shrunk {
    dtype: String,
    attrs: String,
    x: Vec<usize>,
    k: Vec<usize>,
}

/// The convolution with batch and feature sizes cut to at most two per
/// group (spatial sizes and attributes kept).
fn shrink(attrs: &str, ta: &str, tk: &str) -> Option<Shrunk> {
    let (dtype, mut x) = parse_type(ta)?;
    let (_, mut k) = parse_type(tk)?;
    let group = |name: &str| -> usize {
        attrs
            .split(&format!("{name}="))
            .nth(1)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(1)
    };
    let (fgc, bgc) = (group("feature_group_count"), group("batch_group_count"));
    let dims_str = attrs.split("dims=\"").nth(1)?.split('"').next()?;
    let d = pjc_tensor::parse_conv_dims(dims_str, x.len()).ok()?;
    let ki = k[d.kernel_input_feature].min(2);
    k[d.kernel_input_feature] = ki;
    x[d.input_feature] = ki * fgc;
    let g = fgc * bgc;
    k[d.kernel_output_feature] = g * (k[d.kernel_output_feature] / g).min(2);
    x[d.input_batch] = bgc * (x[d.input_batch] / bgc).min(2);
    Some(Shrunk {
        dtype,
        attrs: attrs.to_string(),
        x,
        k,
    })
}

enum Outcome {
    Mapped(pjc_host::cudnn::ConvKind),
    Fallback,
}

/// Maps the (shrunk) convolution onto cuDNN and checks the emulated result
/// against the reference.
fn check(s: &Shrunk) -> Result<Outcome, String> {
    let ty = |shape: &[usize]| {
        format!(
            "{}[{}]",
            s.dtype,
            shape
                .iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )
    };
    // The output type from the reference's shape rule (through the verifier).
    let probe = format!(
        "func @main(%x: {}, %k: {}) -> (y: {}) {{\n  %y = convolution %x, %k {}\n  return %y\n}}\n",
        ty(&s.x),
        ty(&s.k),
        ty(&s.x),
        s.attrs
    );
    let m = pjc_front::parse(&probe).map_err(|e| format!("{probe}: {e:?}"))?;
    let f = &m.funcs[m.func_by_name("main").ok_or("no main")?];
    let inst = f
        .body
        .iter()
        .map(|&i| &f.insts[i])
        .find(|i| i.op == pjc_ir::Opcode::Convolution)
        .ok_or("no convolution")?;
    let at = pjc_ir::Attrs::new(inst, &[]);
    let us = |n: &str| at.indices(n).unwrap_or_default();
    let dims =
        pjc_tensor::parse_conv_dims(&at.string("dims").map_err(|e| e.to_string())?, s.x.len())?;
    let (strides, pads, lhs, rhs) = (
        us("window_strides"),
        at.pairs("padding").unwrap_or_default(),
        us("lhs_dilation"),
        us("rhs_dilation"),
    );
    let (fgc, bgc) = (
        at.index("feature_group_count").unwrap_or(1),
        at.index("batch_group_count").unwrap_or(1),
    );
    let xv = values(s.x.iter().product(), 1);
    let kv = values(s.k.iter().product(), 2);
    let t = |sh: &[usize], v: &[f64]| {
        pjc_tensor::Tensor::new(sh.to_vec(), pjc_tensor::Buf::F64(v.to_vec()))
    };
    let want = pjc_tensor::convolution(
        &t(&s.x, &xv),
        &t(&s.k, &kv),
        &dims,
        &strides,
        &pads,
        &lhs,
        &rhs,
        fgc,
        bgc,
        pjc_ir::DType::F64,
    )
    .map_err(|e| e.to_string())?;
    let pjc_tensor::Buf::F64(want_v) = &want.data else {
        unreachable!()
    };
    let dt = pjc_ir::DType::from_name(&s.dtype).ok_or("dtype")?;
    let tt = |sh: &[usize]| pjc_ir::TensorType::new(dt, sh.iter().map(|&x| x as u64).collect());
    let Some(conv) = pjc_host::cudnn::cudnn_step(inst, &tt(&s.x), &tt(&s.k), &tt(&want.shape))
    else {
        return Ok(Outcome::Fallback);
    };
    let got = pjc_host::cudnn::emulate(&conv, &xv, &kv, want_v.len())?;
    if &got != want_v {
        return Err(format!(
            "{} {:?} x {:?}: cuDNN's result differs from the reference ({conv})",
            s.attrs, s.x, s.k
        ));
    }
    Ok(Outcome::Mapped(conv.kind))
}

#[test]
fn every_repository_convolution_maps_onto_cudnn_like_the_reference() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![];
    for d in ["examples", "benches", "tests"] {
        common::pir_files(&root.join(d), &mut files);
    }
    files.sort();
    let pjc = env!("CARGO_BIN_EXE_pjc");
    let mut seen = BTreeSet::new();
    let (mut kinds, mut fallbacks, mut failures) =
        (std::collections::BTreeMap::new(), vec![], vec![]);
    let mut resnet_fallbacks = 0;
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap_or_default();
        if !src.contains("convolution ") {
            continue;
        }
        let out = std::process::Command::new(pjc)
            .arg("compile")
            .arg(f)
            .args(["--emit", "plan"])
            .output()
            .unwrap();
        if !out.status.success() {
            continue; // an error test
        }
        let is_resnet = f.to_string_lossy().contains("jax_resnet");
        for (attrs, ta, tk) in convolutions(&String::from_utf8_lossy(&out.stdout)) {
            let Some(s) = shrink(&attrs, &ta, &tk) else {
                continue;
            };
            if !seen.insert((attrs.clone(), s.x.clone(), s.k.clone(), s.dtype.clone())) {
                continue;
            }
            match check(&s) {
                Ok(Outcome::Mapped(k)) => *kinds.entry(format!("{k:?}")).or_insert(0) += 1,
                Ok(Outcome::Fallback) => {
                    resnet_fallbacks += is_resnet as usize;
                    fallbacks.push(format!("{}: {} {ta} x {tk}", f.display(), attrs));
                }
                Err(e) => failures.push(format!("{}: {e}", f.display())),
            }
        }
    }
    eprintln!("cuDNN operations (distinct convolutions): {kinds:?}");
    eprintln!("device-kernel fallbacks:\n{}", fallbacks.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // ResNet-18/50 training steps: every convolution and both its gradients.
    assert_eq!(resnet_fallbacks, 0, "{fallbacks:?}");
    for k in ["Forward", "BackwardData", "BackwardFilter"] {
        assert!(kinds.get(k).copied().unwrap_or(0) >= 3, "{kinds:?}");
    }
    // The fallbacks are the convolutions cuDNN has no operation for here:
    // integers, a wider result, or input dilation with window strides.
    for f in &fallbacks {
        let float_same = ["f32[", "f64["].iter().any(|d| f.matches(d).count() >= 2);
        assert!(
            !float_same || f.contains("lhs_dilation"),
            "an f32/f64 convolution fell back: {f}"
        );
    }
}
