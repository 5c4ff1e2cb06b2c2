//! `pjc`: the command-line driver. Parses flags (clap), runs the stages of
//! [`pipeline`] (the one list of them), and is the one place where errors
//! are turned into exit codes (spec section 10): 0 success, 1 the PIR
//! program is invalid or uses what this pjc cannot compile (a located
//! diagnostic), 2 anything about the environment or the inputs.

mod autoshard;
mod eval;
mod exe;
mod failure;
mod measured;
mod pipeline;
mod pipelining;
mod ratio;
mod report;

use failure::Failure;

use pipeline::{Compilation, Stage};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "pjc", version, about = "Ahead-of-time compiler for PIR distributed array programs")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Parse and verify a PIR file; print nothing on success.
    Check {
        file: PathBuf,
        /// Entry function (default: main).
        #[arg(long, default_value = "main")]
        entry: String,
    },
    /// Read MLIR that pjc compile --emit mlir writes (global view) back into PIR:
    /// prints the canonical PIR, or writes it to -o (docs/mlir.md).
    Import {
        file: PathBuf,
        /// Write the PIR here instead of stdout.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Print the canonical text of a PIR file (which must be valid, as for check).
    Fmt {
        file: PathBuf,
        /// Entry function (default: main), as for check.
        #[arg(long, default_value = "main")]
        entry: String,
    },
    /// Compile a PIR file into a standalone executable (-o), or print an
    /// intermediate form (--emit).
    Compile {
        file: PathBuf,
        /// The executable to write (run it with mpirun -np N, N = the mesh's devices).
        #[arg(short = 'o', value_name = "OUT")]
        output: Option<PathBuf>,
        /// Replace the mesh axis sizes, e.g. data=8,model=1 (same names, same order).
        #[arg(long, value_name = "A=N,...")]
        mesh: Option<String>,
        /// An elastic executable: the program for each listed size of one
        /// mesh axis (the others fixed), e.g. data=1,2,4; it runs on any of
        /// those process counts (and under `model.bin supervise`).
        #[arg(long, value_name = "AXIS=N1,N2,...")]
        elastic: Option<String>,
        /// Entry function (default: main).
        #[arg(long, default_value = "main")]
        entry: String,
        /// Print an intermediate form instead of writing an executable.
        #[arg(long, value_enum, value_name = "KIND")]
        emit: Option<Emit>,
        /// GPU architecture of the PTX (--emit ptx and executables).
        #[arg(long, default_value = "sm_90", value_name = "ARCH")]
        gpu_arch: String,
        /// x86-64 levels the executable carries host kernels for: `all`, or a
        /// list of v2, v3, v4, native (this machine's best). Default native,v2:
        /// fast here and on machines like it, correct on any x86-64-v2 CPU.
        #[arg(long, default_value = "native,v2", value_name = "LEVELS")]
        cpu_levels: String,
        /// Which code the executable carries: cpu (x86-64 kernels), cuda
        /// (PTX), or all. Default: all when libdevice is found (GPU kernels
        /// calling math functions need it), else cpu.
        #[arg(long, value_enum, value_name = "TARGETS")]
        target: Option<exe::Targets>,
        /// Code generation threads (default: PJC_JOBS, else every core).
        #[arg(short = 'j', long, value_name = "N")]
        jobs: Option<usize>,
        /// Compile every kernel with LLVM, without reading or writing the
        /// compile cache (PJC_CACHE=off does the same; PJC_CACHE_DIR moves it).
        #[arg(long)]
        no_cache: bool,
        /// LLVM optimization of the kernels: loops (default: pjc's passes for
        /// its loops), or LLVM's levels 1, 2 or 3; -O1 leaves loops
        /// unvectorized (docs/cli.md).
        #[arg(short = 'O', value_name = "LEVEL")]
        opt: Option<String>,
        /// Print how long each stage took and how many kernels were compiled
        /// or taken from the cache (on stderr).
        #[arg(long)]
        timings: bool,
        /// With --emit plan: the plan as this backend runs it, with where each
        /// step runs (cuda: generated kernels, cuBLAS, NCCL).
        #[arg(long, value_enum, default_value = "cpu", value_name = "BACKEND")]
        device: Device,
        /// Also write what the compiler decided as one self-contained HTML
        /// page (the page of pjc explain --html, with the cpu class's peaks).
        #[arg(long, value_name = "PATH.html")]
        report: Option<PathBuf>,
        #[command(flatten)]
        acc: AccumulateArgs,
        #[command(flatten)]
        auto: autoshard::AutoShardArgs,
        #[command(flatten)]
        pp: pipelining::PipelineArgs,
    },
    /// For every value: global shape, sharding, per-device shape, and why.
    Explain {
        file: PathBuf,
        /// Replace the mesh axis sizes, e.g. data=8,model=1.
        #[arg(long, value_name = "A=N,...")]
        mesh: Option<String>,
        /// Entry function (default: main).
        #[arg(long, default_value = "main")]
        entry: String,
        /// The device class whose peaks the communication/compute estimate
        /// uses (docs/cli.md lists them).
        #[arg(long, value_enum, default_value = "cpu", value_name = "CLASS")]
        device: ratio::DeviceClass,
        /// Arithmetic peak of one device, GFLOP/s (replaces the class's).
        #[arg(long, value_name = "G")]
        device_gflops: Option<f64>,
        /// Memory bandwidth of one device, GB/s (replaces the class's).
        #[arg(long, value_name = "G")]
        device_gbps: Option<f64>,
        /// Bandwidth of each device's link to the others, in GB/s (bytes:
        /// a 400 Gb/s port is 50).
        #[arg(long, value_name = "G")]
        link_gbps: Option<f64>,
        /// Latency of one message of a collective, microseconds.
        #[arg(long, value_name = "US")]
        link_latency_us: Option<f64>,
        /// The "why" column: summary (a long path as its length and its
        /// first and last op) or full (every reason as propagation keeps it).
        #[arg(long, value_enum, default_value = "summary", value_name = "HOW")]
        why: WhyArg,
        /// Print only this value's sharding: a grid of its blocks with the
        /// devices holding each (like jax.debug.visualize_array_sharding).
        #[arg(long, value_name = "%NAME")]
        value: Option<String>,
        /// Also write the report as one self-contained HTML page.
        #[arg(long, value_name = "PATH.html")]
        html: Option<PathBuf>,
        /// A trace of a run (an executable's --trace PATH.json): the
        /// measured step time per rank, split into compute, collectives and waiting.
        #[arg(long, value_name = "PATH.json")]
        trace: Option<PathBuf>,
        #[command(flatten)]
        acc: AccumulateArgs,
        #[command(flatten)]
        auto: autoshard::AutoShardArgs,
        #[command(flatten)]
        pp: pipelining::PipelineArgs,
    },
    /// Print what this machine offers for compiled executables: CPU, GPUs.
    Devices,
    /// Run the entry function in the reference interpreter.
    Eval {
        file: PathBuf,
        /// A parameter's value: NAME=PATH (.npy or .safetensors holding NAME). Repeatable.
        #[arg(long = "input", value_name = "NAME=PATH")]
        input: Vec<String>,
        /// A safetensors file whose tensors are matched to parameters by name.
        #[arg(long = "inputs", value_name = "PATH.safetensors")]
        inputs: Vec<PathBuf>,
        /// Where to write the results: a .safetensors file, or a directory of NAME.npy.
        #[arg(long, value_name = "PATH")]
        output: PathBuf,
        /// Entry function (default: main).
        #[arg(long, default_value = "main")]
        entry: String,
        #[command(flatten)]
        acc: AccumulateArgs,
    },
}

