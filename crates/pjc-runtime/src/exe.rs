//! The compiled executable's `main`: what `mpirun -np N ./model.bin ...` runs
//! on every rank (spec section 10; docs/executable.md).
//!
//! 1. Read the program the executable carries ([`crate::payload`]): the
//!    compiled artefact ([`pjc_plan::Artifact`]: the plan, buffer plan,
//!    group tables, parameter and result metadata, host kernels and PTX),
//!    checked against this runtime's format and schema and its hash.
//! 2. Check the process count, pick the device (`--device auto|cpu|cuda`, the
//!    same on every rank), build the backend (communicators, buffers).
//! 3. Open the inputs memory-mapped and give every parameter its shard; in
//!    loop mode, the `--data` parameters get the step's rows.
//! 4. Run once, or `--steps N` times feeding carried results back and logging
//!    scalar results on rank 0.
//! 5. Gather the results on rank 0 and write them.
//!
//! Failures that only some ranks see before the run (a missing file, a bad
//! shape) are agreed on ([`agree`]) so that every rank exits with the first
//! failing rank's code and only that rank prints; failures during the run
//! abort the job (other ranks may be inside a collective).

use crate::backend::{Backend, DeviceChoice};
use crate::results::{assemble, write_outputs};
use crate::groups::shard_block;
use crate::payload::{section, Payload};
use crate::shardio::{open_named, open_safetensors, Source};
use crate::world::{agree, World};
use crate::RuntimeError;
use clap::Parser;
use pjc_plan::{Artifact, ArtifactError};
use pjc_ir::{DType, Mesh, TensorType};
use pjc_tensor::Tensor;
use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

/// Flags of a compiled executable.
#[derive(Parser, Debug, Default)]
#[command(
    about = "A program compiled by pjc. Launch it with `mpirun -np N` (N = the mesh's device count), or directly when the mesh has one device."
)]
pub struct ExeArgs {
    /// A parameter's value: NAME=PATH (.npy, or .safetensors holding NAME). Repeatable; overrides --inputs.
    #[arg(long = "input", value_name = "NAME=PATH")]
    pub input: Vec<String>,
    /// A safetensors file whose tensors are matched to parameters by name (others are ignored). Repeatable.
    #[arg(long = "inputs", value_name = "PATH.safetensors")]
    pub inputs: Vec<PathBuf>,
    /// Where rank 0 writes the results: a .safetensors file, or a directory of NAME.npy.
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Loop mode: run N steps, feeding each carried result back as its parameter.
    #[arg(long, value_name = "N")]
    pub steps: Option<u64>,
    /// Loop mode: feed parameter NAME from a dataset (.npy) whose dimension 0 holds examples. Repeatable.
    #[arg(long = "data", value_name = "NAME=PATH")]
    pub data: Vec<String>,
    /// Loop mode: rank 0 prints the scalar results every K steps.
    #[arg(long, value_name = "K", default_value_t = 10)]
    pub log_every: u64,
    /// Where to run: a CUDA GPU per process when the machine has enough (auto), or force one.
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
    /// Loop mode: write sharded checkpoints of the carried parameters into DIR.
    #[arg(long, value_name = "DIR")]
    pub checkpoint: Option<PathBuf>,
    /// Write a checkpoint every K steps (and after the last step).
    #[arg(long, value_name = "K")]
    pub checkpoint_every: Option<u64>,
    /// Keep only the newest N checkpoints.
    #[arg(long, value_name = "N")]
    pub keep: Option<usize>,
    /// Continue from the newest complete checkpoint in --checkpoint DIR (up to --steps in total).
    #[arg(long)]
    pub resume: bool,
    /// Write a Chrome trace-event file (Perfetto, chrome://tracing): one track per rank.
    #[arg(long, value_name = "PATH.json")]
    pub trace: Option<PathBuf>,
    /// Print every rank's host, local rank, mesh coordinates and device, and exit.
    #[arg(long)]
    pub list_devices: bool,
    /// Refuse to start when the program's buffers need more than SIZE on a process's
    /// device (host memory on the CPU, GPU memory on a GPU): bytes, or with K, M, G or T.
    #[arg(long, value_name = "SIZE", value_parser = parse_memory_limit)]
    pub memory_limit: Option<u64>,
}

