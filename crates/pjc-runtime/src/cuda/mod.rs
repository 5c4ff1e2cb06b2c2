//! The CUDA device backend: one process per mesh device, each running its
//! plan on one GPU, with buffers that stay on the GPU between runs.
//!
//! Everything CUDA is loaded at run time (cudarc with dynamic loading), so an
//! executable built here starts on a machine without CUDA and [`probe`] says
//! why there is no GPU ([`gpus`] describes each one, for `devices.rs`). On a
//! GPU machine:
//!
//! - **Device**: GPU `local rank mod GPU count` ([`local_rank`]), its primary
//!   context, and one stream on which every step runs in plan order.
//! - **Kernels**: the embedded PTX ([`pjc_host::PtxModule`]) is loaded once
//!   (`cuModuleLoadDataEx`: the driver JIT-compiles it for the GPU; a failure
//!   reports the JIT log) and each `Step::Kernel` is launched with the shape of
//!   [`geometry::launch_geometry`] (the contract of `pjc_codegen::ptx`).
//! - **Buffers**: one `cuMemAlloc` per plan buffer (256-byte aligned, so the
//!   kernels' 16-byte alignment holds; zero-size buffers get one byte);
//!   constants are uploaded once, parameters by [`Backend::set_param`].
//! - **The plan** it runs is `pjc_host::device::cuda_plan` of the artefact's:
//!   a `dot_general` cuBLAS takes stays a library step and runs as
//!   `{S,D}gemmStridedBatched` (`pjc_host::device::cublas_step`: the
//!   row-major product as its transpose; cuBLAS's default math mode, no TF32,
//!   so f32 stays f32); a `convolution` `pjc_host::device::cudnn_of` maps
//!   is one cuDNN call (`cuda/conv.rs`), or, when libcudnn does not load or
//!   cuDNN refuses that step, its device kernels, which the PTX carries after
//!   it; every other library step (products of other dtypes or layouts,
//!   other convolutions, `scatter_add`) is its device kernel, generated
//!   like every other kernel. Nothing runs on the host.
//! - **Axis indices** (`axis_index`): the plan's axis-index buffers are
//!   uploaded once with this device's mesh coordinates.
//! - **Collectives**: NCCL on the same stream (`cuda/collective.rs`).
//!
//! [`libs`] decides where cuBLAS, cuDNN and NCCL come from.

mod collective;
mod conv;
pub mod geometry;
pub mod libs;

use crate::backend::Backend;
use crate::world::World;
use crate::RuntimeError;
use cudarc::cublas::{self, CudaBlas};
use cudarc::driver::{result, sys, CudaContext, CudaStream};
use pjc_plan::{BufferKind, Memory, Plan, Step};
use pjc_plan::{GroupTable, PtxModule};
use pjc_host::device::{Cublas, GemmArgs, Operand};
use pjc_ir::{DType, Mesh};
use pjc_tensor::Tensor;
use std::ffi::{c_int, c_void, CStr, CString};
use std::sync::Arc;

use collective::{CollOp, Group};
use libs::Nccl;

/// Runs `f`, turning a panic inside cudarc (a missing library or symbol) into
/// an error. A last resort: the libraries are checked before use.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            Err(format!("{what}: the CUDA libraries failed: {msg}"))
        }
    }
}

/// The number of CUDA GPUs this process can use, or why there are none (no
/// driver library, no device, an initialization error). Never panics.
pub fn probe() -> Result<usize, String> {
    if !libs::driver_present() {
        return Err("no CUDA driver: libcuda.so.1 cannot be loaded (this machine has no NVIDIA driver)".into());
    }
    guarded("probing for GPUs", || {
        result::init().map_err(|e| match e.0 {
            sys::CUresult::CUDA_ERROR_NO_DEVICE => "no CUDA device (the driver is installed but sees no GPU; check CUDA_VISIBLE_DEVICES)".to_string(),
            _ => format!("the CUDA driver failed to initialize: {e}"),
        })?;
        let n = result::device::get_count().map_err(|e| format!("cannot count CUDA devices: {e}"))?;
        if n <= 0 {
            return Err("no CUDA device".into());
        }
        Ok(n as usize)
    })
}

/// One GPU as the CUDA driver describes it.
#[derive(Clone, Debug)]
pub struct GpuInfo {
    pub ordinal: usize,
    pub name: String,
    pub memory_bytes: u64,
    /// (major, minor).
    pub compute_capability: (i32, i32),
}

impl std::fmt::Display for GpuInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GPU {}: {}, {:.1} GiB, compute capability {}.{} (sm_{}{})",
            self.ordinal,
            self.name,
            self.memory_bytes as f64 / (1u64 << 30) as f64,
            self.compute_capability.0,
            self.compute_capability.1,
            self.compute_capability.0,
            self.compute_capability.1
        )
    }
}

/// Every GPU the driver sees, described (name, memory, compute capability),
/// or why there are none. Never panics.
pub fn gpus() -> Result<Vec<GpuInfo>, String> {
    let n = probe()?;
    guarded("describing the GPUs", || {
        (0..n)
            .map(|i| {
                let dev = result::device::get(i as c_int).map_err(|e| format!("GPU {i}: {e}"))?;
                let name = result::device::get_name(dev).map_err(|e| format!("GPU {i}: {e}"))?;
                // SAFETY: `dev` came from cuDeviceGet.
                let (mem, major, minor) = unsafe {
                    (
                        result::device::total_mem(dev).map_err(|e| format!("GPU {i}: {e}"))?,
                        result::device::get_attribute(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR).map_err(|e| format!("GPU {i}: {e}"))?,
                        result::device::get_attribute(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR).map_err(|e| format!("GPU {i}: {e}"))?,
                    )
                };
                Ok(GpuInfo { ordinal: i, name, memory_bytes: mem as u64, compute_capability: (major, minor) })
            })
            .collect()
    })
}

