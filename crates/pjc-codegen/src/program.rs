//! Code generation of a whole plan for an executable: each distinct kernel
//! body compiled once per target, on all cores, through the compile cache.
//!
//! - **Distinct bodies.** Kernels with the same [`Kernel::body_hash`] compile
//!   to the same code whatever their names and buffers, so each body is
//!   compiled once, as its own LLVM module, under the symbol
//!   [`Kernel::symbol`] (`pjc_` + hash digits). Every plan kernel name then
//!   refers to its body's code: on x86 through a linker script of aliases
//!   (`k3 = pjc_…;`, [`HostBuild::aliases`]), in the PTX by the `.entry` of
//!   the body's first kernel ([`PtxKernel::entry`]).
//! - **All cores.** The (target, body) pairs of every target — each CPU level
//!   and the GPU architecture — form one work list that [`Options::jobs`]
//!   threads take from, each with its own LLVM context.
//! - **Cache.** Each pair's code (an ELF object, a PTX text) is looked up in
//!   the [`Cache`] before LLVM runs and stored after.
//! - **Deterministic.** A body's code depends only on the body and the
//!   target; the outputs are put together in the order of first use, so the
//!   artefact is bitwise the same for any number of threads, with or without
//!   the cache.
//!
//! The PTX of one body is a whole module; the program's PTX is the first
//! module's header (`.version`, `.target`, `.address_size`) followed by every
//! body's module after its header, with the body's symbol replaced by its
//! first kernel's name. Names inside a body's module other than the kernel's
//! own (shared-memory arrays, libdevice functions left out of line) are
//! prefixed with the body's symbol first, so no two bodies declare one name.

use crate::cache::{self, Cache};
use crate::{cpu, ptx, CodegenError, OptLevel};
use inkwell::context::Context;
use inkwell::module::Linkage;
use inkwell::targets::FileType;
use pjc_plan::kernel::{distinct, symbol_of, Distinct, Kernel};
use pjc_plan::{CpuLevel, Plan, PtxKernel, PtxModule};
use inkwell::targets::TargetMachine;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A target to generate code for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// x86-64 host kernels for one CPU level.
    Host(CpuLevel),
    /// PTX for one GPU architecture (`sm_80`, `sm_90`), of the plan as the
    /// CUDA backend runs it.
    Ptx(String),
}

impl Target {
    pub fn name(&self) -> &str {
        match self {
            Target::Host(l) => l.name(),
            Target::Ptx(a) => a,
        }
    }
}

/// How to generate code.
pub struct Options<'c> {
    /// Threads (at least 1).
    pub jobs: usize,
    pub cache: Option<&'c Cache>,
    /// LLVM's optimization pipeline for every kernel.
    pub opt: OptLevel,
}

impl Options<'_> {
    /// One thread, no cache, the default optimization level.
    pub fn serial() -> Options<'static> {
        Options { jobs: 1, cache: None, opt: OptLevel::default() }
    }
}

/// The default number of code generation threads: `PJC_JOBS`, else the
/// cores this process may use.
pub fn default_jobs() -> usize {
    std::env::var("PJC_JOBS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// What code generation did for one target.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TargetStats {
    pub target: String,
    /// Kernel steps of the plan (the CUDA view's for PTX).
    pub kernels: usize,
    /// Distinct bodies among them.
    pub distinct: usize,
    /// Bodies LLVM compiled.
    pub compiled: usize,
    /// Bodies taken from the cache.
    pub cached: usize,
    /// Thread time spent on this target's bodies.
    pub busy: Duration,
}

/// The host kernels of one CPU level, ready to link.
pub struct HostBuild {
    pub level: CpuLevel,
    /// One ELF object per distinct body, in order of first use.
    pub objects: Vec<Vec<u8>>,
    /// A linker script defining every plan kernel's name as its body's symbol.
    pub aliases: String,
}

/// The generated code of a plan.
pub struct Built {
    /// Per requested CPU level, in the order requested.
    pub host: Vec<HostBuild>,
    /// The PTX when a GPU target was requested: or why there is none (the
    /// plan has a step with no CUDA form, libdevice is missing).
    pub ptx: Option<Result<PtxModule, CodegenError>>,
    /// Per target, in the order requested.
    pub stats: Vec<TargetStats>,
}

/// Runs `f(0..n)` on up to `jobs` threads; the results in index order.
pub fn par_map<T: Send>(n: usize, jobs: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let jobs = jobs.clamp(1, n.max(1));
    if jobs == 1 {
        return (0..n).map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut parts: Vec<Vec<(usize, T)>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                s.spawn(|| {
                    let mut done = vec![];
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break done;
                        }
                        done.push((i, f(i)));
                    }
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("a code generation thread panicked")).collect()
    });
    let mut out: Vec<Option<T>> = (0..n).map(|_| None).collect();
    for part in parts.iter_mut() {
        for (i, t) in part.drain(..) {
            out[i] = Some(t);
        }
    }
    out.into_iter().map(|t| t.expect("every index done")).collect()
}

