//! The CPU backend: host buffers, the kernels of the executable's shared
//! object, GEMM and the reference library kernels for library steps, MPI
//! collectives (`pjc_host::run_steps` drives the steps).

use crate::backend::Backend;
use crate::collectives::MpiCollectives;
use crate::world::World;
use crate::RuntimeError;
use pjc_host::cpulevel;
use pjc_plan::{CpuLevel, HostKernels, Plan, Step};
use pjc_host::{Buffers, KernelFn};
use pjc_tensor::Tensor;

/// The host kernels, loaded from the shared object a compiled executable
/// carries (written to an anonymous in-memory file and opened with dlopen;
/// nothing is left on disk).
pub struct KernelLibrary {
    lib: libloading::Library,
}

impl KernelLibrary {
    pub fn load(so: &[u8]) -> Result<KernelLibrary, RuntimeError> {
        let env = |m: String| RuntimeError::Env(format!("cannot load the executable's CPU kernels: {m}"));
        let name = std::ffi::CString::new("pjc-kernels.so").unwrap();
        // SAFETY: a valid name; the descriptor is owned below.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        let (path, _file, _tmp) = if fd >= 0 {
            use std::os::fd::FromRawFd;
            // SAFETY: memfd_create returned a fresh descriptor that nothing else owns.
            let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
            std::io::Write::write_all(&mut f, so).map_err(|e| env(e.to_string()))?;
            (std::path::PathBuf::from(format!("/proc/self/fd/{fd}")), Some(f), None)
        } else {
            // No memfd (old kernel, seccomp): a private temporary file.
            let p = std::env::temp_dir().join(format!("pjc-kernels-{}-{}.so", std::process::id(), std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())));
            std::fs::write(&p, so).map_err(|e| env(format!("cannot write '{}': {e}", p.display())))?;
            (p.clone(), None, Some(TempFile(p)))
        };
        // SAFETY: the object was produced by pjc for this runtime's kernel ABI;
        // its initializers are LLVM's (none with side effects).
        let lib = unsafe { libloading::Library::new(&path) }.map_err(|e| env(e.to_string()))?;
        Ok(KernelLibrary { lib })
    }

    /// The entry points of `plan`'s kernels, per step in pre-order (the
    /// blocks of control steps included: `pjc_host::run_steps`'s numbering).
    pub fn kernels(&self, plan: &Plan) -> Result<Vec<Option<KernelFn>>, RuntimeError> {
        pjc_plan::control::preorder(&plan.steps)
            .into_iter()
            .map(|s| match s {
                Step::Kernel(k) => {
                    // SAFETY: generated with exactly the KernelFn signature.
                    let f: libloading::Symbol<KernelFn> = unsafe { self.lib.get(k.name.as_bytes()) }
                        .map_err(|e| RuntimeError::Internal(format!("the executable's kernel library has no kernel {}: {e}", k.name)))?;
                    Ok(Some(*f))
                }
                _ => Ok(None),
            })
            .collect()
    }
}

/// Removes a temporary file once the library is open (dlopen keeps it mapped).
struct TempFile(std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The host-kernel build this process loads: the most capable CPU level the
/// machine runs, or at most the one `PJC_CPU_LEVEL` names (`x86-64-v2`,
/// `x86-64-v3`, `x86-64-v4`: to compare builds, or to rule one out).
pub fn choose_kernels(builds: &[HostKernels]) -> Result<&HostKernels, RuntimeError> {
    let cap = match std::env::var("PJC_CPU_LEVEL") {
        Ok(v) => {
            let l = CpuLevel::parse(v.trim())
                .ok_or_else(|| RuntimeError::Env(format!("PJC_CPU_LEVEL={v} is not a CPU level (x86-64-v2, x86-64-v3 or x86-64-v4)")))?;
            let miss = cpulevel::missing(l);
            if !miss.is_empty() {
                return Err(RuntimeError::Env(format!("PJC_CPU_LEVEL={v}: this CPU cannot run {} code (it lacks {})", l.name(), miss.join(", "))));
            }
            Some(l)
        }
        Err(_) => None,
    };
    if builds.is_empty() {
        return Err(RuntimeError::Env(
            "this executable carries no CPU kernels (it was compiled with pjc compile --target cuda), so it runs only where it finds a GPU; recompile with --target all to run it here".into(),
        ));
    }
    if let Some(k) = builds.iter().find(|k| cap.is_none_or(|c| k.level <= c) && cpulevel::missing(k.level).is_empty()) {
        return Ok(k);
    }
    let names: Vec<&str> = builds.iter().map(|k| k.level.name()).collect();
    let lowest = builds.iter().map(|k| k.level).min().unwrap_or(CpuLevel::V2);
    Err(RuntimeError::Env(format!(
        "this CPU runs none of the executable's kernel builds ({}): it lacks {}",
        names.join(", "),
        cpulevel::missing(lowest).join(", ")
    )))
}

/// One device's plan on the host.
pub struct CpuBackend<'w> {
    plan: Plan,
    kernels: Vec<Option<KernelFn>>,
    bufs: Buffers,
    coll: MpiCollectives<'w>,
    threads: usize,
    trace: Option<Vec<pjc_host::StepEvent>>,
    // Keeps the kernels' code mapped; dropped after everything that calls it.
    _lib: KernelLibrary,
}

