//! Running a kernel plan ([`pjc_plan::Plan`]) on the host, with no
//! compiler in the process: what the in-process JIT (`pjc-codegen`) and the
//! compiled executable's runtime (`pjc-runtime`, kernels loaded from a shared
//! object) have in common.
//!
//! - The CPU kernel ABI ([`KernelFn`]: `void k(i8** bufs, i64 begin, i64 end)`)
//!   and [`run_kernel_threads`], which splits `[0, n)` over threads.
//! - [`Buffers`]: one 8-byte-aligned host allocation per plan buffer, with
//!   parameters and constants filled in.
//! - [`run_steps`]: the step loop — kernels, library steps (GEMM through
//!   [`gemm::try_dot`], else the reference kernels), collectives through
//!   [`StepHooks`] (identity on one device, MPI in the runtime).
//! - [`device`]: the CUDA view of a plan (which steps cuBLAS takes, which
//!   run their device kernels), decided once for code generator and runtime.
//! - [`PtxKernel`]: how a GPU runtime launches one generated PTX kernel (data
//!   only: the code generator fills it in, the runtime reads it).

pub mod amx;
pub mod blas;
pub mod conv;
pub mod cpulevel;
pub mod cudnn;
pub mod device;
pub mod gemm;
pub mod intgemm;
mod pool;
pub mod scatter;

use pjc_plan::{BufferKind, Plan, Step};
use pjc_ir::{DType, InstData, Opcode, TensorType};
use pjc_tensor::{Scalar, Tensor};

/// A compiled CPU kernel: `f(bufs, begin, end)` computes output points
/// `[begin, end)`; `bufs` holds the kernel's input then output buffers.
pub type KernelFn = unsafe extern "C" fn(*const *mut u8, i64, i64);

/// Why running a plan failed.
#[derive(Clone, Debug, PartialEq)]
pub enum HostError {
    /// Wrong number, shape or dtype of arguments.
    Input(String),
    /// A library step or a collective failed.
    Runtime(String),
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostError::Input(m) | HostError::Runtime(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for HostError {}

/// Kernel threads: `PJC_THREADS`, else the machine's cores.
pub fn default_threads() -> usize {
    std::env::var("PJC_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

#[derive(Clone, Copy)]
struct SendPtrs(*const *mut u8);
unsafe impl Send for SendPtrs {}
unsafe impl Sync for SendPtrs {}

/// Calls `f` over `[0, n)`, split into contiguous ranges over up to `threads`
/// threads when there is enough work (`work_per_point` iterations per point).
pub fn run_kernel_threads(f: KernelFn, ptrs: &[*mut u8], n: u64, work_per_point: u64, threads: usize) {
    let n = n as i64;
    let work = (n as u64).saturating_mul(work_per_point.max(1));
    let t = if work < 1 << 16 { 1 } else { (threads as i64).min(n).max(1) };
    let p = SendPtrs(ptrs.as_ptr());
    if t == 1 {
        unsafe { f(p.0, 0, n) };
        return;
    }
    let chunk = (n + t - 1) / t;
    std::thread::scope(|s| {
        for i in 0..t {
            let (lo, hi) = (i * chunk, ((i + 1) * chunk).min(n));
            if lo >= hi {
                continue;
            }
            s.spawn(move || {
                let p = p;
                unsafe { f(p.0, lo, hi) }
            });
        }
    });
}

/// Host memory of one plan buffer (8-byte aligned).
#[derive(Clone)]
pub struct HostBuf {
    words: Vec<u64>,
    len: usize,
}

impl HostBuf {
    pub fn zeroed(len: usize) -> HostBuf {
        HostBuf { words: vec![0; len.div_ceil(8).max(1)], len }
    }
    /// [`HostBuf::zeroed`], or `None` when the memory cannot be had (instead
    /// of aborting the process). Zero pages come lazily from the system, as
    /// with `zeroed`.
    pub fn try_zeroed(len: usize) -> Option<HostBuf> {
        let n = len.div_ceil(8).max(1);
        let layout = std::alloc::Layout::array::<u64>(n).ok()?;
        // SAFETY: a non-zero-sized layout; the allocation is handed to a Vec
        // with exactly the element type, length and capacity it was made for,
        // from the global allocator Vec uses.
        let words = unsafe {
            let p = std::alloc::alloc_zeroed(layout) as *mut u64;
            if p.is_null() {
                return None;
            }
            Vec::from_raw_parts(p, n, n)
        };
        Some(HostBuf { words, len })
    }
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.words.as_mut_ptr() as *mut u8
    }
    pub fn bytes(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self.words.as_ptr() as *const u8, self.len) }
    }
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr() as *mut u8, self.len) }
    }
    pub fn write_tensor(&mut self, t: &Tensor) {
        let bytes = pjc_tensor::buf_le_bytes(&t.data);
        assert_eq!(bytes.len(), self.len, "tensor size matches its buffer");
        self.bytes_mut().copy_from_slice(&bytes);
    }
}