/// This process's rank among the job's processes on its node: the
/// launcher's variable (`OMPI_COMM_WORLD_LOCAL_RANK` for OpenMPI,
/// `MPI_LOCALRANKID` for MPICH, `SLURM_LOCALID` under srun), else the world
/// rank.
pub fn local_rank(world: &World) -> usize {
    local_rank_with(&|k| std::env::var(k).ok(), world.rank())
}

fn local_rank_with(env: &dyn Fn(&str) -> Option<String>, rank: usize) -> usize {
    ["OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"].iter().find_map(|k| env(k).and_then(|v| v.trim().parse().ok())).unwrap_or(rank)
}

fn env_err(e: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::Env(e.to_string())
}

fn cuda(what: &str) -> impl Fn(result::DriverError) -> RuntimeError + '_ {
    move |e| RuntimeError::Env(format!("{what}: {e}"))
}

/// The cuDNN call of a convolution step, or why it runs its device kernels
/// (no libcudnn, or cuDNN refuses the descriptors or has no deterministic
/// algorithm for them); `dnn` is the backend's handle, made on first use.
fn cudnn_call(dnn: &mut Option<Result<conv::Dnn, String>>, stream: sys::CUstream, c: &pjc_host::cudnn::CudnnConv) -> Result<conv::Call, String> {
    let h = dnn.get_or_insert_with(|| libs::ensure_cudnn().and_then(|v| guarded("creating the cuDNN handle", || conv::Dnn::new(stream, v))));
    match h {
        Ok(h) => guarded("preparing a cuDNN convolution", || conv::Call::new(h, c)),
        Err(e) => Err(e.clone()),
    }
}

/// One buffer's device memory: an allocation, or (a window of a scan,
/// `owned` false) a slice of its whole buffer's, re-pointed each iteration.
struct DevMem {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    owned: bool,
}

/// A step as it runs on this device.
enum Exec {
    Skip,
    Kernel {
        func: sys::CUfunction,
        grid: u32,
        block: u32,
        /// The buffers of its pointer parameters (their device pointers are
        /// read at launch: control flow swaps and re-points them).
        args: Vec<usize>,
        n: i64,
    },
    Gemm {
        operands: DType,
        result: DType,
        g: GemmArgs,
        /// Element offsets (lhs, rhs, result) of each call.
        calls: Vec<[usize; 3]>,
        lhs: usize,
        rhs: usize,
        out: usize,
    },
    /// A convolution through cuDNN (`conv.rs`).
    Cudnn {
        call: conv::Call,
        lhs: usize,
        rhs: usize,
        out: usize,
    },
    /// Steps run in order: a cuDNN step's device kernels, without cuDNN.
    Seq(Vec<Exec>),
    /// Fill the output with zero bytes (a product with nothing to contract).
    Zero {
        out: usize,
    },
    Collective {
        group: usize,
        input: usize,
        output: usize,
        op: CollOp,
    },
}

/// One device's executor of one plan on a GPU (see the module docs).
pub struct CudaBackend {
    plan: Plan,
    ordinal: usize,
    steps: Vec<Exec>,
    /// Every buffer's device memory now: a place in `arena` (a loop's
    /// carried buffers swap places while it runs), or a window.
    bufs: Vec<DevMem>,
    /// The buffer plan's arena (one allocation of its peak) and every
    /// buffer's planned place in it.
    arena: Option<DevMem>,
    planned: Vec<sys::CUdeviceptr>,
    scratch: [Option<DevMem>; 2],
    carry_scratch: Option<DevMem>,
    groups: Vec<Group>,
    /// The compiled device groups of every axis list the collectives use.
    tables: Vec<GroupTable>,
    nccl: Option<&'static Nccl>,
    blas: Option<CudaBlas>,
    /// cuDNN, when a convolution maps onto it and libcudnn loads (else
    /// why not), and the scratch its steps share.
    dnn: Option<Result<conv::Dnn, String>>,
    dnn_scratch: Option<DevMem>,
    module: Option<sys::CUmodule>,
    /// This device's mesh and coordinates (for the axis-index buffers).
    mesh: Mesh,
    coords: Vec<u64>,
    /// `--trace`: each step synchronized and timed (only while tracing).
    trace: Option<Vec<crate::trace::Event>>,
    stream: Arc<CudaStream>,
    /// The collectives' stream: every collective runs on it, ordered against
    /// the compute stream with events (a start/done pair waits for its event
    /// only at its done, so the compute between overlaps it).
    comm: Arc<CudaStream>,
    /// Events for that ordering, reused (created on demand).
    events: Vec<sys::CUevent>,
    ctx: Arc<CudaContext>,
}

impl CudaBackend {
    /// Sets up `plan` on this process's GPU: context, module, buffers
    /// (constants uploaded), cuBLAS if a product needs it, and NCCL
    /// communicators for every collective group. Collective over the world
    /// (every rank calls it for the same plan): the ranks agree that their
    /// local set-up succeeded before building communicators, so one rank's
    /// failure is every rank's error rather than a hang.
    pub fn new(plan: &Plan, memory: &Memory, ptx: &PtxModule, world: &World, mesh: &Mesh, tables: &[GroupTable]) -> Result<CudaBackend, RuntimeError> {
        world.check_device_count(mesh)?;
        let local = CudaBackend::local(plan, memory, ptx, world, mesh, tables);
        // Agree before the collective part.
        let codes = world.all_codes(match &local {
            Ok(_) => 0,
            Err(e) => e.exit_code().clamp(1, 255) as u8,
        });
        let mut be = local?;
        if let Some((rank, &code)) = codes.iter().enumerate().find(|(_, &c)| c != 0) {
            return Err(RuntimeError::Elsewhere { rank, code: code as i32 });
        }
        be.connect(world)?;
        Ok(be)
    }