/// Hash of the sources that decide what code a body becomes.
fn sources_hash() -> &'static [u8; 32] {
    static H: OnceLock<[u8; 32]> = OnceLock::new();
    H.get_or_init(|| {
        let mut h = blake3::Hasher::new();
        for src in [
            include_str!("lower.rs"),
            include_str!("cpu.rs"),
            include_str!("ptx.rs"),
            include_str!("program.rs"),
            include_str!("../../pjc-plan/src/kernel.rs"),
        ] {
            h.update(src.as_bytes());
            h.update(b"\0");
        }
        *h.finalize().as_bytes()
    })
}

/// What besides the body and the target the code depends on.
fn fingerprint(t: &Target, opt: OptLevel) -> Vec<u8> {
    let (maj, min, patch) = inkwell::support::get_llvm_version();
    let pipeline = match t {
        Target::Host(_) => opt.host_pipeline(),
        Target::Ptx(_) => opt.ptx_pipeline(),
    };
    let mut f = format!("pjc {} llvm {maj}.{min}.{patch} target {} {pipeline}\n", pjc_plan::artifact::PJC_VERSION, t.name()).into_bytes();
    f.extend(sources_hash());
    match t {
        Target::Host(_) => f.extend(cpu::libmvec_signature().as_bytes()),
        Target::Ptx(_) => f.extend(libdevice_hash()),
    }
    f
}

/// BLAKE3 of libdevice's bytes (zeros without one).
fn libdevice_hash() -> [u8; 32] {
    static H: OnceLock<[u8; 32]> = OnceLock::new();
    *H.get_or_init(|| {
        ptx::find_libdevice().and_then(|p| std::fs::read(p).ok()).map_or([0; 32], |b| *blake3::hash(&b).as_bytes())
    })
}

/// `k` under the name `symbol`.
fn renamed(k: &Kernel, symbol: &str) -> Kernel {
    let mut k = k.clone();
    k.name = symbol.to_string();
    k
}

thread_local! {
    /// This thread's target machines, one per target. Creating one, and its
    /// subtarget on first use, is a fixed cost per module otherwise (about a
    /// tenth of a small kernel's LLVM time); the code a machine emits depends
    /// only on the module and the target, not on what it emitted before.
    static MACHINES: RefCell<Vec<(Target, Rc<TargetMachine>)>> = const { RefCell::new(Vec::new()) };
}

/// This thread's target machine for `t`.
fn machine(t: &Target) -> Result<Rc<TargetMachine>, CodegenError> {
    if let Some(tm) = MACHINES.with_borrow(|ms| ms.iter().find(|(m, _)| m == t).map(|(_, tm)| tm.clone())) {
        return Ok(tm);
    }
    let tm = Rc::new(match t {
        Target::Host(level) => cpu::target_machine(level.name())?,
        Target::Ptx(arch) => ptx::target_machine(arch)?,
    });
    MACHINES.with_borrow_mut(|ms| ms.push((t.clone(), tm.clone())));
    Ok(tm)
}

