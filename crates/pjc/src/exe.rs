//! `pjc compile FILE.pir -o OUT`: a standalone executable.
//!
//! OUT is a copy of `pjc-runner` (the runtime, built with pjc; no LLVM, front
//! end or planner in it) followed by the compiled artefact
//! ([`pjc_plan::Artifact`] in a pjc_runtime::payload section): the kernel
//! plan and buffer plan of the per-device program, the device groups of its
//! collectives, the entry's parameter and result metadata, the host kernels
//! as an x86-64 shared object (LLVM object code linked by the system C
//! compiler driver, `cc` or `$CC`), and the GPU kernels as PTX with their
//! launch information. The runner decodes it and runs it; it re-derives
//! nothing. See docs/executable.md.

use crate::pipeline::Compilation;
use crate::failure::{io_reason, Failure};
use pjc_plan::{Artifact, CpuLevel, GroupTable, HostKernels, Port};
use pjc_runtime::payload::{section, Payload};
use std::path::{Path, PathBuf};
use std::process::Command;

fn internal(m: String) -> Failure {
    Failure::Env(format!("internal error: {m}"))
}

/// Where the runner is: `$PJC_RUNNER`, else next to this `pjc`. Under
/// `cargo run` (which sets `$CARGO`) a missing runner is built first.
fn find_runner() -> Result<PathBuf, Failure> {
    if let Some(p) = std::env::var_os("PJC_RUNNER") {
        let p = PathBuf::from(p);
        return if p.is_file() { Ok(p) } else { Err(Failure::Env(format!("PJC_RUNNER is '{}', which is not a file", p.display()))) };
    }
    let me = std::env::current_exe().map_err(|e| Failure::Env(format!("cannot find this pjc executable: {e}")))?;
    let dir = me.parent().map(Path::to_path_buf).unwrap_or_default();
    let runner = dir.join("pjc-runner");
    if runner.is_file() {
        return Ok(runner);
    }
    if let Some(cargo) = std::env::var_os("CARGO") {
        // `cargo run -p pjc` builds only the pjc binary; build its runner too,
        // in the same profile (the directory name: debug or release).
        let mut c = Command::new(cargo);
        c.args(["build", "--quiet", "-p", "pjc", "--bin", "pjc-runner"]).current_dir(env!("CARGO_MANIFEST_DIR"));
        if dir.file_name().is_some_and(|n| n == "release") {
            c.arg("--release");
        }
        eprintln!("pjc: building pjc-runner (the executables' runtime) with cargo");
        let ok = c.status().map(|s| s.success()).unwrap_or(false);
        if ok && runner.is_file() {
            return Ok(runner);
        }
    }
    Err(Failure::Env(format!(
        "cannot find pjc-runner (the runtime copied into every executable) next to '{}'; `cargo install --path crates/pjc` and `cargo build -p pjc` put it there, or set PJC_RUNNER",
        me.display()
    )))
}