/// `--accumulate K [--batch-params a,b]` (compile and explain): the step
/// turned into a scan over K micro-batches (docs/training.md).
#[derive(clap::Args, Clone, Default)]
struct AccumulateArgs {
    /// Gradient accumulation: take each step's gradient over K equal
    /// micro-batches of the batch parameters, added up (about 1/K of the
    /// activation memory; the same result up to reassociation).
    #[arg(long, value_name = "K")]
    accumulate: Option<u64>,
    /// With --accumulate: the batch parameters (dimension 0 is the batch),
    /// instead of the entry parameters whose dimension 0 is split (on [data, ...]).
    #[arg(long, value_name = "A,B,...", value_delimiter = ',')]
    batch_params: Option<Vec<String>>,
}

impl AccumulateArgs {
    fn get(&self) -> Result<Option<pjc_transforms::Accumulate>, Failure> {
        match (self.accumulate, &self.batch_params) {
            (None, None) => Ok(None),
            (None, Some(_)) => Err(Failure::Env("--batch-params applies with --accumulate K".into())),
            (Some(k), b) => Ok(Some(pjc_transforms::Accumulate { k, batch_params: b.clone() })),
        }
    }
}

/// `pjc explain --why`.
#[derive(Copy, Clone, PartialEq, Eq, Debug, clap::ValueEnum)]
enum WhyArg {
    Summary,
    Full,
}