/// The x86-64 object of one body, its function named `symbol`.
fn host_object(k: &Kernel, symbol: &str, level: CpuLevel, opt: OptLevel) -> Result<Vec<u8>, CodegenError> {
    let cx = Context::create();
    let cpu = level.name();
    let tm = machine(&Target::Host(level))?;
    let m = cpu::module_of(&cx, symbol, [&renamed(k, symbol)], cpu, &tm)?;
    cpu::optimize_at(&m, &tm, opt)?;
    let buf = tm.write_to_memory_buffer(&m, FileType::Object).map_err(|e| CodegenError::Llvm(e.to_string()))?;
    Ok(buf.as_slice().to_vec())
}

/// The PTX module of one body (or of none: just the header), its `.entry`
/// named `symbol` and every other name it defines prefixed with it.
fn ptx_unit(k: Option<&Kernel>, symbol: &str, arch: &str, opt: OptLevel) -> Result<String, CodegenError> {
    let cx = Context::create();
    ptx::check_arch(arch)?;
    let tm = machine(&Target::Ptx(arch.to_string()))?;
    let k = k.map(|k| renamed(k, symbol));
    let m = ptx::module_of(&cx, symbol, k.as_ref(), &tm, opt)?;
    for f in m.get_functions() {
        if f.count_basic_blocks() > 0 && f.get_linkage() == Linkage::Internal {
            let name = f.get_name().to_string_lossy().into_owned();
            f.as_global_value().set_name(&format!("{symbol}.{name}"));
        }
    }
    for g in m.get_globals() {
        let name = g.get_name().to_string_lossy().into_owned();
        if !g.is_declaration() && !name.starts_with(symbol) {
            g.set_name(&format!("{symbol}.{name}"));
        }
    }
    let buf = tm.write_to_memory_buffer(&m, FileType::Assembly).map_err(|e| CodegenError::Llvm(e.to_string()))?;
    Ok(String::from_utf8_lossy(buf.as_slice()).trim_end_matches('\0').to_string())
}

/// Splits a PTX module's text after its `.address_size` line: (header, rest).
fn split_header(ptx: &str) -> (&str, &str) {
    let at = ptx
        .find("\n.address_size")
        .and_then(|i| ptx[i + 1..].find('\n').map(|j| i + 1 + j + 1))
        .unwrap_or(0);
    ptx.split_at(at)
}

/// One (target, body) pair of the work list.
struct Item<'a> {
    target: usize,
    kernel: &'a Kernel,
    hash: [u8; 32],
}

/// The code of one work item: from the cache or from LLVM. (bytes, cached, time)
fn compile_item(item: &Item<'_>, target: &Target, opt: OptLevel, fp: &[u8], cache: Option<&Cache>) -> (Result<Vec<u8>, CodegenError>, bool, Duration) {
    let t0 = Instant::now();
    let key = cache.map(|_| cache::key(&[fp, &item.hash]));
    if let (Some(c), Some(key)) = (cache, &key) {
        if let Some(bytes) = c.get(key) {
            return (Ok(bytes), true, t0.elapsed());
        }
    }
    let symbol = symbol_of(&item.hash);
    let r = match target {
        Target::Host(level) => host_object(item.kernel, &symbol, *level, opt),
        Target::Ptx(arch) => ptx_unit(Some(item.kernel), &symbol, arch, opt).map(String::into_bytes),
    };
    if let (Some(c), Some(key), Ok(bytes)) = (cache, &key, &r) {
        c.put(key, bytes);
    }
    (r, false, t0.elapsed())
}