/// All buffers of a plan: each one's own allocation ([`Buffers::alloc`]),
/// or all of them in one arena at the buffer plan's offsets
/// ([`Buffers::alloc_planned`]: the memory the compiler planned, buffers
/// that are never live at once sharing bytes). A window buffer
/// (`BufferKind::Window`) has no memory of its own: while a scan runs, it
/// views a slice of its whole buffer ([`Buffers::bytes`] and
/// [`Buffers::ptr`] resolve it).
pub struct Buffers {
    data: Vec<HostBuf>,
    /// Per buffer: (allocation, byte offset, length). Carried buffers of a
    /// loop swap their places.
    place: Vec<(usize, usize, usize)>,
    /// For each window buffer, the slice it views now.
    views: Vec<Option<View>>,
    /// In the planned arena, every buffer's planned place: a loop's carried
    /// buffers swap places while it runs, and the places (with their bytes)
    /// go back when it ends, since the plan lets other buffers use a dead
    /// buffer's planned bytes afterwards.
    planned: Option<Vec<(usize, usize, usize)>>,
}

/// A window's slice: `len` bytes at `offset` of buffer `whole`.
#[derive(Copy, Clone)]
struct View {
    whole: usize,
    offset: usize,
    len: usize,
}

/// Checks that `t` has buffer type `ty`; `what` names it in the message.
pub fn check_arg(t: &Tensor, ty: &TensorType, what: &str) -> Result<(), HostError> {
    let shape: Vec<usize> = ty.shape.iter().map(|&d| d as usize).collect();
    if t.dtype() != ty.dtype || t.shape != shape {
        return Err(HostError::Input(format!("{what} is {}{:?}, the plan expects {ty}", t.dtype(), t.shape)));
    }
    Ok(())
}

