//! One run of a PIR program on the process world: load and lower the program
//! (expand transforms, propagate, annotate, partition, plan), read the global
//! inputs and keep this rank's shards, run the per-device plan, and gather
//! the global outputs on rank 0, which writes them (spec section 10's
//! `--input`, `--inputs`, `--output`).

use crate::collectives::MpiCollectives;
use crate::groups::{is_block_owner, shard_block};
use crate::pack::{extract_block, insert_block};
use crate::world::World;
use crate::RuntimeError;
use pjc_fusion::plan::Plan;
use pjc_ir::infer::global_type;
use pjc_ir::{DType, FuncId, FuncKind, Function, Mesh, Module, Sharding};
use pjc_tensor::Tensor;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What a run needs.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub file: PathBuf,
    pub entry: String,
    /// `--mesh A=N,...`: new sizes for the module's axes.
    pub mesh: Option<String>,
    /// `--input NAME=PATH`.
    pub input: Vec<String>,
    /// `--inputs FILE.safetensors`.
    pub inputs: Vec<PathBuf>,
    /// `--output PATH` (.safetensors, or a directory of NAME.npy).
    pub output: Option<PathBuf>,
    /// Run the plan with the interpreter's kernels instead of JIT-compiled ones.
    pub reference: bool,
}

/// A program lowered for one device.
pub struct Lowered {
    /// The verified module after grad/vmap expansion (the global program).
    pub module: Module,
    pub entry: FuncId,
    pub mesh: Mesh,
    /// The per-device `spmd func` (its signature shardings say how shards compose).
    pub spmd: Function,
    pub plan: Plan,
}

fn env<E: std::fmt::Display>(e: E) -> RuntimeError {
    RuntimeError::Env(e.to_string())
}


/// Reads, parses, applies `--mesh`, verifies and expands grad/vmap.
pub fn load(path: &Path, entry: &str, mesh: Option<&str>) -> Result<(Module, FuncId), RuntimeError> {
    let src = std::fs::read_to_string(path).map_err(|e| RuntimeError::Env(format!("cannot read '{}': {}", path.display(), io_reason(&e))))?;
    let name = path.display().to_string();
    let program = |d: Vec<pjc_front::Diag>| RuntimeError::Program(pjc_front::render(&name, &src, &d));
    let mut m = pjc_front::parse(&src).map_err(program)?;
    if let Some(spec) = mesh {
        pjc_front::override_mesh(&mut m, spec).map_err(RuntimeError::Env)?;
    }
    pjc_front::verify(&mut m).map_err(program)?;
    let id = pjc_front::check_entry(&m, entry).map_err(|d| program(vec![d]))?;
    pjc_transforms::expand(&mut m).map_err(|e| program(vec![pjc_front::Diag::new(e.span, e.msg)]))?;
    pjc_front::verify(&mut m).map_err(|d| {
        let text = pjc_front::print_module(&m);
        RuntimeError::Internal(format!("the expanded program does not verify:\n{}", pjc_front::render("<expanded>", &text, &d)))
    })?;
    Ok((m, id))
}

/// Propagation, annotation, partitioning and planning of the entry.
pub fn lower(m: Module, entry: FuncId) -> Result<Lowered, RuntimeError> {
    let prop = pjc_sharding::propagate(&m, entry);
    let annotated = pjc_sharding::annotate(&m, &prop);
    let part = pjc_partition::partition(&annotated, entry)
        .map_err(|e| RuntimeError::Env(format!("unsupported: the SPMD partitioner cannot handle this program: {}", e.0)))?;
    let name = &m.funcs[entry].name;
    let spmd = part.module.funcs[part.module.func_by_name(name).ok_or_else(|| RuntimeError::Internal(format!("the partitioned module has no @{name}")))?].clone();
    let plan = pjc_fusion::plan(&spmd).map_err(|e| RuntimeError::Env(format!("unsupported: {}", e.0)))?;
    let mesh = m.mesh_or_single();
    Ok(Lowered { module: m, entry, mesh, spmd, plan })
}

/// An io::Error's message without Rust's " (os error N)" suffix.
fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}