impl WhyArg {
    fn get(self) -> pjc_sharding::Why {
        match self {
            WhyArg::Summary => pjc_sharding::Why::Summary,
            WhyArg::Full => pjc_sharding::Why::Full,
        }
    }
}

/// `pjc explain`'s text after propagation (which `c` has reached), each
/// section handed to `emit` as soon as it is made, so that a failing later
/// stage still shows the earlier ones. `Ok(Some(why))`: everything but the
/// kernel plan, which could not be made.
fn explain_text(
    c: &mut Compilation,
    why: pjc_sharding::Why,
    machine: &pjc_plan::cost::Machine,
    class: ratio::DeviceClass,
    trace: Option<&measured::Trace>,
    emit: &mut dyn FnMut(String),
) -> Result<Option<String>, Failure> {
    if let Some(r) = &c.auto_report {
        emit(format!("{}\n", r.text()));
    }
    emit(pjc_sharding::explain_with(&c.module, c.propagation.as_ref().expect("propagated"), why));
    if !c.pipelined.is_empty() {
        emit(pipelining::explain(&c.pipelined));
    }
    c.run_to(Stage::PerDevice)?;
    emit(explain_collectives(&c.partitioned.as_ref().expect("partitioned").collectives));
    let not_planned = match c.run_to(Stage::Plan) {
        Ok(c) => {
            let plan = c.plan.as_ref().expect("planned");
            let mem = c.memory();
            let count = |k: fn(&pjc_plan::Step) -> bool| pjc_plan::control::preorder(&plan.steps).into_iter().filter(|s| k(s)).count();
            emit(format!(
                "\nkernel plan: {} fused kernels, {} library calls, {} collectives (pjc compile --emit plan shows it)\n",
                count(|s| matches!(s, pjc_plan::Step::Kernel(_))),
                count(|s| matches!(s, pjc_plan::Step::Library { .. })),
                count(|s| matches!(s, pjc_plan::Step::Collective { .. })),
            ));
            emit(format!("peak memory per device: {} bytes (parameters, results and live temporaries)\n", mem.peak));
            emit(format!("{}\n", mem.fullest.line(plan)));
            emit(ratio::explain_ratio(plan, &c.module.mesh_or_single(), machine, class));
            None
        }
        Err(Failure::Program(e) | Failure::Env(e)) => {
            emit(format!("\nkernel plan: not available: {}\n", e.trim_end()));
            Some(e.trim_end().to_string())
        }
    };
    if let Some(t) = trace {
        emit(t.text());
    }
    Ok(not_planned)
}

/// The backend `pjc compile --emit plan --device` shows the plan for.
#[derive(Copy, Clone, PartialEq, Eq, Debug, clap::ValueEnum)]
enum Device {
    /// Kernels in kernels.so, products and convolutions in the host GEMM.
    Cpu,
    /// The CUDA backend's view: library steps cuBLAS does not take run their
    /// device kernels.
    Cuda,
}

/// What `pjc compile --emit` prints.
#[derive(Copy, Clone, PartialEq, Eq, clap::ValueEnum)]
enum Emit {
    /// The program after grad/vmap expansion.
    Pir,
    /// Every value with its propagated sharding.
    Sharded,
    /// The per-device program with its collectives.
    Spmd,
    /// The kernel plan: fused loop kernels, library calls, collectives, and the
    /// buffer plan with the peak memory (pjc's own intermediate).
    Plan,
    /// The x86-64 LLVM IR of the plan's kernels (optimized, baseline x86-64-v3).
    Llvm,
    /// The same LLVM IR as the lowering builds it, before LLVM's optimizations.
    #[value(name = "llvm-unopt")]
    LlvmUnopt,
    /// The NVPTX assembly of the plan's kernels (--gpu-arch, default sm_90).
    Ptx,
    /// The program as MLIR in upstream dialects (func, arith, math, tensor,
    /// linalg, shard), global view with its shardings, verified (docs/mlir.md).
    Mlir,
    /// The per-device program as MLIR, with shard collectives (docs/mlir.md).
    #[value(name = "mlir-spmd")]
    MlirSpmd,
}