/// Links the objects of one CPU level's host kernels, with the linker script
/// that names every plan kernel, into a shared object with the system's C
/// compiler driver.
fn link_shared(build: &pjc_codegen::program::HostBuild, libmvec: bool) -> Result<Vec<u8>, Failure> {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("pjc-link-{}-{seq}-{}", std::process::id(), build.level.name()));
    std::fs::create_dir_all(&dir).map_err(|e| Failure::Env(format!("cannot create '{}': {}", dir.display(), io_reason(&e))))?;
    let result = (|| {
        let write = |path: &Path, bytes: &[u8]| std::fs::write(path, bytes).map_err(|e| Failure::Env(format!("cannot write '{}': {}", path.display(), io_reason(&e))));
        let mut objects = vec![];
        for (i, o) in build.objects.iter().enumerate() {
            let path = dir.join(format!("k{i}.o"));
            write(&path, o)?;
            objects.push(path);
        }
        let (script, so) = (dir.join("kernels.ld"), dir.join("kernels.so"));
        write(&script, build.aliases.as_bytes())?;
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let mut c = Command::new(&cc);
        c.arg("-shared").arg("-o").arg(&so).args(&objects).arg(&script).arg("-Wl,--as-needed");
        if libmvec {
            c.arg("-lmvec");
        }
        c.arg("-lm");
        let out = c.output().map_err(|e| {
            Failure::Env(format!(
                "pjc compile -o needs a C compiler driver to link the kernels, and '{cc}' cannot be run ({}); install gcc or clang, or set CC",
                io_reason(&e)
            ))
        })?;
        if !out.status.success() {
            return Err(Failure::Env(format!("linking the kernels with '{cc}' failed: {}", String::from_utf8_lossy(&out.stderr).trim())));
        }
        std::fs::read(&so).map_err(|e| Failure::Env(format!("cannot read '{}': {}", so.display(), io_reason(&e))))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// The entry's parameters and results as the outside world sees them.
fn ports(f: &pjc_ir::Function, mesh: &pjc_ir::Mesh) -> (Vec<Port>, Vec<Port>) {
    let port = |name: String, local: &pjc_ir::TensorType, sharding: Option<&pjc_ir::Sharding>| Port {
        name,
        local: local.clone(),
        global: match f.kind {
            pjc_ir::FuncKind::Spmd => pjc_ir::infer::global_type(local, sharding, mesh),
            pjc_ir::FuncKind::Global => local.clone(),
        },
        sharding: sharding.cloned(),
    };
    let params = (0..f.params.len())
        .map(|i| {
            let v = &f.values[f.params[i]];
            port(f.param_name(i).to_string(), &v.ty, v.sharding.as_ref())
        })
        .collect();
    let results = f.results.iter().enumerate().map(|(k, r)| port(f.result_name(k), &r.ty, r.sharding.as_ref())).collect();
    (params, results)
}

/// `--cpu-levels`: `all`, or a comma list of `v2`, `v3`, `v4` (or
/// `x86-64-vN`) and `native` (the best level of the compiling machine;
/// nothing below v2), most capable first, without repeats.
pub fn parse_cpu_levels(s: &str) -> Result<Vec<CpuLevel>, Failure> {
    let mut out = vec![];
    for part in s.split(',').map(str::trim) {
        let levels = match part {
            "all" => CpuLevel::ALL.to_vec(),
            "native" => pjc_host::cpulevel::best().into_iter().collect(),
            p => vec![CpuLevel::parse(p).ok_or_else(|| {
                Failure::Env(format!("--cpu-levels: '{p}' is not a CPU level (all, native, v2, v3, v4 or x86-64-v2, ...)"))
            })?],
        };
        out.extend(levels);
    }
    out.sort_by(|a, b| b.cmp(a));
    out.dedup();
    if out.is_empty() {
        return Err(Failure::Env(format!("--cpu-levels {s} names no CPU level this machine can name (its CPU is below x86-64-v2): list one, e.g. v2")));
    }
    Ok(out)
}

/// Which code an executable carries (`pjc compile --target`).
#[derive(Copy, Clone, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Targets {
    /// x86-64 host kernels only: the executable runs on CPUs.
    Cpu,
    /// PTX only: the executable runs only where it finds a GPU.
    Cuda,
    /// Both; the executable picks at run time.
    All,
}

/// How `pjc compile -o` generates code.
pub struct CodegenArgs {
    pub gpu_arch: String,
    pub cpu_levels: Vec<CpuLevel>,
    /// None: all when libdevice is found, else cpu.
    pub targets: Option<Targets>,
    pub jobs: usize,
    pub cache: Option<pjc_codegen::Cache>,
    pub opt: pjc_codegen::OptLevel,
    pub timings: bool,
}

/// Stages codegen and package: compiles the planned compilation `c` into
/// executable `out`.
pub fn compile(c: &Compilation, out: &Path, a: &CodegenArgs) -> Result<(), Failure> {
    let (bytes, report) = build_artifact(c, a, true)?;
    let mut p = Payload::default();
    p.add(section::ARTIFACT, bytes);
    let t = std::time::Instant::now();
    package(out, &p)?;
    if let Some((mut stages, stats)) = report {
        let (last, d) = stages.pop().expect("packaging");
        stages.push((last, d + t.elapsed()));
        eprint!("{}", stages_report(&(stages, stats), a));
    }
    Ok(())
}

/// `--elastic AXIS=N1,N2,...`: the axis and its sizes (positive, distinct).
pub fn parse_elastic(spec: &str) -> Result<(String, Vec<u64>), Failure> {
    let bad = || Failure::Env(format!("--elastic '{spec}': expected AXIS=N1,N2,... with positive sizes, e.g. data=1,2,4"));
    let (axis, list) = spec.split_once('=').ok_or_else(bad)?;
    let axis = axis.trim();
    if axis.is_empty() {
        return Err(bad());
    }
    let mut sizes = vec![];
    for n in list.split(',') {
        let n: u64 = n.trim().parse().ok().filter(|&n| n > 0).ok_or_else(bad)?;
        if sizes.contains(&n) {
            return Err(Failure::Env(format!("--elastic '{spec}' lists size {n} twice")));
        }
        sizes.push(n);
    }
    Ok((axis.to_string(), sizes))
}

/// `pjc compile FILE -o OUT --elastic AXIS=N1,...`: one full compilation per
/// size of `axis` (the other axes as the module, or `--mesh`, gives them),
/// all carried by one executable that picks the program for its process
/// count. Identical kernels are compiled once, through the compile cache.
pub fn compile_elastic(
    file: &Path,
    entry: &str,
    mesh: Option<&str>,
    acc: Option<pjc_transforms::Accumulate>,
    spec: &str,
    out: &Path,
    a: &CodegenArgs,
) -> Result<(), Failure> {
    let (axis, sizes) = parse_elastic(spec)?;
    let base = Compilation::load(file, entry, mesh)?.module.mesh_or_single();
    if base.axis(&axis).is_none() {
        let have: Vec<&str> = base.axes.iter().map(|x| x.name.as_str()).collect();
        return Err(Failure::Env(if have.is_empty() {
            format!("--elastic {spec}: the module has no mesh, so there is no axis '{axis}' to vary")
        } else {
            format!("--elastic {spec}: the module's mesh has no axis '{axis}' (its axes: {})", have.join(", "))
        }));
    }
    let runner = read_runner()?;
    let mut p = Payload::default();
    let mut programs = vec![];
    for (i, &n) in sizes.iter().enumerate() {
        let mesh_spec = base.axes.iter().map(|x| format!("{}={}", x.name, if x.name == axis { n } else { x.size })).collect::<Vec<_>>().join(",");
        let c = Compilation::run_with(file, entry, Some(&mesh_spec), acc.clone(), crate::pipeline::Stage::Plan).map_err(|e| match e {
            Failure::Env(m) => Failure::Env(format!("--elastic {axis}={n}: {m}")),
            Failure::Program(t) => Failure::Program(format!("note: compiling for --elastic {axis}={n} (--mesh {mesh_spec})\n{t}")),
        })?;
        let mesh = c.module.mesh_or_single();
        let (bytes, report) = build_artifact(&c, a, i == 0).map_err(|e| match e {
            Failure::Env(m) => Failure::Env(format!("--elastic {axis}={n}: {m}")),
            other => other,
        })?;
        if let Some(stages) = report {
            eprint!("{mesh}: {}", stages_report(&stages, a));
        }
        let processes = mesh.device_count();
        p.add(&section::artifact_for(processes), bytes);
        programs.push(pjc_runtime::payload::ElasticProgram { size: n, processes, mesh: mesh.to_string() });
    }
    let e = pjc_runtime::payload::Elastic { axis, programs };
    p.add(section::ELASTIC, e.to_json());
    write_executable(out, &p.append_to(&runner))
}

/// The runner's bytes (checked not to be a compiled program itself).
fn read_runner() -> Result<Vec<u8>, Failure> {
    let runner_path = find_runner()?;
    let runner = std::fs::read(&runner_path).map_err(|e| Failure::Env(format!("cannot read '{}': {}", runner_path.display(), io_reason(&e))))?;
    if pjc_runtime::payload::Payload::read_from(&runner_path).ok().flatten().is_some() {
        return Err(Failure::Env(format!("'{}' is a compiled program, not pjc's runner", runner_path.display())));
    }
    Ok(runner)
}

/// Writes `p` after the runner into executable `out`.
fn package(out: &Path, p: &Payload) -> Result<(), Failure> {
    write_executable(out, &p.append_to(&read_runner()?))
}

/// What `--timings` prints for one build.
type Report = (Vec<(&'static str, std::time::Duration)>, Vec<pjc_codegen::TargetStats>);

fn stages_report(r: &Report, a: &CodegenArgs) -> String {
    timings_report(&r.0, &r.1, a)
}

/// Codegen, linking and the artefact of the planned compilation `c`, in
/// bytes; with `--timings`, its report. `warn`: print the warning about
/// missing GPU code (once per executable).
fn build_artifact(c: &Compilation, a: &CodegenArgs, warn: bool) -> Result<(Vec<u8>, Option<Report>), Failure> {
    use pjc_codegen::program::{par_map, Target};
    use std::time::Instant;
    let entry = c.module.funcs[c.entry].name.clone();
    let f = c.per_device_func();
    let mesh = c.per_device.as_ref().expect("per-device stage ran").mesh_or_single();
    let plan = c.plan.clone().expect("planned");
    let no_libdevice = no_libdevice_reason();
    let (host, gpu, gpu_required) = match a.targets {
        Some(Targets::Cpu) => (true, false, false),
        Some(Targets::Cuda) => (false, true, true),
        Some(Targets::All) => (true, true, true),
        None => (true, no_libdevice.is_none(), false),
    };
    let mut targets: Vec<Target> = if host { a.cpu_levels.iter().map(|&l| Target::Host(l)).collect() } else { vec![] };
    if gpu {
        targets.push(Target::Ptx(a.gpu_arch.clone()));
    }
    // Every distinct kernel body once per target, on all cores, through the cache.
    let t0 = Instant::now();
    let built = pjc_codegen::build(&plan, &targets, &pjc_codegen::Options { jobs: a.jobs, cache: a.cache.as_ref(), opt: a.opt }).map_err(|e| Failure::Env(e.to_string()))?;
    let t_codegen = t0.elapsed();
    if let Some(cache) = &a.cache {
        if let Some(e) = cache.take_error() {
            eprintln!("warning: the compile cache in '{}' is not used for new kernels: {e}", cache.dir().display());
        }
        cache.trim();
    }
    let t1 = Instant::now();
    let libmvec = pjc_codegen::cpu::uses_libmvec();
    let host_kernels = par_map(built.host.len(), a.jobs, |i| {
        link_shared(&built.host[i], libmvec).map(|so| HostKernels { level: built.host[i].level, so })
    })
    .into_iter()
    .collect::<Result<Vec<_>, Failure>>()?;
    let t_link = t1.elapsed();
    let ptx = match built.ptx {
        Some(Ok(ptx)) => Ok(ptx),
        Some(Err(pjc_codegen::CodegenError::Input(m))) => return Err(Failure::Env(m)),
        Some(Err(e)) if gpu_required => return Err(Failure::Env(format!("no GPU code for --target {}: {e}", if host { "all" } else { "cuda" }))),
        Some(Err(e)) => {
            if warn {
                eprintln!("warning: the executable gets no GPU code and runs on CPUs only: {e}");
            }
            // `--list-devices` prints it: say that it is about the compiling machine.
            Err(format!("when it was compiled: {e}"))
        }
        None if a.targets == Some(Targets::Cpu) => Err("it was compiled with pjc compile --target cpu".to_string()),
        None => Err(format!(
            "when it was compiled: {}; GPU kernels calling math functions need libdevice, so pjc compile builds GPU code by default only where it is found (scripts/ptxas.sh installs it; --target all asks for GPU code anyway)",
            no_libdevice.unwrap_or_default()
        )),
    };
    let t2 = Instant::now();
    let (params, results) = ports(f, &mesh);
    let carried_pairs = crate::pipeline::carried(f);
    let artifact = Artifact {
        entry,
        memory: c.memory(),
        groups: GroupTable::for_plan(&plan, &mesh).map_err(internal)?,
        carried: carried_pairs.iter().map(|&(i, k)| (k, i)).collect(),
        mesh,
        params,
        results,
        plan,
        host_kernels,
        ptx,
    };
    let bytes = artifact.to_bytes().map_err(|e| internal(e.to_string()))?;
    let report = a.timings.then(|| {
        let mut t = c.timings.clone();
        t.push(("code generation", t_codegen));
        t.push(("linking host kernels", t_link));
        t.push(("packaging", t2.elapsed()));
        (t, built.stats.clone())
    });
    Ok((bytes, report))
}

/// `pjc compile --timings`: each stage's wall time, then per code generation
/// target the kernels (total, distinct, compiled, cached) and the thread time.
fn timings_report(stages: &[(&str, std::time::Duration)], stats: &[pjc_codegen::TargetStats], a: &CodegenArgs) -> String {
    let mut s = String::from("pjc compile timings (wall clock, ms):\n");
    let total: f64 = stages.iter().map(|(_, d)| d.as_secs_f64()).sum();
    for (name, d) in stages {
        s.push_str(&format!("  {:<34} {:>9.1}\n", name, d.as_secs_f64() * 1e3));
    }
    s.push_str(&format!("  {:<34} {:>9.1}\n", "total", total * 1e3));
    let cache = match &a.cache {
        Some(c) => format!("cache {}", c.dir().display()),
        None => "no cache".into(),
    };
    s.push_str(&format!("code generation: {} thread(s), LLVM {}, {cache}\n", a.jobs, a.opt.describe()));
    for t in stats {
        s.push_str(&format!(
            "  {:<10} kernels: {} total, {} distinct; {} compiled, {} cached; {:.1} ms of thread time\n",
            t.target,
            t.kernels,
            t.distinct,
            t.compiled,
            t.cached,
            t.busy.as_secs_f64() * 1e3
        ));
    }
    s
}

/// Writes `bytes` to `out` atomically (an existing OUT is replaced whole or
/// not at all; see `pjc_tensor::write_atomically`) and makes it executable.
fn write_executable(out: &Path, bytes: &[u8]) -> Result<(), Failure> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    pjc_tensor::write_atomically(out, |f| {
        f.write_all(bytes)?;
        f.set_permissions(std::fs::Permissions::from_mode(0o755))
    })
    .map_err(Failure::Env)
}

/// Why libdevice cannot be used here (None: it is there).
fn no_libdevice_reason() -> Option<String> {
    match pjc_codegen::ptx::find_libdevice() {
        Some(p) if p.is_file() => None,
        Some(p) => Some(format!("PJC_LIBDEVICE is '{}', which is not a file", p.display())),
        None => Some(format!(
            "libdevice.10.bc not found (PJC_LIBDEVICE is not set; looked at {})",
            pjc_codegen::ptx::libdevice_places().join(", ")
        )),
    }
}

/// `pjc devices`' line on GPU code: whether executables compiled on this
/// machine get PTX, and when they would not, why and where pjc looked for
/// libdevice (kernels calling math functions need it).
pub fn gpu_code_status() -> String {
    match (no_libdevice_reason(), pjc_codegen::ptx::find_libdevice()) {
        (None, Some(p)) => format!("gpu code: executables compiled here carry PTX (libdevice: {})\n", p.display()),
        (reason, _) => format!(
            "gpu code: executables compiled here run on CPUs only unless compiled with --target all or cuda (and then get no GPU code if their kernels call math functions: exp, tanh, ...): {}; scripts/ptxas.sh installs libdevice\n",
            reason.unwrap_or_default()
        ),
    }
}