impl Buffers {
    /// Allocates `plan`'s buffers, each its own allocation, with constants
    /// filled in and parameters zero. Memory that cannot be had is an error
    /// naming the buffer and its bytes, not an abort.
    pub fn alloc(plan: &Plan) -> Result<Buffers, HostError> {
        let mut data = vec![];
        let mut place = vec![];
        for b in &plan.buffers {
            if let BufferKind::Window { .. } = b.kind {
                place.push((data.len(), 0, 0));
                data.push(HostBuf { words: Vec::new(), len: 0 });
                continue;
            }
            let bytes = b.ty.checked_bytes();
            let buf = bytes.and_then(|n| usize::try_from(n).ok()).and_then(HostBuf::try_zeroed);
            let Some(s) = buf else {
                let need = bytes.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string());
                return Err(HostError::Input(format!("not enough memory: buffer %{} ({}) needs {need} bytes, which cannot be allocated", b.name, b.ty)));
            };
            place.push((data.len(), 0, s.len));
            data.push(s);
        }
        let mut bufs = Buffers { views: vec![None; data.len()], data, place, planned: None };
        bufs.fill_constants(plan);
        Ok(bufs)
    }

    /// Allocates `plan`'s buffers in one zeroed arena of `mem.peak` bytes, each
    /// at its planned offset (`pjc_fusion::plan_memory`: buffers live at the
    /// same time never overlap, a donated result shares its parameter's
    /// bytes), with constants filled in. A plan whose buffers do not lie
    /// within the arena is an error (a damaged or foreign buffer plan).
    pub fn alloc_planned(plan: &Plan, mem: &pjc_plan::Memory) -> Result<Buffers, HostError> {
        if mem.offsets.len() != plan.buffers.len() {
            return Err(HostError::Runtime(format!("a buffer plan of {} buffers for a plan of {}", mem.offsets.len(), plan.buffers.len())));
        }
        let peak = usize::try_from(mem.peak).ok();
        let Some(arena) = peak.and_then(HostBuf::try_zeroed) else {
            return Err(HostError::Input(format!("not enough memory: the program's buffers need {} bytes, which cannot be allocated", mem.peak)));
        };
        let mut place = vec![];
        for (i, b) in plan.buffers.iter().enumerate() {
            let len = if let BufferKind::Window { .. } = b.kind { 0 } else { b.bytes() as usize };
            let off = mem.offsets[i] as usize;
            if off.checked_add(len).is_none_or(|e| e > arena.len) {
                return Err(HostError::Runtime(format!("buffer %{} at {off} (+{len} bytes) lies outside the {} bytes of the buffer plan", b.name, arena.len)));
            }
            place.push((0, off, len));
        }
        let mut bufs = Buffers { views: vec![None; place.len()], data: vec![arena], planned: Some(place.clone()), place };
        bufs.fill_constants(plan);
        Ok(bufs)
    }

    /// Puts every buffer back at its planned place in the arena, moving its
    /// bytes there (once per loop run, not per iteration: the swaps inside
    /// the loop stay free). Nothing to do with one allocation per buffer.
    pub fn restore_places(&mut self) {
        let Some(planned) = &self.planned else { return };
        let moved: Vec<usize> = (0..self.place.len()).filter(|&i| self.place[i] != planned[i]).collect();
        if moved.is_empty() {
            return;
        }
        let saved: Vec<Vec<u8>> = moved.iter().map(|&i| {
            let (a, o, l) = self.place[i];
            self.data[a].bytes()[o..o + l].to_vec()
        }).collect();
        for (&i, bytes) in moved.iter().zip(saved) {
            self.place[i] = planned[i];
            let (a, o, l) = self.place[i];
            self.data[a].bytes_mut()[o..o + l].copy_from_slice(&bytes);
        }
    }

    fn fill_constants(&mut self, plan: &Plan) {
        for (i, b) in plan.buffers.iter().enumerate() {
            if let BufferKind::Constant(lit) = &b.kind {
                self.write_tensor(i, &pjc_plan::exec::literal_tensor(lit, &b.ty));
            }
        }
    }

    /// Writes tensor `t` (of buffer `b`'s size) into buffer `b`.
    fn write_tensor(&mut self, b: usize, t: &Tensor) {
        let bytes = pjc_tensor::buf_le_bytes(&t.data);
        let (base, off, len) = self.span(b);
        assert_eq!(bytes.len(), len, "tensor size matches its buffer");
        self.data[base].bytes_mut()[off..off + len].copy_from_slice(&bytes);
    }

    /// Where buffer `b`'s bytes are: (allocation, byte offset, length).
    fn span(&self, b: usize) -> (usize, usize, usize) {
        match self.views[b] {
            None => self.place[b],
            Some(v) => {
                let (base, off, _) = self.span(v.whole);
                (base, off + v.offset, v.len)
            }
        }
    }

    /// Buffer `b`'s bytes (a window's: its slice of the whole buffer).
    pub fn bytes(&self, b: usize) -> &[u8] {
        let (base, off, len) = self.span(b);
        &self.data[base].bytes()[off..off + len]
    }

    /// Writes `bytes` into buffer `b` (of exactly that size).
    pub fn write(&mut self, b: usize, bytes: &[u8]) -> Result<(), HostError> {
        let (base, off, len) = self.span(b);
        if bytes.len() != len {
            return Err(HostError::Runtime(format!("{} bytes for buffer b{b} of {len}", bytes.len())));
        }
        self.data[base].bytes_mut()[off..off + len].copy_from_slice(bytes);
        Ok(())
    }

    /// Buffer `b`'s first byte, for kernels and in-place library steps.
    pub fn ptr(&mut self, b: usize) -> *mut u8 {
        let (base, off, _) = self.span(b);
        // SAFETY: `span` stays within the allocation (a window's slice lies
        // inside its whole buffer, `enter_window` checks it).
        unsafe { self.data[base].as_mut_ptr().add(off) }
    }

    /// Points window `w` (of `len` bytes) at byte `offset` of buffer `whole`.
    fn view(&mut self, w: usize, whole: usize, offset: usize, len: usize) -> Result<(), HostError> {
        let (_, _, total) = self.span(whole);
        if offset + len > total {
            return Err(HostError::Runtime(format!("window b{w} of {len} bytes at {offset} lies outside b{whole} of {total} bytes")));
        }
        self.views[w] = Some(View { whole, offset, len });
        Ok(())
    }

    /// Allocates `plan`'s buffers with parameters and constants filled in.
    pub fn new(plan: &Plan, args: &[Tensor]) -> Result<Buffers, HostError> {
        if args.len() != plan.params.len() {
            return Err(HostError::Input(format!("plan @{} takes {} arguments, got {}", plan.name, plan.params.len(), args.len())));
        }
        let mut bufs = Buffers::alloc(plan)?;
        for (i, t) in args.iter().enumerate() {
            bufs.set_param(plan, i, t)?;
        }
        Ok(bufs)
    }

    /// Writes this device's mesh coordinates into the plan's axis-index
    /// buffers (they start as zeros: a single device's coordinates).
    pub fn set_axis_indices(&mut self, plan: &Plan, hooks: &dyn StepHooks) -> Result<(), HostError> {
        for (i, b) in plan.buffers.iter().enumerate() {
            if let BufferKind::AxisIndices(axes) = &b.kind {
                let v = axes.iter().map(|a| hooks.axis_index(a).map(|c| Scalar::Int(c as i128))).collect::<Result<Vec<_>, _>>()?;
                self.write_tensor(i, &Tensor::from_scalars(DType::I32, vec![axes.len()], &v));
            }
        }
        Ok(())
    }

    /// Writes parameter `i`.
    pub fn set_param(&mut self, plan: &Plan, i: usize, t: &Tensor) -> Result<(), HostError> {
        let b = plan.params[i];
        check_arg(t, &plan.buffers[b].ty, &format!("argument {i} (%{})", plan.buffers[b].name))?;
        self.write_tensor(b, t);
        Ok(())
    }

    /// Buffer `b` read back as a tensor of its plan type.
    pub fn tensor(&self, plan: &Plan, b: usize) -> Tensor {
        let ty = &plan.buffers[b].ty;
        let buf = pjc_tensor::buf_from_le_bytes(ty.dtype, self.bytes(b)).expect("buffer sizes match their types");
        Tensor::new(ty.shape.iter().map(|&d| d as usize).collect(), buf)
    }

    /// The plan's results.
    pub fn results(&self, plan: &Plan) -> Vec<Tensor> {
        plan.results.iter().map(|&b| self.tensor(plan, b)).collect()
    }
}

