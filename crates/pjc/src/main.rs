//! `pjc`: the command-line driver. Parses flags (clap), runs the stages, and is
//! the one place where errors are rendered and turned into exit codes (spec
//! section 10): 0 success, 1 the PIR program is invalid, 2 anything about the
//! environment or the inputs.

mod eval;
mod exe;

use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
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
        /// Entry function (default: main).
        #[arg(long, default_value = "main")]
        entry: String,
        /// Print an intermediate form instead of writing an executable.
        #[arg(long, value_enum, value_name = "KIND")]
        emit: Option<Emit>,
        /// GPU architecture of the PTX (--emit ptx and executables).
        #[arg(long, default_value = "sm_90", value_name = "ARCH")]
        gpu_arch: String,
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
    },
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
}

/// Why a command failed; rendered once, in `main`.
pub enum Failure {
    /// The PIR program is invalid: rendered diagnostics (exit 1).
    Program(String),
    /// The environment or the inputs are wrong: one line (exit 2).
    Env(String),
}

fn read_source(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|e| {
        Failure::Env(format!("cannot read '{}': {}", path.display(), io_reason(&e)))
    })
}

/// An io::Error's message without Rust's " (os error N)" suffix.
pub fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Reads, parses and verifies a PIR file (after applying a `--mesh` override),
/// and checks that `entry` exists.
pub fn load(path: &Path, entry: Option<&str>) -> Result<(pjc_ir::Module, pjc_ir::FuncId), Failure> {
    load_with_mesh(path, entry, None)
}

pub fn load_with_mesh(
    path: &Path,
    entry: Option<&str>,
    mesh: Option<&str>,
) -> Result<(pjc_ir::Module, pjc_ir::FuncId), Failure> {
    let src = read_source(path)?;
    let name = path.display().to_string();
    let program = |d: Vec<pjc_front::Diag>| Failure::Program(pjc_front::render(&name, &src, &d));
    let mut m = pjc_front::parse(&src).map_err(program)?;
    if let Some(spec) = mesh {
        pjc_front::override_mesh(&mut m, spec).map_err(Failure::Env)?;
    }
    pjc_front::verify(&mut m).map_err(program)?;
    let entry = entry.unwrap_or("main");
    let id = pjc_front::check_entry(&m, entry).map_err(|d| program(vec![d]))?;
    Ok((m, id))
}


/// Loads and expands `grad`/`vmap` (what every compile stage starts from).
fn load_expanded(path: &Path, entry: &str, mesh: Option<&str>) -> Result<(pjc_ir::Module, pjc_ir::FuncId), Failure> {
    let (mut m, id) = load_with_mesh(path, Some(entry), mesh)?;
    expand_in_place(&mut m, path)?;
    Ok((m, id))
}

/// Expands `grad`/`vmap`; an op without a gradient rule is a program error at
/// the transform (exit 1).
pub fn expand_in_place(m: &mut pjc_ir::Module, path: &Path) -> Result<(), Failure> {
    let name = path.display().to_string();
    pjc_transforms::expand(m).map_err(|e| {
        let src = std::fs::read_to_string(path).unwrap_or_default();
        Failure::Program(pjc_front::render(&name, &src, &[pjc_front::Diag::new(e.span, e.msg)]))
    })?;
    // The transforms promise verified output; check it, so a bug shows as an error.
    pjc_front::verify(m).map_err(|d| {
        let text = pjc_front::print_module(m);
        Failure::Env(format!(
            "internal error: the expanded program does not verify:\n{}",
            pjc_front::render("<expanded>", &text, &d)
        ))
    })?;
    Ok(())
}

/// Propagation, then the SPMD partitioner, on an expanded module.
pub(crate) fn partition(m: &pjc_ir::Module, id: pjc_ir::FuncId) -> Result<pjc_partition::Partitioned, Failure> {
    let p = pjc_sharding::propagate(m, id);
    let annotated = pjc_sharding::annotate(m, &p);
    let part = pjc_partition::partition(&annotated, id)
        .map_err(|e| Failure::Env(format!("unsupported: the SPMD partitioner cannot handle this program: {}", e.0)))?;
    // The partitioner promises a verified per-device program; check it.
    let mut check = part.module.clone();
    pjc_front::verify(&mut check).map_err(|d| {
        let text = pjc_front::print_module(&part.module);
        Failure::Env(format!(
            "internal error: the per-device program does not verify:\n{}",
            pjc_front::render("<spmd>", &text, &d)
        ))
    })?;
    Ok(part)
}

/// The per-device program of the entry as one function: the partitioned
/// entry with the `spmd func`s it calls inlined and its all-reduces combined
/// (what gets planned and what an executable carries), alone in a module with
/// the mesh.
pub(crate) fn per_device(part: &pjc_partition::Partitioned, entry: &str) -> Result<pjc_ir::Module, Failure> {
    let id = part.module.func_by_name(entry).ok_or_else(|| Failure::Env(format!("internal error: the per-device program has no @{entry}")))?;
    let mut f = pjc_transforms::inline_calls(&part.module, id).map_err(|e| Failure::Env(e.msg))?;
    // One message for the all-reduces that can share one (bitwise the same values).
    pjc_partition::combine_all_reduces(&mut f, &part.module.mesh_or_single());
    let mut single = part.module.clone();
    single.funcs = Default::default();
    single.funcs.push(f);
    single.end_comments.clear();
    // The rewrites promise a valid program (replication proofs included); check.
    let mut check = single.clone();
    pjc_front::verify(&mut check).map_err(|d| {
        let text = pjc_front::print_module(&single);
        Failure::Env(format!("internal error: the per-device program does not verify after inlining and combining:\n{}", pjc_front::render("<spmd>", &text, &d)))
    })?;
    Ok(single)
}