/// The global type of the entry's parameter `i`.
pub fn param_global_type(f: &Function, mesh: &Mesh, i: usize) -> pjc_ir::TensorType {
    let v = &f.values[f.params[i]];
    match f.kind {
        FuncKind::Spmd => global_type(&v.ty, v.sharding.as_ref(), mesh),
        FuncKind::Global => v.ty.clone(),
    }
}

/// One global tensor per parameter of `f` (spec section 10's input rules).
pub fn gather_inputs(f: &Function, mesh: &Mesh, input: &[String], inputs: &[PathBuf]) -> Result<Vec<Tensor>, RuntimeError> {
    let params: Vec<&str> = (0..f.params.len()).map(|i| f.param_name(i)).collect();
    let mut got: HashMap<String, (Tensor, String)> = HashMap::new();
    for file in inputs {
        for (name, t) in pjc_tensor::read_safetensors(file).map_err(env)? {
            if params.contains(&name.as_str()) {
                got.insert(name, (t, file.display().to_string()));
            }
        }
    }
    for spec in input {
        let Some((name, path)) = spec.split_once('=') else {
            return Err(RuntimeError::Env(format!("--input '{spec}' must look like NAME=PATH")));
        };
        if !params.contains(&name) {
            return Err(RuntimeError::Env(format!("--input names '{name}', but @{} has no parameter '{name}' (its parameters: {})", f.name, params.join(", "))));
        }
        let t = pjc_tensor::read_named(name, Path::new(path)).map_err(|e| RuntimeError::Env(format!("input '{name}': {e}")))?;
        got.insert(name.to_string(), (t, path.to_string()));
    }
    let mut out = vec![];
    for (i, &name) in params.iter().enumerate() {
        let want = param_global_type(f, mesh, i);
        let Some((mut t, from)) = got.remove(name) else {
            return Err(RuntimeError::Env(format!("no input for parameter '{name}' ({want}): give --input {name}=PATH or --inputs FILE.safetensors")));
        };
        if want.dtype == DType::BF16 && t.dtype() == DType::F32 {
            t = pjc_tensor::convert(&t, DType::BF16).map_err(env)?;
        }
        let shape: Vec<u64> = t.shape.iter().map(|&d| d as u64).collect();
        if t.dtype() != want.dtype || shape != want.shape {
            let got_ty = pjc_ir::TensorType::new(t.dtype(), shape);
            return Err(RuntimeError::Env(format!("input '{name}' from '{from}' is {got_ty}, but parameter %{name} of @{} is {want}", f.name)));
        }
        out.push(t);
    }
    Ok(out)
}

/// `device`'s shard of global tensor `t` under sharding `s`.
pub fn shard_of(t: &Tensor, s: Option<&Sharding>, mesh: &Mesh, device: u64) -> Tensor {
    let block = shard_block(mesh, s, &t.shape, device);
    let start: Vec<usize> = block.iter().map(|b| b.0).collect();
    let size: Vec<usize> = block.iter().map(|b| b.1).collect();
    let d = t.dtype();
    let bytes = pjc_tensor::buf_to_le_bytes(&t.data);
    let local = extract_block(&bytes, &t.shape, d.size_bytes(), &start, &size);
    Tensor::new(size, pjc_tensor::buf_from_le_bytes(d, &local).expect("whole elements"))
}

/// This device's arguments of the per-device function.
pub fn local_args(spmd: &Function, mesh: &Mesh, device: u64, globals: &[Tensor]) -> Vec<Tensor> {
    spmd.params.iter().zip(globals).map(|(&p, t)| shard_of(t, spmd.values[p].sharding.as_ref(), mesh, device)).collect()
}

/// Assembles result `k` of `spmd` from every device's local value (`parts[d]`
/// is device d's bytes); each element comes from the first device holding it.
pub fn assemble(spmd: &Function, mesh: &Mesh, k: usize, parts: &[Vec<u8>]) -> Tensor {
    let r = &spmd.results[k];
    let s = r.sharding.as_ref();
    let g = global_type(&r.ty, s, mesh);
    let shape: Vec<usize> = g.shape.iter().map(|&d| d as usize).collect();
    let es = g.dtype.size_bytes();
    let mut out = vec![0u8; g.num_elements() as usize * es];
    for (dev, part) in parts.iter().enumerate() {
        if !is_block_owner(mesh, s, dev as u64) {
            continue;
        }
        let block = shard_block(mesh, s, &shape, dev as u64);
        let start: Vec<usize> = block.iter().map(|b| b.0).collect();
        let size: Vec<usize> = block.iter().map(|b| b.1).collect();
        insert_block(&mut out, &shape, es, &start, &size, part);
    }
    Tensor::new(shape, pjc_tensor::buf_from_le_bytes(g.dtype, &out).expect("whole elements"))
}