/// What the step loop asks of its environment.
pub trait StepHooks {
    /// Runs collective `inst` on this device's `input` bytes (`in_ty`) and
    /// returns the output bytes (`out_ty`).
    fn collective(&mut self, inst: &InstData, input: &[u8], in_ty: &TensorType, out_ty: &TensorType) -> Result<Vec<u8>, HostError>;
    /// This device's coordinate along mesh axis `axis`.
    fn axis_index(&self, axis: &str) -> Result<i64, HostError>;
    /// Starts collective `inst` on the `in_len` bytes at `input`, to write
    /// its `out_len` result bytes at `output` by the time [`finish`] of the
    /// returned ticket returns (a start/done pair of the plan). The default
    /// runs it now.
    ///
    /// # Safety
    /// Both ranges are valid, and the caller neither writes the input nor
    /// touches the output until `finish(ticket)` has returned.
    ///
    /// [`finish`]: StepHooks::finish
    unsafe fn start(&mut self, inst: &InstData, input: *const u8, in_len: usize, in_ty: &TensorType, out_ty: &TensorType, output: *mut u8, out_len: usize) -> Result<u64, HostError> {
        // SAFETY: the caller's contract.
        let out = self.collective(inst, unsafe { std::slice::from_raw_parts(input, in_len) }, in_ty, out_ty)?;
        // SAFETY: the caller's contract.
        unsafe { put_result(inst, out_ty, &out, output, out_len) }.map_err(HostError::Runtime)?;
        Ok(0)
    }
    /// Waits for the collective of `ticket` ([`StepHooks::start`]); returns
    /// when it ran (start, duration), where it ran apart from the step loop.
    fn finish(&mut self, _ticket: u64) -> Result<Option<(std::time::Instant, std::time::Duration)>, HostError> {
        Ok(None)
    }
}