/// The kernel plan of the entry's per-device program, and that program.
fn kernel_plan_of(m: &pjc_ir::Module, id: pjc_ir::FuncId) -> Result<(pjc_fusion::Plan, pjc_ir::Function), Failure> {
    let part = partition(m, id)?;
    let single = per_device(&part, &m.funcs[id].name)?;
    let f = single.funcs.values().next().expect("one function").clone();
    // PlanError messages say "unsupported: ..." themselves.
    let plan = pjc_fusion::plan(&f).map_err(|e| Failure::Env(e.0))?;
    Ok((plan, f))
}

/// The kernel plan of the entry's per-device program.
fn kernel_plan(m: &pjc_ir::Module, id: pjc_ir::FuncId) -> Result<pjc_fusion::Plan, Failure> {
    kernel_plan_of(m, id).map(|(p, _)| p)
}

/// (parameter, result) index pairs of state-carry results.
fn carried(f: &pjc_ir::Function) -> Vec<(usize, usize)> {
    (0..f.results.len())
        .filter_map(|k| (0..f.params.len()).find(|&i| f.param_name(i) == f.result_name(k)).map(|i| (i, k)))
        .collect()
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
            load(&file, Some(&entry))?;
            Ok(())
        }
        Cmd::Fmt { file, entry } => {
            // Exactly what `check` accepts (its entry function included), so
            // that fmt never prints a module that check rejects.
            let (m, _) = load(&file, Some(&entry))?;
            print!("{}", pjc_front::print_module(&m));
            Ok(())
        }
        Cmd::Compile { file, output, mesh, entry, emit, gpu_arch } => {
            // Before any work, and before LLVM sees it (it aborts on some).
            pjc_codegen::ptx::check_arch(&gpu_arch).map_err(|e| Failure::Env(e.to_string()))?;
            let (m, id) = load_expanded(&file, &entry, mesh.as_deref())?;
            match (emit, output) {
                (Some(Emit::Pir), _) => print!("{}", pjc_front::print_module(&m)),
                (Some(Emit::Sharded), _) => {
                    let p = pjc_sharding::propagate(&m, id);
                    print!("{}", pjc_front::print_module(&pjc_sharding::annotate(&m, &p)));
                }
                (Some(Emit::Spmd), _) => {
                    let part = partition(&m, id)?;
                    print!("{}", pjc_front::print_module(&part.module));
                }
                (Some(Emit::Llvm), _) => {
                    let plan = kernel_plan(&m, id)?;
                    print!("{}", pjc_codegen::emit_llvm(&plan).map_err(|e| Failure::Env(e.to_string()))?);
                }
                (Some(Emit::LlvmUnopt), _) => {
                    let plan = kernel_plan(&m, id)?;
                    print!("{}", pjc_codegen::cpu::emit_llvm_unoptimized(&plan).map_err(|e| Failure::Env(e.to_string()))?);
                }
                (Some(Emit::Ptx), _) => {
                    let plan = kernel_plan(&m, id)?;
                    print!("{}", pjc_codegen::emit_ptx(&plan, &gpu_arch).map_err(|e| Failure::Env(e.to_string()))?);
                }
                (Some(Emit::Plan), _) => {
                    let (plan, f) = kernel_plan_of(&m, id)?;
                    let mem = pjc_fusion::plan_memory(&plan, &carried(&f));
                    print!("{plan}");
                    println!("  memory: peak {} bytes per device; donated (in place): {}", mem.peak,
                        if mem.donated.is_empty() { "none".to_string() } else {
                            mem.donated.iter().map(|(p, r)| format!("b{p} -> b{r}")).collect::<Vec<_>>().join(", ")
                        });
                }
                (None, Some(out)) => exe::compile(&m, id, &out, &gpu_arch)?,
                (None, None) => {
                    return Err(Failure::Env("pjc compile needs -o OUT (an executable to write) or --emit KIND".into()))
                }
            }
            Ok(())
        }
        Cmd::Explain { file, mesh, entry } => {
            let (m, id) = load_expanded(&file, &entry, mesh.as_deref())?;
            let p = pjc_sharding::propagate(&m, id);
            print!("{}", pjc_sharding::explain(&m, &p));
            let part = partition(&m, id)?;
            print!("{}", explain_collectives(&part.collectives));
            let single = per_device(&part, &m.funcs[id].name)?;
            let f = single.funcs.values().next().expect("one function");
            match pjc_fusion::plan(f) {
                Ok(plan) => {
                    let mem = pjc_fusion::plan_memory(&plan, &carried(f));
                    let count = |k: fn(&pjc_fusion::Step) -> bool| plan.steps.iter().filter(|s| k(s)).count();
                    println!(
                        "\nkernel plan: {} fused kernels, {} library calls, {} collectives (pjc compile --emit plan shows it)",
                        count(|s| matches!(s, pjc_fusion::Step::Kernel(_))),
                        count(|s| matches!(s, pjc_fusion::Step::Library { .. })),
                        count(|s| matches!(s, pjc_fusion::Step::Collective { .. })),
                    );
                    println!("peak memory per device: {} bytes (parameters, results and live temporaries)", mem.peak);
                }
                Err(e) => println!("\nkernel plan: not available: {}", e.0),
            }
            Ok(())
        }
        Cmd::Devices => {
            print!("{}{}", pjc_runtime::devices::describe_machine(), exe::gpu_code_status());
            Ok(())
        }
        Cmd::Eval { file, input, inputs, output, entry } => eval::run(&file, &entry, &input, &inputs, &output),
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