    /// The per-process part of [`CudaBackend::new`].
    fn local(plan: &Plan, memory: &Memory, ptx: &PtxModule, world: &World, mesh: &Mesh, tables: &[GroupTable]) -> Result<CudaBackend, RuntimeError> {
        let count = probe().map_err(|e| RuntimeError::Env(format!("the CUDA backend cannot run: {e}")))?;
        let ordinal = local_rank(world) % count;
        let (ctx, stream) = guarded("creating the CUDA context", || {
            let ctx = CudaContext::new(ordinal).map_err(|e| format!("cannot create a context on GPU {ordinal}: {e}"))?;
            let stream = ctx.new_stream().map_err(|e| format!("cannot create a stream on GPU {ordinal}: {e}"))?;
            let comm = ctx.new_stream().map_err(|e| format!("cannot create a stream on GPU {ordinal}: {e}"))?;
            Ok((ctx, (stream, comm)))
        })
        .map_err(RuntimeError::Env)?;
        let (stream, comm) = stream;
        let plan = pjc_host::device::cuda_plan(plan).map_err(|e| RuntimeError::Internal(e.to_string()))?;
        let mut be = CudaBackend {
            plan,
            ordinal,
            steps: vec![],
            bufs: vec![],
            arena: None,
            planned: vec![],
            scratch: [None, None],
            carry_scratch: None,
            groups: vec![],
            tables: tables.to_vec(),
            nccl: None,
            blas: None,
            dnn: None,
            dnn_scratch: None,
            module: None,
            mesh: mesh.clone(),
            coords: mesh.coords(world.rank() as u64),
            trace: None,
            stream,
            comm,
            events: vec![],
            ctx,
        };
        be.load_module(ptx)?;
        be.alloc_buffers(memory)?;
        be.prepare_steps(ptx, world)?;
        Ok(be)
    }