/// Copies a collective's result bytes `out` into the `out_len` bytes at
/// `output` (its buffer), or says that they are not the buffer's size.
///
/// # Safety
/// `output` is valid for `out_len` bytes, which nothing else touches now.
pub unsafe fn put_result(inst: &InstData, out_ty: &TensorType, out: &[u8], output: *mut u8, out_len: usize) -> Result<(), String> {
    if out.len() != out_len {
        return Err(format!("collective '{}' gave {} bytes for a {out_ty} buffer", inst.op, out.len()));
    }
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), output, out_len) };
    Ok(())
}

/// One device alone: every group has one member, so a collective is a copy
/// and every coordinate is 0.
pub struct SingleDevice;

impl StepHooks for SingleDevice {
    fn collective(&mut self, _inst: &InstData, input: &[u8], _in_ty: &TensorType, _out_ty: &TensorType) -> Result<Vec<u8>, HostError> {
        Ok(input.to_vec())
    }
    fn axis_index(&self, _axis: &str) -> Result<i64, HostError> {
        Ok(0)
    }
}

/// Runs a library step on host tensors, one tensor per result (of the types
/// `out_tys`): every `dot_general` and float `convolution` as GEMM,
/// `scatter_add` of f32, f64, i32 and i64 in place ([`scatter`]), the rest
/// (sort, top_k, the other scatter kinds, ...) with the reference kernels.
pub fn library_step(inst: &InstData, ins: &[Tensor], out_tys: &[&TensorType], threads: usize) -> Result<Vec<Tensor>, HostError> {
    if let [out_ty] = out_tys {
        if let Some(t) = gemm::try_dot(inst, ins, out_ty, threads) {
            return Ok(vec![t]);
        }
        if let Some(t) = conv::try_conv(inst, ins, out_ty, threads, blas::get()) {
            return Ok(vec![t]);
        }
        if let Some(t) = scatter::try_scatter_add(inst, ins, out_ty) {
            return Ok(vec![t]);
        }
    }
    pjc_plan::exec::library(inst, ins, out_tys).map_err(|e| HostError::Runtime(e.to_string()))
}