/// `--emit plan --device cuda`: the plan the CUDA backend runs, then where
/// each of the planner's steps runs, then how many run on the host (none).
fn cuda_plan_text(plan: &pjc_plan::Plan) -> Result<String, pjc_host::device::NoDeviceForm> {
    use std::fmt::Write;
    let cuda = pjc_host::device::cuda_plan(plan)?;
    let routes = pjc_host::device::cuda_routes(plan)?;
    let mut out = format!("{cuda}");
    for (s, r) in pjc_plan::control::preorder(&plan.steps).into_iter().zip(&routes) {
        let what = match s {
            pjc_plan::Step::Control(c) => {
                let names: Vec<String> = c.blocks().iter().map(|b| format!("@{}", b.name)).collect();
                names.join(", ")
            }
            pjc_plan::Step::Kernel(k) => k.name.clone(),
            pjc_plan::Step::Library { inst, outputs, device, .. } => match r {
                pjc_host::device::Route::DeviceKernel { .. } => device.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(", "),
                _ => format!("{} -> {}", inst.op, outputs.iter().map(|b| format!("b{b}")).collect::<Vec<_>>().join(", ")),
            },
            pjc_plan::Step::Collective { inst, output, .. } => format!("{} -> b{output}", inst.op),
        };
        let _ = writeln!(out, "  on cuda: {what}: {r}");
    }
    let _ = writeln!(out, "  host steps on cuda: 0");
    Ok(out)
}