fn parse_memory_limit(s: &str) -> Result<u64, String> {
    pjc_tensor::parse_size(s).ok_or_else(|| format!("'{s}' is not a size (bytes, or a number with K, M, G or T)"))
}

fn corrupt(m: String) -> RuntimeError {
    RuntimeError::Env(format!("this executable is damaged: {m}"))
}

/// The compiled program the executable carries for `processes` processes:
/// decoded as it is, after its format, schema and hash checks; nothing is
/// re-derived. An ordinary executable has one program (whose mesh
/// [`World::check_device_count`] checks against the process count); an
/// elastic one picks the program for `processes` and refuses a count it
/// carries none for, listing those it does.
pub fn load(p: &Payload, processes: usize) -> Result<Artifact, RuntimeError> {
    let name = match p.elastic().map_err(corrupt)? {
        None => section::ARTIFACT.to_string(),
        Some(e) => {
            let counts = e.process_counts();
            if !counts.contains(&(processes as u64)) {
                let list = crate::payload::or_list(&counts);
                return Err(env(format!(
                    "this executable carries its program for {list} processes (--elastic {}), but {processes} process{} started; launch it with mpirun -np {list}",
                    e.spec(),
                    if processes == 1 { " was" } else { "es were" }
                )));
            }
            section::artifact_for(processes as u64)
        }
    };
    let bytes = p.get(&name).ok_or_else(|| corrupt(format!("it carries no '{name}' section")))?;
    Artifact::from_bytes(bytes).map_err(|e| match e {
        ArtifactError::Format { .. } | ArtifactError::Schema { .. } => RuntimeError::Env(format!("this executable cannot run with this runtime: {e}")),
        e => corrupt(e.to_string()),
    })
}

/// The process counts the executable runs on, smallest first: one (its
/// mesh's device count), or an elastic executable's list.
pub fn process_counts(p: &Payload) -> Result<Vec<u64>, RuntimeError> {
    match p.elastic().map_err(corrupt)? {
        Some(e) => Ok(e.process_counts()),
        None => Ok(vec![load(p, 0)?.mesh.device_count()]),
    }
}

/// Test hooks of loop mode, for the elastic tests (docs/training.md):
/// `PJC_TEST_KILL_RANK=R@S` makes rank R kill itself with SIGKILL just
/// before step S (S steps done), in the first launch of a supervised run
/// only (`PJC_SUPERVISE_LAUNCH` unset or 0); `R@S/every` in every launch.
/// `PJC_TEST_STEP_MS=N` makes every step last at least N ms.
struct TestHooks {
    kill: Option<(usize, u64)>,
    step_ms: u64,
}