/// A library step computed from its buffers' bytes into its output buffer's
/// (products GEMM reads in place: `gemm::dot_in_place`); `false` when the
/// step needs the copying path.
fn library_in_place(plan: &Plan, inst: &InstData, inputs: &[usize], outputs: &[usize], bufs: &mut Buffers, threads: usize) -> bool {
    let &[output] = outputs else { return false };
    if inst.op != Opcode::DotGeneral || inputs.len() != 2 || inputs.contains(&output) {
        return false;
    }
    let ty = |b: usize| &plan.buffers[b].ty;
    let types = [ty(inputs[0]), ty(inputs[1]), ty(output)];
    // The output is memory of its own (the planner gives every library step
    // a fresh buffer, or a window of a fresh stacked output, never one of
    // the operands' memory), so it can be written beside the inputs.
    let len = bufs.bytes(output).len();
    let out = bufs.ptr(output);
    // SAFETY: `len` bytes at `out` are the output's, disjoint from the inputs'.
    let out = unsafe { std::slice::from_raw_parts_mut(out, len) };
    gemm::dot_in_place(inst, types, [bufs.bytes(inputs[0]), bufs.bytes(inputs[1])], out, threads)
}

/// One step as it ran, for traces.
#[derive(Clone, Debug)]
pub struct StepEvent {
    /// The kernel's name, or the op of a library step or collective.
    pub name: String,
    /// `"kernel"`, `"gemm"`, `"library"`, `"collective"` or `"control"` (a
    /// loop or switch, recorded after the steps of its blocks).
    pub kind: &'static str,
    pub start: std::time::Instant,
    pub dur: std::time::Duration,
    /// Bytes a collective sends from this device (its input), else 0.
    pub bytes: u64,
    /// 0: the step loop's thread; 1: the thread that runs asynchronous
    /// collectives (while the loop goes on).
    pub track: u32,
}

/// Runs every step of `plan` on `bufs`: the kernel numbered `n` in the
/// pre-order of the plan's steps (`pjc_plan::control::preorder`: control
/// steps' blocks included) through `kernels[n]` (`None` for other steps) with
/// up to `threads` threads; each step is recorded in `trace` when given.
pub fn run_steps(
    plan: &Plan,
    kernels: &[Option<KernelFn>],
    bufs: &mut Buffers,
    threads: usize,
    hooks: &mut dyn StepHooks,
    trace: Option<&mut Vec<StepEvent>>,
) -> Result<(), HostError> {
    let mut run = HostRun { plan, kernels, bufs, threads, hooks, trace };
    run.steps(&plan.steps, 0)
}

/// A started collective: where it completes (before step `done` of its
/// list), its ticket, its step's place in the list, and when and how long
/// its start ran.
struct Pending {
    done: usize,
    ticket: u64,
    at: usize,
    began: std::time::Instant,
    took: std::time::Duration,
}

/// The step loop's state while a plan runs.
struct HostRun<'a> {
    plan: &'a Plan,
    kernels: &'a [Option<KernelFn>],
    bufs: &'a mut Buffers,
    threads: usize,
    hooks: &'a mut dyn StepHooks,
    trace: Option<&'a mut Vec<StepEvent>>,
}