impl<'w> CpuBackend<'w> {
    /// Builds the collectives' communicators (collective: every rank calls it).
    pub fn new(plan: &Plan, memory: &pjc_plan::Memory, builds: &[HostKernels], world: &'w World, mesh: &pjc_ir::Mesh, groups: &[pjc_plan::GroupTable]) -> Result<CpuBackend<'w>, RuntimeError> {
        let build = choose_kernels(builds)?;
        if let Some(best) = cpulevel::best().filter(|&b| b > build.level && std::env::var_os("PJC_CPU_LEVEL").is_none()) {
            if world.rank() == 0 {
                eprintln!(
                    "pjc: note: this CPU runs {} code but the executable's best kernels for it are {} (compile it with --cpu-levels all, or on a machine like this one)",
                    best.name(),
                    build.level.name()
                );
            }
        }
        let lib = KernelLibrary::load(&build.so)?;
        let kernels = lib.kernels(plan)?;
        let coll = MpiCollectives::new(world, mesh, groups)?;
        // The buffer plan the compiler made: one arena, buffers never live at
        // once sharing memory.
        let mut bufs = Buffers::alloc_planned(plan, memory).map_err(host)?;
        bufs.set_axis_indices(plan, &coll).map_err(host)?;
        Ok(CpuBackend { plan: plan.clone(), kernels, bufs, coll, threads: world.kernel_threads(), trace: None, _lib: lib })
    }
}

fn host(e: pjc_host::HostError) -> RuntimeError {
    match e {
        pjc_host::HostError::Input(m) => RuntimeError::Env(m),
        pjc_host::HostError::Runtime(m) => RuntimeError::Internal(m),
    }
}

impl Backend for CpuBackend<'_> {
    fn name(&self) -> &'static str {
        "cpu"
    }
    fn set_param(&mut self, i: usize, t: &Tensor) -> Result<(), RuntimeError> {
        self.bufs.set_param(&self.plan, i, t).map_err(host)
    }
    fn run(&mut self) -> Result<(), RuntimeError> {
        pjc_host::run_steps(&self.plan, &self.kernels, &mut self.bufs, self.threads, &mut self.coll, self.trace.as_mut()).map_err(host)
    }
    fn result(&mut self, k: usize) -> Result<Tensor, RuntimeError> {
        Ok(self.bufs.tensor(&self.plan, self.plan.results[k]))
    }
    fn carry(&mut self, pairs: &[(usize, usize)]) -> Result<(), RuntimeError> {
        // Copied out first: a donated result shares its parameter's bytes.
        let saved: Vec<Vec<u8>> = pairs.iter().map(|&(k, _)| self.bufs.bytes(self.plan.results[k]).to_vec()).collect();
        for (&(_, i), bytes) in pairs.iter().zip(saved) {
            self.bufs.write(self.plan.params[i], &bytes).map_err(host)?;
        }
        Ok(())
    }
    fn set_tracing(&mut self, on: bool) {
        self.trace = on.then(Vec::new);
    }
    fn take_trace(&mut self) -> Vec<crate::trace::Event> {
        let Some(t) = &mut self.trace else { return vec![] };
        std::mem::take(t).into_iter().map(crate::trace::Event::from_step).collect()
    }
}