impl TestHooks {
    fn from_env() -> TestHooks {
        let first_launch = std::env::var("PJC_SUPERVISE_LAUNCH").map_or(true, |l| l == "0");
        let kill = std::env::var("PJC_TEST_KILL_RANK").ok().and_then(|v| {
            let (spec, every) = match v.strip_suffix("/every") {
                Some(s) => (s.to_string(), true),
                None => (v.clone(), false),
            };
            let (r, s) = spec.split_once('@')?;
            (every || first_launch).then_some((r.trim().parse().ok()?, s.trim().parse().ok()?))
        });
        let step_ms = std::env::var("PJC_TEST_STEP_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        TestHooks { kill, step_ms }
    }

    fn before_step(&self, rank: usize, step: u64) {
        if self.kill == Some((rank, step)) {
            // SAFETY: kill(2) on this process; it does not return.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
    }

    fn after_step(&self, began: Instant) {
        let want = std::time::Duration::from_millis(self.step_ms);
        if let Some(left) = want.checked_sub(began.elapsed()) {
            std::thread::sleep(left);
        }
    }
}

/// Where each parameter's value comes from.
enum Feed {
    /// A whole array (its shard is read once).
    Array(Source),
    /// A dataset: the step's batch of rows.
    Data(Source),
    /// A carried parameter restored from a checkpoint.
    Restored,
}

fn env(m: String) -> RuntimeError {
    RuntimeError::Env(m)
}

fn type_of(s: &Source) -> TensorType {
    TensorType::new(s.dtype, s.shape.iter().map(|&d| d as u64).collect())
}

/// Matches `--inputs`, `--input` and `--data` to the parameters and checks
/// names, shapes and dtypes (spec section 10's rules).
fn open_feeds(p: &Artifact, a: &ExeArgs, restored: &[usize]) -> Result<Vec<Feed>, RuntimeError> {
    let params: Vec<&str> = p.params.iter().map(|q| q.name.as_str()).collect();
    let name = &p.entry;
    let mut got: HashMap<String, (Source, bool)> = HashMap::new();
    for file in &a.inputs {
        for (n, s) in open_safetensors(file)? {
            if params.contains(&n.as_str()) {
                got.insert(n, (s, false));
            }
        }
    }
    let split = |flag: &str, spec: &str| -> Result<(String, PathBuf), RuntimeError> {
        let (n, path) = spec.split_once('=').ok_or_else(|| env(format!("{flag} '{spec}' must look like NAME=PATH")))?;
        if !params.contains(&n) {
            return Err(env(format!("{flag} names '{n}', but @{name} has no parameter '{n}' (its parameters: {})", params.join(", "))));
        }
        Ok((n.to_string(), PathBuf::from(path)))
    };
    for spec in &a.input {
        let (n, path) = split("--input", spec)?;
        let s = open_named(&n, &path).map_err(|e| env(format!("input '{n}': {e}")))?;
        got.insert(n, (s, false));
    }
    let mut data_names = vec![];
    for spec in &a.data {
        let (n, path) = split("--data", spec)?;
        if data_names.contains(&n) {
            return Err(env(format!("--data gives parameter '{n}' twice")));
        }
        let s = open_named(&n, &path).map_err(|e| env(format!("dataset '{n}': {e}")))?;
        data_names.push(n.clone());
        got.insert(n, (s, true));
    }
    let mut examples: Option<(String, usize)> = None;
    let mut out = vec![];
    for (i, &pn) in params.iter().enumerate() {
        let want = p.params[i].global.clone();
        if restored.contains(&i) {
            // From the checkpoint; an input for it is ignored.
            got.remove(pn);
            out.push(Feed::Restored);
            continue;
        }
        let Some((s, is_data)) = got.remove(pn) else {
            return Err(env(format!("no input for parameter '{pn}' ({want}): give --input {pn}=PATH, --inputs FILE.safetensors or --data {pn}=PATH")));
        };
        let dtype_ok = s.dtype == want.dtype || (want.dtype == DType::BF16 && s.dtype == DType::F32);
        if is_data {
            let m = s.shape.first().copied().unwrap_or(0);
            let rows_ok = s.shape.len() == want.shape.len() && s.shape[1..].iter().zip(&want.shape[1..]).all(|(&a, &b)| a as u64 == b);
            if want.shape.is_empty() || !rows_ok || !dtype_ok || m == 0 {
                let row = if want.shape.is_empty() { "a parameter with a batch dimension".to_string() } else {
                    format!("{}[M{}] with M >= 1", want.dtype, want.shape[1..].iter().map(|d| format!(",{d}")).collect::<String>())
                };
                return Err(env(format!("dataset '{pn}' from '{}' is {}, but parameter %{pn} of @{name} is {want}: its dataset must be {row}", s.path, type_of(&s))));
            }
            match &examples {
                Some((other, m0)) if *m0 != m => {
                    return Err(env(format!("datasets of different lengths: '{other}' has {m0} examples, '{pn}' has {m}")));
                }
                None => examples = Some((pn.to_string(), m)),
                _ => {}
            }
            out.push(Feed::Data(s));
        } else {
            if !dtype_ok || type_of(&s).shape != want.shape {
                return Err(env(format!("input '{pn}' from '{}' is {}, but parameter %{pn} of @{name} is {want}", s.path, type_of(&s))));
            }
            out.push(Feed::Array(s));
        }
    }
    Ok(out)
}

/// This device's block of parameter `i`: (start, size) per dimension.
fn param_block(p: &Artifact, i: usize, device: u64) -> (Vec<usize>, Vec<usize>) {
    let shape: Vec<usize> = p.params[i].global.shape.iter().map(|&d| d as usize).collect();
    let s = p.params[i].sharding.as_ref();
    shard_block(&p.mesh, s, &shape, device).into_iter().unzip()
}

fn to_param_dtype(t: Tensor, want: DType) -> Result<Tensor, RuntimeError> {
    if t.dtype() == want {
        return Ok(t);
    }
    pjc_tensor::convert(&t, want).map_err(|e| RuntimeError::Internal(e.to_string()))
}

/// The shard of a fixed input.
fn array_shard(p: &Artifact, i: usize, s: &Source, device: u64) -> Result<Tensor, RuntimeError> {
    let (start, size) = param_block(p, i, device);
    to_param_dtype(s.block(&start, &size), p.params[i].global.dtype)
}

/// This device's rows of step `step`'s batch of dataset parameter `i`:
/// the global batch is examples (step·B + j) mod M, j = 0..B.
fn data_shard(p: &Artifact, i: usize, s: &Source, device: u64, step: u64) -> Result<Tensor, RuntimeError> {
    let (start, size) = param_block(p, i, device);
    let want = &p.params[i].global;
    let (b, m) = (want.shape[0], s.shape[0] as u64);
    let rows: Vec<usize> = (0..size[0] as u64).map(|j| ((step.wrapping_mul(b) % m + (start[0] as u64 + j) % m) % m) as usize).collect();
    to_param_dtype(s.rows(&rows, &start[1..], &size[1..]), want.dtype)
}

/// Picks the device kind (the same on every rank) and says which on rank 0.
fn choose_device(world: &World, p: &Artifact, choice: DeviceChoice) -> Result<DeviceChoice, RuntimeError> {
    let local = world.local_size();
    let cuda_ok = || -> Result<(), String> {
        let ptx = p.ptx.as_ref().map_err(|e| format!("the executable has no GPU code ({e})"))?;
        let _ = ptx;
        let n = crate::cuda::probe()?;
        if n < local {
            return Err(format!("{local} process{} on this node but {n} GPU{}", if local == 1 { "" } else { "es" }, if n == 1 { "" } else { "s" }));
        }
        Ok(())
    };
    let mine = match choice {
        DeviceChoice::Cpu => Ok(DeviceChoice::Cpu),
        DeviceChoice::Cuda => cuda_ok().map(|_| DeviceChoice::Cuda).map_err(|e| env(format!("--device cuda: {e}"))),
        DeviceChoice::Auto => Ok(match cuda_ok() {
            Ok(()) => DeviceChoice::Cuda,
            Err(why) => {
                if world.rank() == 0 {
                    eprintln!("pjc: running on the CPU ({why})");
                }
                DeviceChoice::Cpu
            }
        }),
    };
    let mine = agree(world, mine)?;
    // Every rank must use the same kind: with auto, CUDA only if all can.
    let codes = world.all_codes(u8::from(mine == DeviceChoice::Cuda));
    let kind = if codes.iter().all(|&c| c == 1) { DeviceChoice::Cuda } else { DeviceChoice::Cpu };
    if world.rank() == 0 && kind == DeviceChoice::Cuda {
        eprintln!("pjc: running on CUDA ({} process{}, one GPU each)", world.size(), if world.size() == 1 { "" } else { "es" });
    }
    Ok(kind)
}

/// Formats a scalar result for the log.
fn scalar_text(t: &Tensor) -> String {
    match t.data.lanes() {
        pjc_tensor::Lanes::F(v) => format!("{:.6}", v[0]),
        pjc_tensor::Lanes::I(v) => v[0].to_string(),
        _ => format!("{:?}", t.data),
    }
}

/// The checkpoint view of the carried parameters.
pub(crate) fn carried_views<'p>(p: &'p Artifact) -> Vec<crate::checkpoint::Carried<'p>> {
    p.carried
        .iter()
        .map(|&(_, i)| crate::checkpoint::Carried { name: &p.params[i].name, ty: p.params[i].global.clone(), sharding: p.params[i].sharding.as_ref() })
        .collect()
}

