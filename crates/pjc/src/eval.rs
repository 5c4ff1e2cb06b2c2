//! `pjc eval`: gather the inputs the spec's section 10 describes, run the
//! reference interpreter, write the outputs.

use crate::pipeline::{Compilation, Stage};
use crate::failure::Failure;
use pjc_ir::infer::global_type;
use pjc_ir::{DType, FuncKind, Function, Module};
use pjc_tensor::Tensor;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn env(e: pjc_tensor::TensorError) -> Failure {
    Failure::Env(e.to_string())
}

/// Where an input came from, for messages.
struct Source {
    tensor: Tensor,
    from: String,
}


/// Collects one tensor per parameter of `f`, checked against its global type.
/// `--input` overrides `--inputs`; tensors in `--inputs` files that match no
/// parameter are ignored; `--input` naming no parameter is an error.
pub fn gather_inputs(m: &Module, f: &Function, input: &[String], inputs: &[PathBuf]) -> Result<Vec<Tensor>, Failure> {
    let params: Vec<&str> = (0..f.params.len()).map(|i| f.param_name(i)).collect();
    let mut got: HashMap<String, Source> = HashMap::new();
    for file in inputs {
        for (name, t) in pjc_tensor::read_safetensors(file).map_err(env)? {
            if params.contains(&name.as_str()) {
                got.insert(name, Source { tensor: t, from: file.display().to_string() });
            }
        }
    }
    for spec in input {
        let Some((name, path)) = spec.split_once('=') else {
            return Err(Failure::Env(format!("--input '{spec}' must look like NAME=PATH")));
        };
        if !params.contains(&name) {
            let known = if params.is_empty() { "it has none".to_string() } else { format!("its parameters: {}", params.join(", ")) };
            return Err(Failure::Env(format!("--input names '{name}', but @{} has no parameter '{name}' ({known})", f.name)));
        }
        let t = pjc_tensor::read_named(name, Path::new(path)).map_err(|e| Failure::Env(format!("input '{name}': {e}")))?;
        got.insert(name.to_string(), Source { tensor: t, from: path.to_string() });
    }
    let mut out = vec![];
    for (i, &name) in params.iter().enumerate() {
        // A spmd entry's signature has local types; its inputs are global arrays.
        let v = &f.values[f.params[i]];
        let want = &match f.kind {
            FuncKind::Spmd => global_type(&v.ty, v.sharding.as_ref(), &m.mesh_or_single()),
            FuncKind::Global => v.ty.clone(),
        };
        let Some(src) = got.remove(name) else {
            return Err(Failure::Env(format!(
                "no input for parameter '{name}' ({want}): give --input {name}=PATH or --inputs FILE.safetensors"
            )));
        };
        let mut t = src.tensor;
        // .npy has no bf16: a bf16 parameter accepts f32 (rounded to nearest even).
        if want.dtype == DType::BF16 && t.dtype() == DType::F32 {
            t = pjc_tensor::convert(&t, DType::BF16).map_err(env)?;
        }
        let shape: Vec<u64> = t.shape.iter().map(|&d| d as u64).collect();
        if t.dtype() != want.dtype || shape != want.shape {
            let got_ty = pjc_ir::TensorType::new(t.dtype(), shape);
            return Err(Failure::Env(format!(
                "input '{name}' from '{}' is {got_ty}, but parameter %{name} of @{} is {want}",
                src.from, f.name
            )));
        }
        out.push(t);
    }
    Ok(out)
}

/// Writes results: one `.safetensors` file, or a directory of `NAME.npy`,
/// each file atomically (an earlier result survives a failed write).
pub fn write_outputs(path: &Path, named: &[(String, Tensor)]) -> Result<(), Failure> {
    pjc_tensor::write_outputs(path, named).map_err(env)
}

pub fn run(file: &Path, entry: &str, input: &[String], inputs: &[PathBuf], output: &Path, accumulate: Option<pjc_transforms::Accumulate>) -> Result<(), Failure> {
    let mut c = Compilation::load(file, entry, None)?;
    // `--accumulate K`: the step's micro-batch form (made in stage expand).
    c.accumulate = accumulate;
    // The interpreter runs vmap itself (as a loop of calls: an independent
    // check of the compiler's batching) except inside spmd funcs, where the loop
    // cannot run collectives in lockstep; grad needs the compiler's expansion.
    let needs_expansion = c.module.funcs.values().any(|f| {
        f.body.iter().any(|&i| match f.insts[i].op {
            pjc_ir::Opcode::Grad => true,
            pjc_ir::Opcode::Vmap => f.kind == pjc_ir::FuncKind::Spmd,
            _ => false,
        })
    });
    if needs_expansion || c.accumulate.is_some() {
        c.run_to(Stage::Expand)?;
    }
    let (m, id): (Module, _) = (c.module, c.entry);
    // The sizes the program implies, before any is allocated.
    if let Some(available) = pjc_tensor::available_memory() {
        pjc_interp::check_memory(&m, available).map_err(|e| Failure::Env(e.to_string()))?;
    }
    let f = &m.funcs[id];
    let args = gather_inputs(&m, f, input, inputs)?;
    let results = pjc_interp::eval(&m, id, args).map_err(|e| Failure::Env(e.to_string()))?;
    let named: Vec<(String, Tensor)> =
        results.into_iter().enumerate().map(|(i, t)| (f.result_name(i), t)).collect();
    write_outputs(output, &named)
}