/// Generates the code of `plan` for `targets` (see the module doc).
pub fn build(plan: &Plan, targets: &[Target], opts: &Options<'_>) -> Result<Built, CodegenError> {
    // The CUDA view of the plan, when PTX is wanted (or why it cannot be).
    let cuda = if targets.iter().any(|t| matches!(t, Target::Ptx(_))) {
        Some(ptx::cuda_view(plan))
    } else {
        None
    };
    let cuda_kernels: Vec<&Kernel> = match &cuda {
        // cuDNN steps' device kernels too: the fallback without libcudnn.
        Some(Ok(p)) => pjc_host::device::ptx_kernels(p),
        _ => vec![],
    };
    let host_kernels: Vec<&Kernel> = plan.kernels().collect();
    let host_distinct = distinct(host_kernels.iter().copied());
    let cuda_distinct = distinct(cuda_kernels.iter().copied());
    let mut items = vec![];
    for (t, target) in targets.iter().enumerate() {
        let d = match target {
            Target::Host(_) => &host_distinct,
            Target::Ptx(_) if matches!(cuda, Some(Ok(_))) => &cuda_distinct,
            Target::Ptx(_) => continue,
        };
        items.extend(d.bodies.iter().map(|&(kernel, hash)| Item { target: t, kernel, hash }));
    }
    // Largest bodies first, so that the last ones to finish are short.
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(items[i].kernel.nodes.len() + items[i].kernel.reduce.as_ref().map_or(0, |_| 64)));
    let fps: Vec<Vec<u8>> = targets.iter().map(|t| fingerprint(t, opts.opt)).collect();
    let done = par_map(order.len(), opts.jobs, |j| {
        let item = &items[order[j]];
        compile_item(item, &targets[item.target], opts.opt, &fps[item.target], opts.cache)
    });
    let mut results: Vec<Option<(Result<Vec<u8>, CodegenError>, bool, Duration)>> = (0..items.len()).map(|_| None).collect();
    for (j, r) in done.into_iter().enumerate() {
        results[order[j]] = Some(r);
    }
    let mut out = Built { host: vec![], ptx: None, stats: vec![] };
    let mut results = results.into_iter().map(|r| r.expect("every item compiled"));
    for target in targets {
        let (kernels, d) = match target {
            Target::Host(_) => (&host_kernels, &host_distinct),
            Target::Ptx(_) => (&cuda_kernels, &cuda_distinct),
        };
        let mut stats = TargetStats { target: target.name().to_string(), kernels: kernels.len(), distinct: d.bodies.len(), ..Default::default() };
        let skipped = matches!(target, Target::Ptx(_)) && !matches!(cuda, Some(Ok(_)));
        let mut codes = vec![];
        let mut first_error = None;
        if !skipped {
            for _ in &d.bodies {
                let (r, cached, t) = results.next().expect("one result per item");
                stats.busy += t;
                if cached {
                    stats.cached += 1;
                } else {
                    stats.compiled += 1;
                }
                match r {
                    Ok(b) => codes.push(b),
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        match target {
            Target::Host(level) => {
                if let Some(e) = first_error {
                    return Err(e);
                }
                let mut aliases = String::new();
                for (k, &b) in kernels.iter().zip(&d.body_of) {
                    aliases.push_str(&format!("\"{}\" = {};\n", k.name, symbol_of(&d.bodies[b].1)));
                }
                out.host.push(HostBuild { level: *level, objects: codes, aliases });
            }
            Target::Ptx(arch) => {
                let r = match (&cuda, first_error) {
                    (Some(Err(e)), _) => Err(e.clone()),
                    (_, Some(e)) => Err(e),
                    _ => assemble_ptx(arch, kernels, d, &codes),
                };
                out.ptx = Some(r);
            }
        }
        out.stats.push(stats);
    }
    Ok(out)
}

/// The PTX of every kernel of `plan` as the CUDA backend runs it (its
/// library steps' device kernels too, except products cuBLAS takes), for
/// `arch`, with launch information in the CUDA view's kernel order: each
/// distinct kernel body once (see the module doc), serially and without the
/// compile cache.
pub fn compile_ptx(plan: &Plan, arch: &str) -> Result<PtxModule, CodegenError> {
    ptx::check_arch(arch)?;
    let built = build(plan, &[Target::Ptx(arch.to_string())], &Options::serial())?;
    built.ptx.expect("PTX was requested")
}

/// The PTX text of `plan` for `arch` (`pjc compile --emit ptx`).
pub fn emit_ptx(plan: &Plan, arch: &str) -> Result<String, CodegenError> {
    Ok(compile_ptx(plan, arch)?.ptx)
}

/// The program's PTX module from its bodies' units (see the module doc).
fn assemble_ptx(arch: &str, kernels: &[&Kernel], d: &Distinct<'_>, units: &[Vec<u8>]) -> Result<PtxModule, CodegenError> {
    // The header of the first unit (of an empty module when there is none).
    let first = match units.first() {
        Some(u) => String::from_utf8_lossy(u).into_owned(),
        None => ptx_unit(None, "pjc_empty", arch, OptLevel::default())?,
    };
    let mut text = split_header(&first).0.to_string();
    for ((k, h), unit) in d.bodies.iter().zip(units) {
        let unit = String::from_utf8_lossy(unit);
        text.push_str(&split_header(&unit).1.replace(&symbol_of(h), &k.name));
    }
    let infos = kernels
        .iter()
        .zip(&d.body_of)
        .map(|(k, &b)| PtxKernel {
            name: k.name.clone(),
            entry: d.bodies[b].0.name.clone(),
            points: k.num_elements(),
            required_block: k.reduce.as_ref().map(|_| ptx::REDUCE_BLOCK),
            buffers: k.inputs.iter().chain(&k.outputs).map(|b| b.buffer).collect(),
            vector_width: ptx::vector_width(k),
        })
        .collect();
    Ok(PtxModule { arch: arch.to_string(), ptx: text, kernels: infos })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn par_map_keeps_index_order() {
        for jobs in [1, 2, 3, 8] {
            let v = par_map(37, jobs, |i| i * i);
            assert_eq!(v, (0..37).map(|i| i * i).collect::<Vec<_>>());
        }
        assert!(par_map(0, 4, |i| i).is_empty());
    }

    fn plan(src: &str) -> Plan {
        let m = pjc_front::load(src).unwrap_or_else(|e| panic!("{e:?}"));
        pjc_fusion::plan(&m.funcs[m.func_by_name("main").unwrap()]).unwrap()
    }

    /// Kernels with one body share one entry, named after the first; a plan
    /// without kernels still gets a PTX module (its header).
    #[test]
    fn ptx_entries_are_shared_by_kernels_with_one_body() {
        let p = plan("func @main(%a: f32[64], %b: f32[64]) -> (x: f32[64], y: f32[64], s: f32[]) {
  %x = neg %a
  %y = neg %b
  %s = reduce %x {dims=[0], kind=sum}
  return %x, %y, %s
}");
        let m = compile_ptx(&p, "sm_90").unwrap();
        let names: Vec<&str> = m.kernels.iter().map(|k| k.name.as_str()).collect();
        let entries: Vec<&str> = m.kernels.iter().map(|k| k.entry.as_str()).collect();
        assert_eq!(names.len(), 3, "{names:?}");
        assert_eq!(entries[1], entries[0], "{entries:?}");
        assert_ne!(entries[2], entries[0]);
        assert_eq!(m.ptx.matches(".visible .entry").count(), 2, "{}", m.ptx);
        assert_eq!(m.ptx.matches(".target sm_90").count(), 1, "{}", m.ptx);
        let none = compile_ptx(&plan("func @main(%a: f32[4]) -> (y: f32[4]) {\n  return %a\n}\n"), "sm_90").unwrap();
        assert!(none.kernels.is_empty() && none.ptx.contains(".target sm_90") && !none.ptx.contains(".entry"), "{}", none.ptx);
    }

    #[test]
    fn headers_split_after_the_address_size_line() {
        let t = "//\n// Generated\n//\n\n.version 7.8\n.target sm_90\n.address_size 64\n\n\t// .globl\tk\n.visible .entry k()\n{\n}\n";
        let (h, rest) = split_header(t);
        assert!(h.ends_with(".address_size 64\n"), "{h:?}");
        assert!(rest.starts_with("\n\t// .globl"), "{rest:?}");
    }
}