/// Writes results: one `.safetensors` file, or a directory of `NAME.npy`.
pub fn write_outputs(path: &Path, named: &[(String, Tensor)]) -> Result<(), RuntimeError> {
    if path.extension().is_some_and(|e| e == "safetensors") {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| RuntimeError::Env(format!("cannot create '{}': {}", dir.display(), io_reason(&e))))?;
        }
        return pjc_tensor::write_safetensors(path, named).map_err(env);
    }
    std::fs::create_dir_all(path).map_err(|e| RuntimeError::Env(format!("cannot create output directory '{}': {}", path.display(), io_reason(&e))))?;
    for (name, t) in named {
        pjc_tensor::write_npy(&path.join(format!("{name}.npy")), t).map_err(env)?;
    }
    Ok(())
}

/// Makes every rank take the same path after a phase that may fail on some
/// ranks only: returns the first failure (by rank) as seen by every rank, the
/// failing rank's own message, or a pointer to it on the other ranks.
fn agree(world: &World, r: Result<(), RuntimeError>) -> Result<(), RuntimeError> {
    if world.size() == 1 {
        return r;
    }
    let code = match &r {
        Ok(()) => 0u8,
        Err(e) => e.exit_code() as u8,
    };
    let codes = world.all_codes(code);
    match codes.iter().position(|&c| c != 0) {
        None => Ok(()),
        Some(first) if first == world.rank() => r,
        Some(first) => Err(RuntimeError::Elsewhere { rank: first, code: codes[first] as i32 }),
    }
}

/// Runs the program of `opts` on `world`. Rank 0 writes the outputs.
pub fn run(world: &World, opts: &Options) -> Result<(), RuntimeError> {
    // Phase 1: every rank loads and lowers the same program (deterministic).
    let lowered = (|| {
        let (m, id) = load(&opts.file, &opts.entry, opts.mesh.as_deref())?;
        world.check_device_count(&m.mesh_or_single())?;
        lower(m, id)
    })();
    agree(world, lowered.as_ref().map(|_| ()).map_err(|e| e.clone()))?;
    let lowered = lowered?;
    let Lowered { module, entry, mesh, spmd, plan } = &lowered;
    let device = world.rank() as u64;
    // Phase 2: communicators (collective), inputs, code generation.
    let mut coll = MpiCollectives::for_plan(world, mesh, plan)?;
    let prepared = (|| {
        let globals = gather_inputs(&module.funcs[*entry], mesh, &opts.input, &opts.inputs)?;
        let args = local_args(spmd, mesh, device, &globals);
        let jit = if opts.reference { None } else { Some(crate::exec::compile(plan)?) };
        Ok((args, jit))
    })();
    agree(world, prepared.as_ref().map(|_| ()).map_err(|e: &RuntimeError| e.clone()))?;
    let (args, jit) = prepared?;
    // Phase 3: run. A failure here may leave other ranks inside a collective,
    // so it ends the whole job (the caller aborts).
    let results = match &jit {
        Some(j) => crate::exec::run_jit(j, &args, &mut coll, world.kernel_threads()),
        None => crate::exec::run_reference(plan, &args, &mut coll),
    }
    .map_err(|e| RuntimeError::Fatal(Box::new(e)))?;
    // Phase 4: gather to rank 0 and write.
    let mut named = vec![];
    for (k, t) in results.iter().enumerate() {
        let bytes = pjc_tensor::buf_to_le_bytes(&t.data);
        if let Some(parts) = world.gather_to_root(&bytes).map_err(|e| RuntimeError::Fatal(Box::new(e)))? {
            named.push((spmd.result_name(k), assemble(spmd, mesh, k, &parts)));
        }
    }
    drop(coll);
    if world.rank() == 0 {
        if let Some(out) = &opts.output {
            write_outputs(out, &named)?;
        }
    }
    Ok(())
}