fn check_flags(a: &ExeArgs) -> Result<(), RuntimeError> {
    if a.log_every == 0 {
        return Err(env("--log-every must be at least 1".into()));
    }
    if a.steps == Some(0) {
        return Err(env("--steps must be at least 1".into()));
    }
    if a.checkpoint_every == Some(0) {
        return Err(env("--checkpoint-every must be at least 1".into()));
    }
    if a.keep == Some(0) {
        return Err(env("--keep must be at least 1".into()));
    }
    if a.checkpoint.is_none() && (a.resume || a.checkpoint_every.is_some() || a.keep.is_some()) {
        return Err(env("--resume, --checkpoint-every and --keep need --checkpoint DIR".into()));
    }
    if a.checkpoint.is_some() && a.steps.is_none() {
        return Err(env("--checkpoint is for loop mode: give --steps N".into()));
    }
    Ok(())
}

/// Runs the program on `world` with flags `a`; the process started at
/// `started` (the trace's start-up span measures from there).
pub fn run(world: &World, payload: &Payload, a: &ExeArgs, started: Instant) -> Result<(), RuntimeError> {
    let p = agree(world, load(payload, world.size()).and_then(|p| world.check_device_count(&p.mesh).map(|_| p)))?;
    check_flags(a)?;
    if a.list_devices {
        return crate::devices::list(world, &p, a.device);
    }
    let kind = choose_device(world, &p, a.device)?;
    agree(world, crate::memory::check(world, &p, kind, a.memory_limit))?;
    let device = world.rank() as u64;
    let mut tracer = crate::trace::Tracer::new(world, a.trace.is_some());
    let backend: Result<Box<dyn Backend + '_>, RuntimeError> = match kind {
        DeviceChoice::Cuda => {
            let ptx = p.ptx.as_ref().expect("checked by choose_device");
            crate::cuda::CudaBackend::new(&p.plan, &p.memory, ptx, world, &p.mesh, &p.groups).map(|b| Box::new(b) as Box<dyn Backend>)
        }
        _ => crate::cpu::CpuBackend::new(&p.plan, &p.memory, &p.host_kernels, world, &p.mesh, &p.groups).map(|b| Box::new(b) as Box<dyn Backend>),
    };
    let mut backend = agree(world, backend)?;
    backend.set_tracing(a.trace.is_some());
    let carried = p.carried.clone();
    let views = carried_views(&p);
    // Resume: the newest complete checkpoint, chosen by rank 0.
    let resumed = match (&a.checkpoint, a.resume) {
        (Some(dir), true) => crate::checkpoint::choose(world, dir, &views)?,
        _ => None,
    };
    let restored: Vec<usize> = if resumed.is_some() { carried.iter().map(|&(_, i)| i).collect() } else { vec![] };
    // Inputs: fixed arrays now, datasets per step, carried state from the checkpoint.
    let t_in = tracer.now();
    let feeds = agree(
        world,
        open_feeds(&p, a, &restored).and_then(|feeds| {
            for (i, f) in feeds.iter().enumerate() {
                if let Feed::Array(s) = f {
                    backend.set_param(i, &array_shard(&p, i, s, device)?)?;
                }
            }
            Ok(feeds)
        }),
    )?;
    let mut start = 0u64;
    if let (Some(step), Some(dir)) = (resumed, &a.checkpoint) {
        let loaded = crate::checkpoint::load(dir, step, &p.mesh, device, &views).and_then(|(m, ts)| {
            for (&(_, i), t) in carried.iter().zip(&ts) {
                backend.set_param(i, t)?;
            }
            Ok(m)
        });
        let m = agree(world, loaded)?;
        start = step;
        if world.rank() == 0 {
            let from = if m.devices == p.mesh.device_count() { String::new() } else { format!(", written by {} processes on mesh {}", m.devices, m.mesh) };
            eprintln!("pjc: resuming from '{}' (step {step} of {}{from})", crate::checkpoint::step_dir(dir, step).display(), a.steps.unwrap_or(1));
        }
    } else if a.resume && world.rank() == 0 {
        eprintln!("pjc: no checkpoint in '{}' yet: starting at step 0", a.checkpoint.as_ref().expect("checked").display());
    }
    tracer.span("read inputs", "io", t_in, serde_json::json!({}));
    let fatal = |e: RuntimeError| RuntimeError::Fatal(Box::new(e));
    let steps = a.steps.unwrap_or(1);
    let looping = a.steps.is_some();
    let logged: Vec<usize> = (0..p.results.len())
        .filter(|&k| p.results[k].global.shape.is_empty() && !carried.iter().any(|&(c, _)| c == k))
        .collect();
    let data_shape = feeds.iter().enumerate().find_map(|(i, f)| match f {
        Feed::Data(s) => Some((s.shape[0] as u64, p.params[i].global.shape[0])),
        _ => None,
    });
    let batch = data_shape.map_or(0, |d| d.1);
    let bar = (looping && world.rank() == 0 && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(steps);
        b.set_style(indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} steps [{elapsed_precise} < {eta_precise}] {msg}").expect("a valid template"));
        b.set_position(start.min(steps));
        b
    });
    // From the process's start (MPI start-up, reading the artefact, the
    // backend, the inputs) to the first step.
    tracer.span("start-up", "setup", started, serde_json::json!({"ms": started.elapsed().as_secs_f64() * 1e3}));
    let t0 = Instant::now();
    let mut last = (start, t0);
    let mut ran = false;
    let hooks = TestHooks::from_env();
    for s in start..steps {
        hooks.before_step(world.rank(), s);
        let began = Instant::now();
        let t_step = tracer.now();
        for (i, f) in feeds.iter().enumerate() {
            if let Feed::Data(src) = f {
                let t = data_shard(&p, i, src, device, s).map_err(fatal)?;
                backend.set_param(i, &t).map_err(fatal)?;
            }
        }
        backend.run().map_err(fatal)?;
        hooks.after_step(began);
        ran = true;
        tracer.extend(backend.take_trace());
        let done = s + 1;
        if looping && (done % a.log_every == 0 || done == steps) && world.rank() == 0 {
            let now = Instant::now();
            let dt = now.duration_since(last.1).as_secs_f64().max(1e-9);
            let rate = (done - last.0) as f64 / dt;
            let mut line = format!("step {done}/{steps}:");
            for &k in &logged {
                let t = backend.result(k).map_err(fatal)?;
                line.push_str(&format!(" {}={}", p.results[k].name, scalar_text(&t)));
            }
            line.push_str(&format!(" ({rate:.1} steps/s"));
            if batch > 0 {
                line.push_str(&format!(", {:.0} examples/s", rate * batch as f64));
            }
            line.push(')');
            match &bar {
                Some(b) => b.println(line),
                None => println!("{line}"),
            }
            last = (done, now);
        }
        if let Some(dir) = &a.checkpoint {
            if a.checkpoint_every.is_some_and(|k| done % k == 0) || done == steps {
                let t_ck = tracer.now();
                let values = carried.iter().map(|&(k, _)| backend.result(k)).collect::<Result<Vec<_>, _>>().map_err(fatal)?;
                let data = data_shape.map(|(m, b)| crate::checkpoint::DataPosition { examples: m, batch: b, next_example: (done.wrapping_mul(b)) % m.max(1) });
                // Not fatal: every rank returns from write with the same
                // outcome (it agrees), so the job can end normally, with
                // the error printed once.
                let path = crate::checkpoint::write(world, dir, done, &p.mesh, &views, &values, data, a.keep)?;
                tracer.span("checkpoint", "io", t_ck, serde_json::json!({"step": done}));
                if world.rank() == 0 {
                    let msg = format!("checkpoint: {}", path.display());
                    match &bar {
                        Some(b) => b.println(msg),
                        None => println!("{msg}"),
                    }
                }
            }
        }
        if let Some(b) = &bar {
            b.set_position(done);
        }
        tracer.span(&format!("step {done}"), "step", t_step, serde_json::json!({"step": done}));
        if done < steps {
            backend.carry(&carried).map_err(fatal)?;
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if !ran && world.rank() == 0 {
        eprintln!("pjc: the checkpoint is at step {start}, which reaches --steps {steps}: nothing to run");
    }
    // Gather to rank 0 and write. A resumed run with nothing left to run has
    // only the carried parameters (the other results were never computed).
    let mut named = vec![];
    if ran {
        for k in 0..p.results.len() {
            let t = backend.result(k).map_err(fatal)?;
            let bytes = pjc_tensor::buf_to_le_bytes(&t.data);
            if let Some(parts) = world.gather_to_root(&bytes).map_err(fatal)? {
                named.push((p.results[k].name.clone(), assemble(&p.results[k], &p.mesh, &parts)));
            }
        }
    } else if let (Some(step), Some(dir)) = (resumed, &a.checkpoint) {
        if world.rank() == 0 {
            let single = Mesh::default();
            let whole = crate::checkpoint::load(dir, step, &single, 0, &views)?.1;
            for (&(k, _), t) in carried.iter().zip(whole) {
                named.push((p.results[k].name.clone(), t));
            }
        }
    }
    tracer.extend(backend.take_trace());
    drop(backend);
    if let Some(path) = &a.trace {
        tracer.write(path, &pjc_plan::cost::plan_cost(&p.plan, &p.mesh, &pjc_plan::cost::Machine::CPU))?;
    }
    if world.rank() == 0 {
        if let Some(out) = &a.output {
            write_outputs(out, &named)?;
        }
    }
    Ok(())
}

/// The executable's entry point.
pub fn main() -> std::process::ExitCode {
    let started = Instant::now();
    let a = match ExeArgs::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return std::process::ExitCode::from(code);
        }
    };
    let payload = match read_payload() {
        Ok(p) => p,
        Err(code) => return code,
    };
    crate::main_with(|w| run(w, &payload, &a, started))
}

/// The program this executable carries; on failure the error is printed
/// and the exit code returned.
pub fn read_payload() -> Result<Payload, std::process::ExitCode> {
    let payload = std::env::current_exe()
        .map_err(|e| e.to_string())
        .and_then(|exe| Payload::read_from(&exe).map(|p| (exe, p)));
    match payload {
        Ok((_, Some(p))) => Ok(p),
        Ok((exe, None)) => {
            eprintln!(
                "error: '{}' is pjc's runner and carries no program; `pjc compile FILE.pir -o OUT` makes an executable from it",
                exe.display()
            );
            Err(std::process::ExitCode::from(2))
        }
        Err(e) => {
            eprintln!("error: cannot read this executable's program: {e}");
            Err(std::process::ExitCode::from(2))
        }
    }
}