impl HostRun<'_> {
    /// Runs `steps`, the first numbered `first`: an asynchronous collective
    /// (`done: Some(j)`) is started and finished before step `j` (or at the
    /// end of the list).
    fn steps(&mut self, steps: &[Step], first: usize) -> Result<(), HostError> {
        let mut si = first;
        let mut pending: Vec<Pending> = vec![];
        for (j, step) in steps.iter().enumerate() {
            self.dones(steps, &mut pending, j)?;
            match step {
                Step::Collective { inst, input, output, done: Some(d) } => {
                    let (plan, bufs) = (self.plan, &mut *self.bufs);
                    let (in_ty, out_ty) = (&plan.buffers[*input].ty, &plan.buffers[*output].ty);
                    let (inp, in_len) = (bufs.ptr(*input) as *const u8, bufs.bytes(*input).len());
                    let (out, out_len) = (bufs.ptr(*output), bufs.bytes(*output).len());
                    // SAFETY: both buffers are live until the done before step
                    // `d` (the buffer plan keeps them), and no step before it
                    // writes the input or touches the output (the scheduler's
                    // guarantee), nor moves them (they are no loop's carries here).
                    let began = std::time::Instant::now();
                    let ticket = unsafe { self.hooks.start(inst, inp, in_len, in_ty, out_ty, out, out_len)? };
                    pending.push(Pending { done: *d, ticket, at: j, began, took: began.elapsed() });
                }
                _ => self.step(step, si)?,
            }
            si += pjc_plan::control::step_count(step);
        }
        self.dones(steps, &mut pending, steps.len())
    }

    /// Finishes the pending collectives due before step `j`; traces each
    /// where it ran (its own track when it ran beside the loop) and the
    /// loop's wait for it.
    fn dones(&mut self, steps: &[Step], pending: &mut Vec<Pending>, j: usize) -> Result<(), HostError> {
        while let Some(k) = pending.iter().position(|p| p.done == j) {
            let p = pending.remove(k);
            let wait = std::time::Instant::now();
            let ran = self.hooks.finish(p.ticket)?;
            if let (Some(t), Step::Collective { inst, input, .. }) = (self.trace.as_deref_mut(), &steps[p.at]) {
                let bytes = self.plan.buffers[*input].bytes();
                match ran {
                    Some((start, dur)) => {
                        t.push(StepEvent { name: inst.op.to_string(), kind: "collective", start, dur, bytes, track: 1 });
                        t.push(StepEvent { name: format!("wait for {}", inst.op), kind: "wait", start: wait, dur: wait.elapsed(), bytes: 0, track: 0 });
                    }
                    // It ran inside `start`, blocking the loop.
                    None => t.push(StepEvent { name: inst.op.to_string(), kind: "collective", start: p.began, dur: p.took, bytes, track: 0 }),
                }
            }
        }
        Ok(())
    }

    fn step(&mut self, step: &Step, si: usize) -> Result<(), HostError> {
        let (plan, threads) = (self.plan, self.threads);
        let start = std::time::Instant::now();
        let bufs = &mut *self.bufs;
        match step {
            Step::Kernel(k) => {
                let f = self
                    .kernels
                    .get(si)
                    .copied()
                    .flatten()
                    .ok_or_else(|| HostError::Runtime(format!("kernel {} has no compiled code", k.name)))?;
                let ptrs: Vec<*mut u8> = k.inputs.iter().chain(&k.outputs).map(|b| bufs.ptr(b.buffer)).collect();
                let work = k.reduce.as_ref().map_or(1, |r| r.shape.iter().product::<u64>());
                run_kernel_threads(f, &ptrs, k.num_elements(), work, threads);
            }
            Step::Library { inst, inputs, outputs, .. } if library_in_place(plan, inst, inputs, outputs, bufs, threads) => {}
            Step::Library { inst, inputs, outputs, .. } => {
                let ins: Vec<Tensor> = inputs.iter().map(|&b| bufs.tensor(plan, b)).collect();
                let types: Vec<&TensorType> = outputs.iter().map(|&b| &plan.buffers[b].ty).collect();
                let outs = library_step(inst, &ins, &types, threads)?;
                for (&b, out) in outputs.iter().zip(&outs) {
                    bufs.write(b, &pjc_tensor::buf_le_bytes(&out.data))?;
                }
            }
            Step::Collective { inst, input, output, .. } => {
                let (in_ty, out_ty) = (&plan.buffers[*input].ty, &plan.buffers[*output].ty);
                let out = self.hooks.collective(inst, bufs.bytes(*input), in_ty, out_ty)?;
                bufs.write(*output, &out).map_err(|_| HostError::Runtime(format!("collective '{}' gave {} bytes for a {out_ty} buffer", inst.op, out.len())))?;
            }
            Step::Control(c) => {
                pjc_plan::control::run_control(&plan.buffers, c, si, self, HostError::Runtime)?;
                // Carried buffers that swapped places in the arena go back
                // to their planned ones.
                self.bufs.restore_places();
            }
        }
        if let Some(t) = self.trace.as_deref_mut() {
            let (name, kind, bytes) = match step {
                Step::Kernel(k) => (k.name.clone(), "kernel", 0),
                Step::Library { inst, .. } if inst.op == Opcode::DotGeneral => (inst.op.to_string(), "gemm", 0),
                Step::Library { inst, .. } => (inst.op.to_string(), "library", 0),
                Step::Collective { inst, input, .. } => (inst.op.to_string(), "collective", plan.buffers[*input].bytes()),
                Step::Control(c) => (control_name(c).to_string(), "control", 0),
            };
            t.push(StepEvent { name, kind, start, dur: start.elapsed(), bytes, track: 0 });
        }
        Ok(())
    }
}