    /// The GPU this backend runs on.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    fn cu_stream(&self) -> sys::CUstream {
        self.stream.cu_stream()
    }

    fn load_module(&mut self, ptx: &PtxModule) -> Result<(), RuntimeError> {
        let src = CString::new(ptx.ptx.as_str()).map_err(|_| RuntimeError::Internal("the PTX contains a NUL byte".into()))?;
        let mut log = vec![0u8; 1 << 14];
        let mut opts = [sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER, sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut vals = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: NUL-terminated PTX; the log buffer outlives the call.
        let r = unsafe { sys::cuModuleLoadDataEx(&mut module, src.as_ptr() as *const c_void, 2, opts.as_mut_ptr(), vals.as_mut_ptr()) };
        if let Err(e) = r.result() {
            let text = CStr::from_bytes_until_nul(&log).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
            return Err(RuntimeError::Env(format!("the GPU driver could not load the program's PTX (built for {}): {e}; {}", ptx.arch, text.trim())));
        }
        self.module = Some(module);
        Ok(())
    }

    fn alloc(bytes: usize) -> Result<DevMem, RuntimeError> {
        // SAFETY: a fresh allocation in the current context.
        let ptr =
            unsafe { result::malloc_sync(bytes.max(1)) }.map_err(|e| RuntimeError::Env(format!("cannot allocate {bytes} bytes on the GPU: {e}")))?;
        Ok(DevMem { ptr, bytes, owned: true })
    }

    /// Allocates the buffer plan's arena (refused with the plan's report
    /// when the GPU has not that much free) and places every buffer at its
    /// planned offset; uploads constants and axis indices.
    fn alloc_buffers(&mut self, memory: &Memory) -> Result<(), RuntimeError> {
        if memory.offsets.len() != self.plan.buffers.len() {
            return Err(RuntimeError::Internal(format!("a buffer plan of {} buffers for a plan of {}", memory.offsets.len(), self.plan.buffers.len())));
        }
        let peak = usize::try_from(memory.peak).map_err(|_| RuntimeError::Env(format!("not enough GPU memory: the program's buffers need {} bytes", memory.peak)))?;
        let refuse = |has: String| RuntimeError::Env(format!("not enough GPU memory: the program's buffers need {peak} bytes on GPU {}, {has}: {}", self.ordinal, crate::memory::report(&self.plan, memory)));
        if let Ok((free, _)) = result::mem_get_info() {
            if peak > free {
                return Err(refuse(format!("which has {free} bytes free")));
            }
        }
        let arena = CudaBackend::alloc(peak).map_err(|e| refuse(e.to_string()))?;
        for (i, b) in self.plan.buffers.iter().enumerate() {
            let bytes = b.bytes() as usize;
            if let BufferKind::Window { .. } = b.kind {
                self.bufs.push(DevMem { ptr: 0, bytes, owned: false });
                continue;
            }
            let off = memory.offsets[i] as usize;
            if off.checked_add(bytes).is_none_or(|e| e > peak.max(1)) {
                CudaBackend::free(arena);
                return Err(RuntimeError::Internal(format!("buffer %{} at {off} (+{bytes} bytes) lies outside the {peak} bytes of the buffer plan", b.name)));
            }
            self.bufs.push(DevMem { ptr: arena.ptr + off as u64, bytes, owned: true });
        }
        self.planned = self.bufs.iter().map(|m| m.ptr).collect();
        self.arena = Some(arena);
        for (i, b) in self.plan.buffers.iter().enumerate() {
            match &b.kind {
                BufferKind::Constant(lit) => {
                    let bytes = pjc_tensor::buf_to_le_bytes(&pjc_plan::exec::literal_tensor(lit, &b.ty).data);
                    self.upload(i, &bytes)?;
                }
                BufferKind::AxisIndices(axes) => {
                    let mut bytes = vec![];
                    for a in axes {
                        let k = self.mesh.axis(a).ok_or_else(|| RuntimeError::Internal(format!("axis_index of axis '{a}', which the mesh does not have")))?;
                        bytes.extend_from_slice(&(self.coords[k] as i32).to_le_bytes());
                    }
                    self.upload(i, &bytes)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn prepare_steps(&mut self, ptx: &PtxModule, world: &World) -> Result<(), RuntimeError> {
        let module = self.module.expect("loaded first");
        let sms = self.ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(cuda("cannot query the GPU"))?;
        let cap = geometry::max_blocks(sms.max(1) as u32);
        // NCCL: required when a group has several devices; used for groups
        // of one too when it loads (see `collective`).
        if !self.tables.is_empty() {
            let multi = self.tables.iter().find(|t| t.groups.first().is_some_and(|g| g.len() > 1)).map(|t| &t.axes);
            self.nccl = match (libs::nccl(), multi) {
                (Ok(api), _) => Some(api),
                (Err(e), Some(a)) => {
                    return Err(RuntimeError::Env(format!("the CUDA backend needs NCCL for the collectives over [{}]: {e}", a.join(", "))))
                }
                (Err(_), None) => None,
            };
        }
        let mut kernels = ptx.kernels.iter();
        let launch = |k: &pjc_plan::Kernel, pk: Option<&pjc_plan::PtxKernel>| -> Result<Exec, RuntimeError> {
            let pk = pk.ok_or_else(|| RuntimeError::Internal(format!("kernel {} has no PTX launch information", k.name)))?;
            if pk.name != k.name {
                return Err(RuntimeError::Internal(format!("PTX kernel {} where the plan has {}", pk.name, k.name)));
            }
            Ok(match geometry::launch_geometry(pk.points, pk.vector_width, pk.required_block, cap) {
                None => Exec::Skip,
                Some((grid, block)) => {
                    let name = CString::new(pk.entry.as_str()).map_err(|_| RuntimeError::Internal("a kernel name with NUL".into()))?;
                    // SAFETY: the module is loaded; the name is NUL-terminated.
                    let func = unsafe { result::module::get_function(module, name) }
                        .map_err(cuda(&format!("kernel {} (entry {}) is not in the PTX", pk.name, pk.entry)))?;
                    let args = pk.buffers.clone();
                    Exec::Kernel { func, grid, block, args, n: pk.points as i64 }
                }
            })
        };
        // The scratch the cuDNN steps share (bytes).
        let mut scratch = 0usize;
        let stream = self.cu_stream();
        let mut needs_blas = false;
        let mut steps = vec![];
        // Per step in pre-order (control steps' blocks included), the
        // numbering `run` and `pjc_plan::control::run_control` use.
        for step in pjc_plan::control::preorder(&self.plan.steps) {
            let exec = match step {
                // Driven by `run_control` through `Machine` (below).
                Step::Control(_) => Exec::Skip,
                Step::Kernel(k) => launch(k, kernels.next())?,
                Step::Library { inst, inputs, outputs, device, .. } if pjc_host::device::cublas_of(&self.plan, step).is_none() && pjc_host::device::cudnn_of(&self.plan, step).is_some() => {
                    let conv = pjc_host::device::cudnn_of(&self.plan, step).expect("checked");
                    // The device kernels follow in the PTX: the fallback.
                    let fallback = device.iter().map(|k| launch(k, kernels.next())).collect::<Result<Vec<_>, _>>()?;
                    match cudnn_call(&mut self.dnn, stream, &conv) {
                        Ok(call) => {
                            scratch = scratch.max(call.scratch_bytes());
                            Exec::Cudnn { call, lhs: inputs[0], rhs: inputs[1], out: outputs[0] }
                        }
                        Err(_) => Exec::Seq(fallback),
                    }
                }
                Step::Library { inst, inputs, outputs, .. } => match pjc_host::device::cublas_of(&self.plan, step) {
                    Some(Cublas::Gemm { operands, result, args, calls }) => {
                        needs_blas = true;
                        Exec::Gemm { operands, result, g: args, calls, lhs: inputs[0], rhs: inputs[1], out: outputs[0] }
                    }
                    Some(Cublas::Zero) => Exec::Zero { out: outputs[0] },
                    Some(Cublas::Skip) => Exec::Skip,
                    None => return Err(RuntimeError::Internal(format!("library step '{}' reached the CUDA backend without a cuBLAS mapping", inst.op))),
                },
                Step::Collective { inst, input, output, .. } => {
                    if input == output {
                        return Err(RuntimeError::Internal(format!("collective '{}' reads and writes one buffer", inst.op)));
                    }
                    // The compiled group table of its axes gives the group's
                    // size and our position.
                    let axes = inst.attr("axes").and_then(|a| a.as_idents()).unwrap_or_default();
                    let group = self.tables.iter().position(|t| t.axes == axes).ok_or_else(|| RuntimeError::Internal(format!("the executable carries no device groups over [{}]", axes.join(", "))))?;
                    let g = crate::groups::group_of(&self.tables[group], world.rank() as u64).map_err(RuntimeError::Program)?;
                    let n = g.members.len();
                    let (in_ty, out_ty) = (&self.plan.buffers[*input].ty, &self.plan.buffers[*output].ty);
                    let op = collective::plan_collective(inst, in_ty, out_ty, n, g.pos, self.nccl.is_some())?;
                    let need = op.scratch(self.bufs[*input].bytes, self.bufs[*output].bytes);
                    for (s, &bytes) in need.iter().enumerate() {
                        if bytes > self.scratch[s].as_ref().map_or(0, |m| m.bytes) {
                            if let Some(old) = self.scratch[s].take() {
                                CudaBackend::free(old);
                            }
                            self.scratch[s] = Some(CudaBackend::alloc(bytes)?);
                        }
                    }
                    Exec::Collective { group, input: *input, output: *output, op }
                }
            };
            steps.push(exec);
        }
        if kernels.next().is_some() {
            return Err(RuntimeError::Internal("the PTX module has more kernels than the plan".into()));
        }
        if needs_blas {
            libs::ensure_cublas().map_err(|e| RuntimeError::Env(format!("the CUDA backend needs cuBLAS for dot_general: {e}")))?;
            let blas = guarded("creating the cuBLAS handle", || {
                CudaBlas::new(self.stream.clone()).map_err(|e| format!("cannot create a cuBLAS handle: {e}"))
            })
            .map_err(RuntimeError::Env)?;
            self.blas = Some(blas);
        }
        if scratch > 0 {
            self.dnn_scratch = Some(CudaBackend::alloc(scratch)?);
        }
        self.steps = steps;
        Ok(())
    }


    /// Builds the NCCL communicators (collective over the world).
    fn connect(&mut self, world: &World) -> Result<(), RuntimeError> {
        if self.tables.is_empty() {
            return Ok(());
        }
        self.ctx.bind_to_thread().map_err(cuda("binding the CUDA context"))?;
        self.groups = collective::build_groups(world, &self.tables, self.nccl)?;
        Ok(())
    }

    /// Copies `bytes` into buffer `b` and waits: in stream order after every
    /// step already enqueued, and done before `bytes` may be freed (the
    /// driver does not promise when it has read pageable memory).
    fn upload(&self, b: usize, bytes: &[u8]) -> Result<(), RuntimeError> {
        if bytes.len() != self.bufs[b].bytes {
            return Err(RuntimeError::Internal(format!(
                "{} bytes for buffer %{} of {} bytes",
                bytes.len(),
                self.plan.buffers[b].name,
                self.bufs[b].bytes
            )));
        }
        if bytes.is_empty() {
            return Ok(());
        }
        // SAFETY: the buffer holds `bytes.len()` bytes; `bytes` outlives the
        // copy (synchronized below).
        unsafe { result::memcpy_htod_async(self.bufs[b].ptr, bytes, self.cu_stream()) }.map_err(cuda("copying to the GPU"))?;
        self.stream.synchronize().map_err(cuda("waiting for the GPU"))
    }

    fn download(&self, b: usize) -> Result<Tensor, RuntimeError> {
        let mut bytes = vec![0u8; self.bufs[b].bytes];
        if !bytes.is_empty() {
            // SAFETY: the buffer holds `bytes.len()` bytes; synchronized below
            // before `bytes` is read.
            unsafe { result::memcpy_dtoh_async(&mut bytes[..], self.bufs[b].ptr, self.cu_stream()) }.map_err(cuda("copying from the GPU"))?;
        }
        self.stream.synchronize().map_err(cuda("waiting for the GPU"))?;
        let ty = &self.plan.buffers[b].ty;
        let buf = pjc_tensor::buf_from_le_bytes(ty.dtype, &bytes).map_err(RuntimeError::Internal)?;
        Ok(Tensor::new(ty.shape.iter().map(|&d| d as usize).collect(), buf))
    }

    fn dtod(&self, dst: sys::CUdeviceptr, src: sys::CUdeviceptr, bytes: usize) -> Result<(), RuntimeError> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: both allocations hold at least `bytes`.
        unsafe { result::memcpy_dtod_async(dst, src, bytes, self.cu_stream()) }.map_err(cuda("copying on the GPU"))
    }

    fn run_step(&self, si: usize) -> Result<(), RuntimeError> {
        self.run_exec(&self.steps[si])
    }

    fn run_exec(&self, exec: &Exec) -> Result<(), RuntimeError> {
        let stream = self.cu_stream();
        match exec {
            Exec::Skip => Ok(()),
            Exec::Kernel { func, grid, block, args, n } => {
                let mut vals: Vec<u64> = args.iter().map(|&b| self.bufs[b].ptr).collect();
                vals.push(*n as u64);
                let mut params: Vec<*mut c_void> = vals.iter_mut().map(|v| v as *mut u64 as *mut c_void).collect();
                // SAFETY: the kernel takes one pointer per buffer then i64 n
                // (pjc_codegen::ptx); the driver copies the values at launch.
                unsafe { result::launch_kernel(*func, (*grid, 1, 1), (*block, 1, 1), 0, stream, &mut params) }.map_err(cuda("launching a kernel"))
            }
            Exec::Zero { out } => {
                // SAFETY: the buffer holds its bytes.
                unsafe { result::memset_d8_async(self.bufs[*out].ptr, 0, self.bufs[*out].bytes, stream) }.map_err(cuda("clearing a buffer"))
            }
            Exec::Gemm { operands, result, g, calls, lhs, rhs, out } => self.gemm(*operands, *result, g, calls, *lhs, *rhs, *out),
            Exec::Cudnn { call, lhs, rhs, out } => {
                let h = match &self.dnn {
                    Some(Ok(h)) => h,
                    _ => return Err(RuntimeError::Internal("a cuDNN step without cuDNN".into())),
                };
                let p = conv::Ptrs { lhs: self.bufs[*lhs].ptr, rhs: self.bufs[*rhs].ptr, out: self.bufs[*out].ptr, scratch: self.dnn_scratch.as_ref().map_or(0, |m| m.ptr) };
                // SAFETY: the step's buffers have the plan's types the mapping
                // was made for; the scratch holds the largest step's need.
                unsafe { call.run(h, &p, stream) }.map_err(|e| RuntimeError::Env(format!("cuDNN {}: {e}", h.version)))
            }
            Exec::Seq(execs) => execs.iter().try_for_each(|e| self.run_exec(e)),
            Exec::Collective { group, input, output, op } => {
                let scratch = |s: usize| self.scratch[s].as_ref().map_or(0, |m| m.ptr);
                let p = collective::Ptrs { input: self.bufs[*input].ptr, output: self.bufs[*output].ptr, scratch: [scratch(0), scratch(1)] };
                // SAFETY: the pointers are this plan's buffers and the scratch sized
                // for `op` at construction; the group is the step's.
                let g = &self.groups[*group];
                // On the collectives' stream (see `run_steps`).
                let _ = stream;
                unsafe { collective::run(op, &p, g, self.nccl, self.comm.cu_stream()) }
                    .map_err(|e| RuntimeError::Env(format!("{e} (group over [{}], position {} of {})", g.axes.join(", "), g.pos, g.size)))
            }
        }
    }

    /// The cuBLAS calls of one product step (`pjc_host::device::Cublas::Gemm`).
    fn gemm(&self, operands: DType, result: DType, g: &GemmArgs, calls: &[[usize; 3]], lhs: usize, rhs: usize, out: usize) -> Result<(), RuntimeError> {
        use cublas::sys::{cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t as Op, cudaDataType};
        let blas = self.blas.as_ref().ok_or_else(|| RuntimeError::Internal("a GEMM step without cuBLAS".into()))?;
        let op = |o: Operand| if o.trans { Op::CUBLAS_OP_T } else { Op::CUBLAS_OP_N };
        let i = |x: usize| x as c_int;
        let l = |x: usize| x as i64;
        let (ea, ec) = (operands.size_bytes() as u64, result.size_bytes() as u64);
        let ty = |d: DType| match d {
            DType::BF16 => cudaDataType::CUDA_R_16BF,
            DType::F16 => cudaDataType::CUDA_R_16F,
            _ => cudaDataType::CUDA_R_32F,
        };
        for c in calls {
            // cuBLAS's A is our rhs, its B our lhs (the transposed product).
            let a = self.bufs[rhs].ptr + c[1] as u64 * ea;
            let b = self.bufs[lhs].ptr + c[0] as u64 * ea;
            let cp = self.bufs[out].ptr + c[2] as u64 * ec;
            // SAFETY: strided_calls and gemm_args checked the sizes, strides
            // and offsets against the buffers' shapes; alpha and beta are host
            // scalars read during the call.
            let r = unsafe {
                match (operands, result) {
                    (DType::F32, DType::F32) => cublas::result::sgemm_strided_batched(
                        *blas.handle(), op(g.a), op(g.b), i(g.m), i(g.n), i(g.k),
                        &1.0f32, a as *const f32, i(g.a.ld), l(g.stride_a), b as *const f32, i(g.b.ld), l(g.stride_b),
                        &0.0f32, cp as *mut f32, i(g.ldc), l(g.stride_c), i(g.batch),
                    ),
                    (DType::F64, _) => cublas::result::dgemm_strided_batched(
                        *blas.handle(), op(g.a), op(g.b), i(g.m), i(g.n), i(g.k),
                        &1.0f64, a as *const f64, i(g.a.ld), l(g.stride_a), b as *const f64, i(g.b.ld), l(g.stride_b),
                        &0.0f64, cp as *mut f64, i(g.ldc), l(g.stride_c), i(g.batch),
                    ),
                    // bf16/f16 operands: f32 computation, alpha and beta f32.
                    _ => cublas::result::gemm_strided_batched_ex(
                        *blas.handle(), op(g.a), op(g.b), i(g.m), i(g.n), i(g.k),
                        &1.0f32 as *const f32 as *const c_void, a as *const c_void, ty(operands), i(g.a.ld), l(g.stride_a),
                        b as *const c_void, ty(operands), i(g.b.ld), l(g.stride_b),
                        &0.0f32 as *const f32 as *const c_void, cp as *mut c_void, ty(result), i(g.ldc), l(g.stride_c), i(g.batch),
                        cublasComputeType_t::CUBLAS_COMPUTE_32F, cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
                    ),
                }
            };
            r.map_err(|e| RuntimeError::Env(format!("cuBLAS gemm failed: {e}")))?;
        }
        Ok(())
    }

    fn free(m: DevMem) {
        // SAFETY: allocated by `alloc`, freed once.
        let _ = unsafe { result::free_sync(m.ptr) };
    }
}

impl CudaBackend {
    /// Runs `steps` (of this backend's plan), the first numbered `first` in
    /// pre-order: every step is enqueued on the stream, control steps through
    /// `pjc_plan::control::run_control` (a `while` waits for its predicate
    /// each iteration, a `switch` for its index; a `scan` never waits).
    fn run_steps(&mut self, steps: &[Step], first: usize) -> Result<(), RuntimeError> {
        let mut si = first;
        // Started collectives: (done position, the event of their end).
        let mut pending: Vec<(usize, sys::CUevent)> = vec![];
        for (j, step) in steps.iter().enumerate() {
            self.dones(&mut pending, j)?;
            if let Step::Collective { done, .. } = step {
                // The collectives' stream waits for the compute before it.
                let ready = self.event()?;
                // SAFETY: live event and streams of this context.
                unsafe {
                    result::event::record(ready, self.cu_stream()).map_err(cuda("recording an event"))?;
                    result::stream::wait_event(self.comm.cu_stream(), ready, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT).map_err(cuda("ordering the collectives' stream"))?;
                }
                self.events.push(ready);
                let start = std::time::Instant::now();
                self.run_step(si).map_err(|e| match e {
                    RuntimeError::Env(m) => RuntimeError::Env(format!("GPU {} step {si}: {m}", self.ordinal)),
                    other => other,
                })?;
                let end = self.event()?;
                // SAFETY: as above.
                unsafe { result::event::record(end, self.comm.cu_stream()) }.map_err(cuda("recording an event"))?;
                match done {
                    // Tracing times every step: it waits here as if blocking.
                    Some(d) if self.trace.is_none() => pending.push((*d, end)),
                    _ => self.dones(&mut vec![(j, end)], j)?,
                }
                if self.trace.is_some() {
                    self.comm.synchronize().map_err(cuda("synchronizing the collectives' stream"))?;
                    if let Step::Collective { inst, input, .. } = step {
                        let args = serde_json::json!({"bytes": self.plan.buffers[*input].bytes()});
                        self.traced(inst.op.to_string(), "collective", start, args);
                    }
                }
                si += 1;
                continue;
            }
            if let Step::Control(c) = step {
                let buffers = std::mem::take(&mut self.plan.buffers);
                let r = pjc_plan::control::run_control(&buffers, c, si, self, RuntimeError::Internal);
                self.plan.buffers = buffers;
                r?;
                self.restore_places()?;
                si += pjc_plan::control::step_count(step);
                continue;
            }
            let start = std::time::Instant::now();
            self.run_step(si).map_err(|e| match e {
                RuntimeError::Env(m) => RuntimeError::Env(format!("GPU {} step {si}: {m}", self.ordinal)),
                other => other,
            })?;
            if self.trace.is_some() {
                // Tracing times each step on the device: wait for it.
                self.stream.synchronize().map_err(cuda("synchronizing the stream"))?;
                let (name, cat, args) = match step {
                    Step::Kernel(k) => (k.name.clone(), "kernel", serde_json::json!({})),
                    Step::Library { inst, .. } => {
                        let cat = match &self.steps[si] {
                            Exec::Cudnn { .. } => "cudnn",
                            Exec::Seq(_) => "kernel",
                            _ => "gemm",
                        };
                        (inst.op.to_string(), cat, serde_json::json!({}))
                    }
                    Step::Collective { inst, input, .. } => (inst.op.to_string(), "collective", serde_json::json!({"bytes": self.plan.buffers[*input].bytes()})),
                    Step::Control(_) => unreachable!("handled above"),
                };
                self.traced(name, cat, start, args);
            }
            si += 1;
        }
        self.dones(&mut pending, steps.len())
    }

    /// The compute stream waits for the started collectives due before step
    /// `j` (their end events go back to the pool).
    fn dones(&mut self, pending: &mut Vec<(usize, sys::CUevent)>, j: usize) -> Result<(), RuntimeError> {
        while let Some(k) = pending.iter().position(|p| p.0 == j) {
            let (_, ev) = pending.remove(k);
            // SAFETY: a live event of this context, recorded on the
            // collectives' stream.
            unsafe { result::stream::wait_event(self.cu_stream(), ev, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }.map_err(cuda("waiting for a collective"))?;
            self.events.push(ev);
        }
        Ok(())
    }

    /// An event from the pool, or a new one (without timing).
    fn event(&mut self) -> Result<sys::CUevent, RuntimeError> {
        match self.events.pop() {
            Some(e) => Ok(e),
            None => result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING).map_err(cuda("creating an event")),
        }
    }

    /// Copies `(src, dst, bytes)` on the stream as one parallel assignment:
    /// sources a destination overlaps are staged in the carry scratch first
    /// (`geometry::staging`).
    fn parallel_copy(&mut self, moves: &[(sys::CUdeviceptr, sys::CUdeviceptr, usize)]) -> Result<(), RuntimeError> {
        let (staged, total) = geometry::staging(moves);
        if total > self.carry_scratch.as_ref().map_or(0, |m| m.bytes) {
            if let Some(old) = self.carry_scratch.take() {
                CudaBackend::free(old);
            }
            self.carry_scratch = Some(CudaBackend::alloc(total)?);
        }
        let base = self.carry_scratch.as_ref().map_or(0, |m| m.ptr);
        for (&(s, _, n), st) in moves.iter().zip(&staged) {
            if let Some(at) = st {
                self.dtod(base + *at as u64, s, n)?;
            }
        }
        for (&(s, d, n), st) in moves.iter().zip(&staged) {
            if s != d {
                self.dtod(d, st.map_or(s, |at| base + at as u64), n)?;
            }
        }
        Ok(())
    }

    /// After a control step: buffers that swapped places in the arena go
    /// back, with their bytes, to their planned places (other buffers use a
    /// dead buffer's planned bytes afterwards), as the CPU runtime does.
    fn restore_places(&mut self) -> Result<(), RuntimeError> {
        let moved: Vec<usize> = (0..self.bufs.len()).filter(|&i| self.bufs[i].owned && self.bufs[i].ptr != self.planned[i]).collect();
        if moved.is_empty() {
            return Ok(());
        }
        let moves: Vec<_> = moved.iter().map(|&i| (self.bufs[i].ptr, self.planned[i], self.bufs[i].bytes)).collect();
        self.parallel_copy(&moves)?;
        for i in moved {
            self.bufs[i].ptr = self.planned[i];
        }
        Ok(())
    }

    fn traced(&mut self, name: String, cat: &str, start: std::time::Instant, args: serde_json::Value) {
        if let Some(t) = &mut self.trace {
            t.push(crate::trace::Event { name, cat: cat.to_string(), start, dur: start.elapsed(), args, tid: 0 });
        }
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn set_param(&mut self, i: usize, t: &Tensor) -> Result<(), RuntimeError> {
        let b = *self.plan.params.get(i).ok_or_else(|| RuntimeError::Internal(format!("parameter {i} of a plan with {}", self.plan.params.len())))?;
        pjc_host::check_arg(t, &self.plan.buffers[b].ty, &format!("argument {i} (%{})", self.plan.buffers[b].name)).map_err(env_err)?;
        self.ctx.bind_to_thread().map_err(cuda("binding the CUDA context"))?;
        let start = std::time::Instant::now();
        let r = self.upload(b, &pjc_tensor::buf_to_le_bytes(&t.data));
        self.traced(format!("host to device %{}", self.plan.buffers[b].name), "copy", start, serde_json::json!({"bytes": self.bufs[b].bytes}));
        r
    }

    fn run(&mut self) -> Result<(), RuntimeError> {
        self.ctx.bind_to_thread().map_err(cuda("binding the CUDA context"))?;
        let plan = self.plan.clone();
        self.run_steps(&plan.steps, 0)
    }

    fn result(&mut self, k: usize) -> Result<Tensor, RuntimeError> {
        let b = *self.plan.results.get(k).ok_or_else(|| RuntimeError::Internal(format!("result {k} of a plan with {}", self.plan.results.len())))?;
        self.ctx.bind_to_thread().map_err(cuda("binding the CUDA context"))?;
        let start = std::time::Instant::now();
        let r = self.download(b);
        self.traced(format!("device to host %{}", self.plan.buffers[b].name), "copy", start, serde_json::json!({"bytes": self.bufs[b].bytes}));
        r
    }

    fn set_tracing(&mut self, on: bool) {
        self.trace = on.then(Vec::new);
    }

    fn take_trace(&mut self) -> Vec<crate::trace::Event> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn carry(&mut self, pairs: &[(usize, usize)]) -> Result<(), RuntimeError> {
        self.ctx.bind_to_thread().map_err(cuda("binding the CUDA context"))?;
        let mut moves = vec![];
        for &(k, i) in pairs {
            let (src, dst) = match (self.plan.results.get(k), self.plan.params.get(i)) {
                (Some(&s), Some(&d)) => (s, d),
                _ => return Err(RuntimeError::Internal(format!("carry of result {k} into parameter {i}"))),
            };
            if self.plan.buffers[src].ty != self.plan.buffers[dst].ty {
                return Err(RuntimeError::Env(format!(
                    "result {k} is {} but parameter {i} is {}",
                    self.plan.buffers[src].ty, self.plan.buffers[dst].ty
                )));
            }
            if src != dst {
                moves.push((src, dst));
            }
        }
        let moves: Vec<(sys::CUdeviceptr, sys::CUdeviceptr, usize)> = moves.iter().map(|&(s, d)| (self.bufs[s].ptr, self.bufs[d].ptr, self.bufs[d].bytes)).collect();
        self.parallel_copy(&moves)?;
        Ok(())
    }
}

/// Control flow on the GPU: blocks are enqueued like the plan's steps;
/// carried buffers swap their device pointers and windows are re-pointed into
/// their whole buffers (no copies); only predicates and indices are read back.
impl pjc_plan::control::Machine for CudaBackend {
    type Error = RuntimeError;
    fn run_block(&mut self, block: &pjc_plan::Block, first: usize) -> Result<(), RuntimeError> {
        self.run_steps(&block.steps, first)
    }
    fn copy(&mut self, dst: usize, src: usize) -> Result<(), RuntimeError> {
        let (d, s) = (&self.bufs[dst], &self.bufs[src]);
        if d.bytes != s.bytes {
            return Err(RuntimeError::Internal(format!("copy of b{src} into b{dst} of another size")));
        }
        self.dtod(d.ptr, s.ptr, d.bytes)
    }
    fn swap(&mut self, a: usize, b: usize) -> Result<(), RuntimeError> {
        if !self.bufs[a].owned || !self.bufs[b].owned {
            return Err(RuntimeError::Internal(format!("swap of a window (b{a}, b{b})")));
        }
        self.bufs.swap(a, b);
        Ok(())
    }
    fn read_scalar(&mut self, b: usize) -> Result<Vec<u8>, RuntimeError> {
        let mut bytes = vec![0u8; self.bufs[b].bytes];
        // SAFETY: the buffer holds `bytes.len()` bytes; synchronized below
        // before `bytes` is read.
        unsafe { result::memcpy_dtoh_async(&mut bytes[..], self.bufs[b].ptr, self.cu_stream()) }.map_err(cuda("reading a predicate or index from the GPU"))?;
        self.stream.synchronize().map_err(cuda("waiting for the GPU"))?;
        Ok(bytes)
    }
    fn enter_window(&mut self, w: usize, whole: usize, pos: u64, _read: bool) -> Result<(), RuntimeError> {
        let len = self.bufs[w].bytes;
        let (ptr, total) = (self.bufs[whole].ptr, self.bufs[whole].bytes);
        let off = geometry::window_offset(pos, len, total).ok_or_else(|| RuntimeError::Internal(format!("window b{w} at slice {pos} lies outside b{whole}")))?;
        self.bufs[w].ptr = ptr + off;
        Ok(())
    }
    fn leave_window(&mut self, _w: usize, _whole: usize, _pos: u64, _written: bool) -> Result<(), RuntimeError> {
        Ok(())
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        // Errors here cannot be reported; the process is ending or failing.
        let _ = self.ctx.bind_to_thread();
        let _ = self.stream.synchronize();
        let _ = self.comm.synchronize();
        for e in self.events.drain(..) {
            // SAFETY: created by `event`, no longer waited on (both streams
            // are synchronized).
            let _ = unsafe { result::event::destroy(e) };
        }
        collective::destroy(&self.groups, self.nccl);
        self.groups.clear();
        self.blas = None;
        // cuDNN's descriptors, then its handle.
        self.steps.clear();
        self.dnn = None;
        // Buffers are places in the arena: only the arena is freed.
        self.bufs.clear();
        for m in self.arena.take().into_iter().chain(self.scratch.iter_mut().filter_map(Option::take)).chain(self.carry_scratch.take()).chain(self.dnn_scratch.take()) {
            CudaBackend::free(m);
        }
        if let Some(m) = self.module.take() {
            // SAFETY: loaded by load_module, unloaded once.
            let _ = unsafe { result::module::unload(m) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_rank_prefers_the_launcher() {
        let env = |k: &str| (k == "OMPI_COMM_WORLD_LOCAL_RANK").then(|| "3".to_string());
        assert_eq!(local_rank_with(&env, 7), 3);
        let slurm = |k: &str| (k == "SLURM_LOCALID").then(|| "1".to_string());
        assert_eq!(local_rank_with(&slurm, 7), 1);
        assert_eq!(local_rank_with(&|_| None, 5), 5);
    }

    /// On a machine without a GPU (CI), probing and construction fail with a
    /// reason instead of panicking. On a GPU machine there is nothing to check.
    #[test]
    fn no_gpu_is_a_clean_error() {
        let Err(reason) = probe() else { return };
        assert!(!reason.is_empty());
        let plan = Plan { name: "f".into(), buffers: vec![], steps: vec![], params: vec![], results: vec![] };
        let ptx = PtxModule { arch: "sm_90".into(), ptx: String::new(), kernels: vec![] };
        let world = World::single();
        let mesh = Mesh { axes: vec![] };
        let memory = Memory { offsets: vec![], peak: 0, donated: vec![], fullest: Default::default() };
        match CudaBackend::new(&plan, &memory, &ptx, &world, &mesh, &[]) {
            Err(RuntimeError::Env(m)) => assert!(m.contains("CUDA"), "{m}"),
            Err(e) => panic!("unexpected error kind: {e:?}"),
            Ok(_) => panic!("a backend without a GPU"),
        }
    }
}