/// The collectives section of `pjc explain`.
fn explain_collectives(cs: &[pjc_partition::Inserted]) -> String {
    use std::fmt::Write;
    let mut out = String::from("\ncollectives inserted by the partitioner (bytes sent per device, ring formulas):\n");
    if cs.is_empty() {
        out.push_str("  none\n");
        return out;
    }
    let total: u64 = cs.iter().fold(0u64, |a, c| a.saturating_add(c.bytes_per_device));
    for c in cs {
        let _ = writeln!(
            out,
            "  %{:<12} {:<18} over [{}]  {:>10} B  {}",
            c.value,
            c.op.name(),
            c.axes.join(", "),
            c.bytes_per_device,
            c.reason
        );
    }
    let _ = writeln!(out, "  total: {} collective{}, {total} B per device", cs.len(), if cs.len() == 1 { "" } else { "s" });
    out
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.cmd {
        Cmd::Check { file, entry } => {
            Compilation::load(&file, &entry, None)?;
            Ok(())
        }
        Cmd::Import { file, output } => {
            let name = file.display().to_string();
            let text = std::fs::read_to_string(&file).map_err(|e| Failure::Env(format!("cannot read '{name}': {}", failure::io_reason(&e))))?;
            // MLIR outside the subset is an invalid program: one line, exit 1.
            let pir = pjc_mlir::import::import(&text).map_err(|e| Failure::Program(format!("error: {name}: {e}\n")))?;
            let m = pjc_front::load(&pir).map_err(|d| {
                Failure::Program(format!("error: {name}: the imported program is not valid PIR: {}\n", d.first().map_or("", |d| d.msg.as_str())))
            })?;
            let canonical = pjc_front::print_module(&m);
            match output {
                // Whole or not at all (a full disk leaves no half-written file).
                Some(out) => pjc_tensor::write_atomically(&out, |f| std::io::Write::write_all(f, canonical.as_bytes())).map_err(Failure::Env)?,
                None => print!("{canonical}"),
            }
            Ok(())
        }
        Cmd::Fmt { file, entry } => {
            // Exactly what `check` accepts (its entry function included), so
            // that fmt never prints a module that check rejects.
            let c = Compilation::load(&file, &entry, None)?;
            print!("{}", pjc_front::print_module(&c.module));
            Ok(())
        }
        Cmd::Compile { file, output, mesh, elastic, entry, emit, gpu_arch, device, cpu_levels, target, jobs, no_cache, opt, timings, report, acc, auto, pp } => {
            let cpu_levels = exe::parse_cpu_levels(&cpu_levels)?;
            if jobs == Some(0) {
                return Err(Failure::Env("-j/--jobs must be at least 1".into()));
            }
            if output.is_none() && (target.is_some() || timings || opt.is_some()) {
                return Err(Failure::Env("--target, -O and --timings apply to executables (-o OUT)".into()));
            }
            let opt = match opt {
                None => pjc_codegen::OptLevel::default(),
                Some(o) => pjc_codegen::OptLevel::parse(&o).ok_or_else(|| Failure::Env(format!("-O{o}: the optimization level is loops, 1, 2 or 3")))?,
            };
            if device != Device::Cpu && emit != Some(Emit::Plan) {
                return Err(Failure::Env("--device only applies to --emit plan (an executable carries both backends and picks one at run time)".into()));
            }
            // Before any work, and before LLVM sees it (it aborts on some).
            pjc_codegen::ptx::check_arch(&gpu_arch).map_err(|e| Failure::Env(e.to_string()))?;
            let stage = match emit {
                Some(Emit::Pir) => Stage::Expand,
                Some(Emit::Sharded | Emit::Mlir) => Stage::Propagate,
                Some(Emit::Spmd | Emit::MlirSpmd) => Stage::Partition,
                Some(Emit::Plan | Emit::Llvm | Emit::LlvmUnopt | Emit::Ptx) | None => Stage::Plan,
            };
            if emit.is_none() && output.is_none() && report.is_none() {
                return Err(Failure::Env("pjc compile needs -o OUT (an executable to write), --emit KIND or --report PATH.html".into()));
            }
            if report.is_some() && elastic.is_some() {
                return Err(Failure::Env("--report shows one program: write it with pjc explain --mesh A=N,... --html PATH for each process count".into()));
            }
            if elastic.is_some() && pp.get()?.is_some() {
                return Err(Failure::Env("--elastic with --pipeline is not supported yet".into()));
            }
            if elastic.is_some() && auto.auto_shard {
                return Err(Failure::Env("--auto-shard applies to one mesh: use it with pjc compile --mesh A=N,... for each process count".into()));
            }
            if let Some(spec) = &elastic {
                let Some(out) = output.filter(|_| emit.is_none()) else {
                    return Err(Failure::Env("--elastic applies to executables (-o OUT), not to --emit".into()));
                };
                let cache = if no_cache { None } else { pjc_codegen::Cache::from_env().map_err(Failure::Env)? };
                let jobs = jobs.unwrap_or_else(pjc_codegen::program::default_jobs);
                let args = exe::CodegenArgs { gpu_arch, cpu_levels, targets: target, jobs, cache, opt, timings };
                return exe::compile_elastic(&file, &entry, mesh.as_deref(), acc.get()?, spec, &out, &args);
            }
            let mut c = Compilation::load(&file, &entry, mesh.as_deref())?;
            (c.accumulate, c.pipeline) = (acc.get()?, pp.get()?);
            c.auto_shard = auto.get(&pjc_plan::cost::Machine::CPU, ratio::DeviceClass::Cpu)?;
            if let Some(o) = c.auto_shard.as_mut().filter(|_| report.is_none()) {
                o.runner_up = false; // only --report shows it
            }
            c.run_to(stage)?;
            if let Some(path) = &report {
                // The explain text the page carries; the stages it needs run once.
                let (machine, mut text) = (pjc_plan::cost::Machine::CPU, String::new());
                c.run_to(Stage::Propagate)?;
                let not_planned = explain_text(&mut c, pjc_sharding::Why::Summary, &machine, ratio::DeviceClass::Cpu, None, &mut |s| text.push_str(&s))?;
                report::write(path, &c, &report::Extras { text: &text, plan_error: not_planned.as_deref(), trace: None, machine: &machine, class: ratio::DeviceClass::Cpu })?;
            }
            let c = c;
            let plan = || c.plan.as_ref().expect("planned");
            match (emit, output) {
                (Some(Emit::Pir), _) => print!("{}", pjc_front::print_module(&c.module)),
                (Some(Emit::Sharded), _) => print!("{}", pjc_front::print_module(&c.sharded())),
                (Some(Emit::Spmd), _) => print!("{}", pjc_front::print_module(&c.partitioned.as_ref().expect("partitioned").module)),
                (Some(Emit::Mlir), _) => print!("{}", pjc_mlir::to_mlir(&c.module, Some(&c.sharded()), pjc_mlir::View::Global).map_err(Failure::Env)?),
                (Some(Emit::MlirSpmd), _) => print!("{}", pjc_mlir::to_mlir(&c.partitioned.as_ref().expect("partitioned").module, None, pjc_mlir::View::Spmd).map_err(Failure::Env)?),
                (Some(Emit::Llvm), _) => print!("{}", pjc_codegen::emit_llvm(plan()).map_err(|e| Failure::Env(e.to_string()))?),
                (Some(Emit::LlvmUnopt), _) => print!("{}", pjc_codegen::cpu::emit_llvm_unoptimized(plan()).map_err(|e| Failure::Env(e.to_string()))?),
                (Some(Emit::Ptx), _) => print!("{}", pjc_codegen::emit_ptx(plan(), &gpu_arch).map_err(|e| Failure::Env(e.to_string()))?),
                (Some(Emit::Plan), _) if device == Device::Cuda => print!("{}", cuda_plan_text(plan()).map_err(|e| Failure::Env(e.to_string()))?),
                (Some(Emit::Plan), _) => {
                    let mem = c.memory();
                    print!("{}", plan());
                    println!("  memory: peak {} bytes per device; donated (in place): {}", mem.peak,
                        if mem.donated.is_empty() { "none".to_string() } else {
                            mem.donated.iter().map(|(p, r)| format!("b{p} -> b{r}")).collect::<Vec<_>>().join(", ")
                        });
                }
                (None, Some(out)) => {
                    let cache = if no_cache { None } else { pjc_codegen::Cache::from_env().map_err(Failure::Env)? };
                    let jobs = jobs.unwrap_or_else(pjc_codegen::program::default_jobs);
                    exe::compile(&c, &out, &exe::CodegenArgs { gpu_arch, cpu_levels, targets: target, jobs, cache, opt, timings })?
                }
                (None, None) => {} // --report alone: written above
            }
            Ok(())
        }
        Cmd::Explain { file, mesh, entry, device, device_gflops, device_gbps, link_gbps, link_latency_us, why, value, html, trace, acc, auto, pp } => {
            let machine = ratio::machine(device, device_gflops, device_gbps, link_gbps, link_latency_us)?;
            if value.is_some() && (html.is_some() || trace.is_some()) {
                return Err(Failure::Env("--value prints one value's sharding; --html and --trace apply to the whole report".into()));
            }
            let trace = trace.map(|t| measured::Trace::read(&t)).transpose()?;
            // One compilation: the propagation explained is the one partitioned.
            let mut c = Compilation::load(&file, &entry, mesh.as_deref())?;
            (c.accumulate, c.pipeline) = (acc.get()?, pp.get()?);
            c.auto_shard = auto.get(&machine, device)?;
            c.run_to(Stage::Propagate)?;
            if let Some(v) = value {
                let text = pjc_sharding::explain_value(&c.module, c.propagation.as_ref().expect("propagated"), c.entry, &v)
                    .ok_or_else(|| Failure::Env(format!("--value {v}: @{entry} has no value or result named {}", v.trim_start_matches('%'))))?;
                print!("{text}");
                return Ok(());
            }
            let mut text = String::new();
            let not_planned = explain_text(&mut c, why.get(), &machine, device, trace.as_ref(), &mut |s| {
                print!("{s}");
                text.push_str(&s);
            })?;
            if let Some(path) = html {
                report::write(&path, &c, &report::Extras { text: &text, plan_error: not_planned.as_deref(), trace: trace.as_ref(), machine: &machine, class: device })?;
            }
            Ok(())
        }
        Cmd::Devices => {
            print!("{}{}", pjc_runtime::devices::describe_machine(), exe::gpu_code_status());
            Ok(())
        }
        Cmd::Eval { file, input, inputs, output, entry, acc } => eval::run(&file, &entry, &input, &inputs, &output, acc.get()?),
    }
}

fn main() -> ExitCode {
    // A closed stdout (`pjc compile --emit ptx | head`) ends pjc quietly, as
    // for any Unix filter, instead of a panic on the failed write.
    // SAFETY: setting a signal disposition before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Program(text)) => {
            eprint!("{text}");
            ExitCode::from(1)
        }
        Err(Failure::Env(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}