/// A control step's op, for traces.
fn control_name(c: &pjc_plan::Control) -> &'static str {
    match c {
        pjc_plan::Control::While { .. } => "while",
        pjc_plan::Control::Scan { .. } => "scan",
        pjc_plan::Control::Switch { .. } => "switch",
    }
}

/// Control flow on host buffers: windows are views (no copies), carried
/// buffers swap their allocations.
impl pjc_plan::control::Machine for HostRun<'_> {
    type Error = HostError;
    fn run_block(&mut self, block: &pjc_plan::Block, first: usize) -> Result<(), HostError> {
        self.steps(&block.steps, first)
    }
    fn copy(&mut self, dst: usize, src: usize) -> Result<(), HostError> {
        let len = self.bufs.bytes(src).len();
        let (from, to) = (self.bufs.ptr(src), self.bufs.ptr(dst));
        if self.bufs.bytes(dst).len() != len {
            return Err(HostError::Runtime(format!("copy of b{src} into b{dst} of another size")));
        }
        // SAFETY: two buffers of `len` bytes, both live here, so their memory
        // is disjoint (each its own allocation, or apart in the planned arena).
        unsafe { std::ptr::copy_nonoverlapping(from, to, len) };
        Ok(())
    }
    fn swap(&mut self, a: usize, b: usize) -> Result<(), HostError> {
        if self.bufs.views[a].is_some() || self.bufs.views[b].is_some() {
            return Err(HostError::Runtime(format!("swap of a window (b{a}, b{b})")));
        }
        self.bufs.place.swap(a, b);
        Ok(())
    }
    fn read_scalar(&mut self, b: usize) -> Result<Vec<u8>, HostError> {
        Ok(self.bufs.bytes(b).to_vec())
    }
    fn enter_window(&mut self, w: usize, whole: usize, pos: u64, _read: bool) -> Result<(), HostError> {
        let len = self.plan.buffers[w].bytes() as usize;
        self.bufs.view(w, whole, pos as usize * len, len)
    }
    fn leave_window(&mut self, _w: usize, _whole: usize, _pos: u64, _written: bool) -> Result<(), HostError> {
        Ok(())
    }
}

pub use pjc_plan::{PtxKernel, PtxModule};

#[cfg(test)]
mod tests {
    use super::HostBuf;

    #[test]
    fn memory_that_cannot_be_had_is_none_not_an_abort() {
        // f32[100000,100000,100000]: more than any address space holds.
        assert!(HostBuf::try_zeroed(4_000_000_000_000_000).is_none());
        let mut b = HostBuf::try_zeroed(13).unwrap();
        assert_eq!(b.bytes(), &[0; 13]);
        b.bytes_mut()[12] = 7;
        assert_eq!(b.bytes()[12], 7);
    }
}
