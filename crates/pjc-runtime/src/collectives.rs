//! The five collectives of spec section 8 over MPI, and `axis_index`.
//!
//! Every axis set a program's collectives use gets one communicator per group
//! of the compiled group tables ([`pjc_plan::GroupTable`]), built once before
//! the program runs (`MPI_Comm_split` of the world with
//! color = the device's coordinates on the other axes, key = its position in
//! the group order), so a communicator's rank *is* the group position.
//!
//! Data travels as raw little-endian element bytes (`MPI_BYTE`), so one code
//! path serves all 13 dtypes; splitting or concatenating along a dimension
//! that is not the leading one is done by packing chunks contiguously before
//! the call and unpacking after it (`pack.rs`).
//!
//! **Determinism.** Reductions never use `MPI_Allreduce`/`MPI_Reduce_scatter`
//! (whose combining order depends on OpenMPI's algorithm selection): every
//! device receives the group's pieces of the elements it is responsible for
//! (`MPI_Alltoall`), combines them in group order with the interpreter's own
//! rules (`pjc_tensor::combine`: floats in f64 rounded once, integers wrapped
//! once, pred as logic — also f16/bf16; f32 and f64 through its byte path
//! `combine_le_into`, the same bits without building tensors), and, for
//! `all_reduce`, the reduced pieces
//! are shared with `MPI_Allgather`. The result is bitwise the same run to run,
//! for any process placement, and bitwise equal to `pjc eval`'s collectives.
//! The traffic is that of a ring all-reduce (reduce-scatter + all-gather).
//!
//! **Overlap.** A collective the plan starts asynchronously (a start/done
//! pair, `pjc_fusion::schedule`) runs on this rank's collectives thread while
//! the step loop goes on; the loop waits for it at its done. Once that thread
//! exists every collective of the rank runs on it, in the plan's order, so
//! MPI is called by one thread at a time (MPI_THREAD_SERIALIZED) and the
//! ranks issue their collectives in the same order. Without that thread level
//! (or with `PJC_ASYNC_COLLECTIVES=0`) a started collective runs at once.

use crate::groups::{group_of, GroupOf};
use crate::pack::{concat_chunks, pack_chunks};
use crate::world::{check_count, World};
use crate::RuntimeError;
use mpi::topology::{Color, Communicator, SimpleCommunicator};
use mpi::traits::*;
use pjc_plan::GroupTable;
use pjc_ir::{InstData, Mesh, Opcode, TensorType};
use pjc_tensor::{Tensor, TensorError};

/// One device's group over an axis list.
struct Group {
    axes: Vec<String>,
    size: usize,
    pos: usize,
    /// None when the group has one member (no communication).
    comm: Option<SimpleCommunicator>,
}

/// The groups of a rank, shared with its collectives thread.
struct Groups(Vec<Group>);

// SAFETY: MPI communicators are handles MPI lets any thread use; pjc calls
// MPI from one thread at a time (the collectives thread while it exists, see
// the module doc), with a channel handoff ordering the calls.
unsafe impl Send for Groups {}
unsafe impl Sync for Groups {}

/// The collectives of one device (rank) of a run.
pub struct MpiCollectives<'w> {
    /// The communicators are split from the world's and must not outlive it.
    _world: &'w World,
    mesh: Mesh,
    coords: Vec<u64>,
    groups: std::sync::Arc<Groups>,
    /// The collectives thread, started by the first asynchronous collective
    /// when the world allows it.
    worker: Option<Worker>,
    allow_async: bool,
}

/// A started collective's result bytes' place (valid until its done).
#[derive(Clone, Copy)]
struct Place(*mut u8, usize);
// SAFETY: the step loop hands the place to the collectives thread and does
// not touch it until that thread's reply (`StepHooks::start`'s contract).
unsafe impl Send for Place {}

struct Job {
    inst: InstData,
    input: Place,
    in_ty: TensorType,
    out_ty: TensorType,
    output: Place,
    reply: std::sync::mpsc::Sender<Result<(std::time::Instant, std::time::Duration), RuntimeError>>,
}

struct Worker {
    jobs: Option<std::sync::mpsc::Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
    replies: std::collections::HashMap<u64, std::sync::mpsc::Receiver<Result<(std::time::Instant, std::time::Duration), RuntimeError>>>,
    next: u64,
}

impl Worker {
    fn start(groups: std::sync::Arc<Groups>) -> Worker {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("pjc-collectives".into())
            .spawn(move || {
                for job in rx {
                    let start = std::time::Instant::now();
                    // SAFETY: `StepHooks::start`'s contract: valid and
                    // untouched by the step loop until the reply.
                    let r = unsafe { run_at(&groups.0, &job.inst, job.input, &job.in_ty, &job.out_ty, job.output) }.map(|()| (start, start.elapsed()));
                    let _ = job.reply.send(r);
                }
            })
            .expect("a thread for the collectives");
        Worker { jobs: Some(tx), thread: Some(thread), replies: Default::default(), next: 1 }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing the queue ends the thread, which drops its share of the
        // communicators before the main thread frees them. With a collective
        // still unwaited (a run that failed between a start and its done),
        // the thread may wait in MPI for ranks that will not come: it is left
        // to end with the process (which then ends the job) instead of being
        // joined, which could hang.
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            if self.replies.is_empty() {
                let _ = t.join();
            }
        }
    }
}

fn axes_of(inst: &InstData) -> Vec<String> {
    inst.attr("axes").and_then(|a| a.as_idents()).unwrap_or_default()
}

fn shape(t: &TensorType) -> Vec<usize> {
    t.shape.iter().map(|&d| d as usize).collect()
}

/// `device`'s group in `table` and, when it has more than one member, an MPI
/// communicator for it whose rank is the group position (`MPI_Comm_split`
/// of the world: collective, every rank must call it with the same table).
/// Shared with the CUDA backend, which broadcasts NCCL ids over it.
pub(crate) fn group_comm(world: &World, table: &GroupTable, device: u64) -> Result<(GroupOf, Option<SimpleCommunicator>), RuntimeError> {
    let axes = &table.axes;
    let g = group_of(table, device).map_err(RuntimeError::Program)?;
    let size = g.members.len();
    if size == 1 {
        return Ok((g, None));
    }
    let world_comm = world.comm().ok_or_else(|| {
        RuntimeError::Env(format!("a group over [{}] has {size} devices, but this run has one process and no MPI", axes.join(", ")))
    })?;
    let comm = world_comm
        .split_by_color_with_key(Color::with_value(g.color as i32), g.pos as i32)
        .ok_or_else(|| RuntimeError::Env(format!("MPI_Comm_split for axes [{}] gave no communicator", axes.join(", "))))?;
    if comm.size() as usize != size || comm.rank() as usize != g.pos {
        return Err(RuntimeError::Env(format!(
            "rank {device}: the communicator for axes [{}] has size {} and rank {}, expected {size} and {}",
            axes.join(", "),
            comm.size(),
            comm.rank(),
            g.pos
        )));
    }
    Ok((g, Some(comm)))
}

impl<'w> MpiCollectives<'w> {
    /// Builds the communicators of every group table (collectively: every
    /// rank must call this with the same tables, as they do when they run
    /// the same executable). Rank r is mesh device r.
    pub fn new(world: &'w World, mesh: &Mesh, tables: &[GroupTable]) -> Result<MpiCollectives<'w>, RuntimeError> {
        world.check_device_count(mesh)?;
        let device = world.rank() as u64;
        let mut groups = vec![];
        for t in tables {
            let (g, comm) = group_comm(world, t, device)?;
            groups.push(Group { axes: t.axes.clone(), size: g.members.len(), pos: g.pos, comm });
        }
        let allow_async = world.async_collectives() && groups.iter().any(|g| g.comm.is_some());
        Ok(MpiCollectives { _world: world, mesh: mesh.clone(), coords: mesh.coords(device), groups: std::sync::Arc::new(Groups(groups)), worker: None, allow_async })
    }

    /// This device's coordinate along `axis`.
    pub fn coordinate(&self, axis: &str) -> Option<u64> {
        self.mesh.axis(axis).map(|i| self.coords[i])
    }

    /// Runs collective `inst` on this device's operand bytes (row-major, of
    /// type `in_ty`); returns the result's bytes (of type `out_ty`). On the
    /// collectives thread when it runs (after the collectives started before).
    pub fn run_bytes(&mut self, inst: &InstData, input: &[u8], in_ty: &TensorType, out_ty: &TensorType) -> Result<Vec<u8>, RuntimeError> {
        if self.worker.is_none() {
            return run_bytes(&self.groups.0, inst, input, in_ty, out_ty);
        }
        let mut out = vec![0u8; out_ty.num_elements() as usize * out_ty.dtype.size_bytes()];
        let (o, n) = (out.as_mut_ptr(), out.len());
        // SAFETY: `input` and `out` outlive the wait just below.
        let t = unsafe { self.submit(inst, input.as_ptr(), input.len(), in_ty, out_ty, o, n) };
        self.wait(t)?;
        Ok(out)
    }

    /// Queues a collective on the collectives thread (started on first use).
    ///
    /// # Safety
    /// As `StepHooks::start`.
    unsafe fn submit(&mut self, inst: &InstData, input: *const u8, in_len: usize, in_ty: &TensorType, out_ty: &TensorType, output: *mut u8, out_len: usize) -> u64 {
        let groups = self.groups.clone();
        let w = self.worker.get_or_insert_with(|| Worker::start(groups));
        let (tx, rx) = std::sync::mpsc::channel();
        let job = Job { inst: inst.clone(), input: Place(input as *mut u8, in_len), in_ty: in_ty.clone(), out_ty: out_ty.clone(), output: Place(output, out_len), reply: tx };
        let t = w.next;
        w.next += 1;
        w.replies.insert(t, rx);
        let _ = w.jobs.as_ref().expect("open while the worker lives").send(job);
        t
    }

    /// Waits for collective `t` queued by [`submit`](Self::submit).
    fn wait(&mut self, t: u64) -> Result<Option<(std::time::Instant, std::time::Duration)>, RuntimeError> {
        let Some(w) = self.worker.as_mut() else { return Ok(None) };
        let Some(rx) = w.replies.remove(&t) else { return Ok(None) };
        match rx.recv() {
            Ok(r) => r.map(Some),
            Err(_) => Err(RuntimeError::Internal("the collectives thread ended".into())),
        }
    }
}

fn group<'g>(groups: &'g [Group], axes: &[String]) -> Result<&'g Group, RuntimeError> {
    groups.iter().find(|g| g.axes == axes).ok_or_else(|| RuntimeError::Internal(format!("the executable carries no device groups over [{}]", axes.join(", "))))
}

/// Runs collective `inst` of a rank with `groups` (see [`MpiCollectives::run_bytes`]).
fn run_bytes(groups: &[Group], inst: &InstData, input: &[u8], in_ty: &TensorType, out_ty: &TensorType) -> Result<Vec<u8>, RuntimeError> {
    let mut out = vec![0u8; out_ty.num_elements() as usize * out_ty.dtype.size_bytes()];
    run_into(groups, inst, input, in_ty, out_ty, &mut out)?;
    Ok(out)
}

/// Scratch buffers at most this large are kept for the next collective of
/// the thread (a training step's all-reduces repeat every step: fresh buffers
/// cost a page fault and a zeroed page per 4 KiB each time, a third of a
/// 23 MB all-reduce's time on 2 ranks); larger ones are freed after use.
const KEEP_SCRATCH: usize = 64 << 20;

thread_local! {
    /// The all-reduce's received pieces and this device's reduced piece.
    static SCRATCH: std::cell::RefCell<(Vec<u8>, Vec<u8>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// The first `len` bytes of `buf`, grown to hold them (contents
/// unspecified: the caller overwrites them).
fn sized(buf: &mut Vec<u8>, len: usize) -> &mut [u8] {
    if buf.len() < len {
        buf.resize(len, 0);
    }
    &mut buf[..len]
}

/// Combines the `n` equal pieces laid end to end in `recv` into `mine` (one
/// piece's bytes) by the interpreter's rules (`pjc_tensor::combine`; f32 and
/// f64 straight from the bytes, the same bits).
fn combine_into(kind: pjc_ir::ReduceKind, dtype: pjc_ir::DType, recv: &[u8], n: usize, mine: &mut [u8]) -> Result<(), RuntimeError> {
    if pjc_tensor::combine_le_into(kind, dtype, recv, n, mine) {
        return Ok(());
    }
    let shape = vec![mine.len() / dtype.size_bytes()];
    let parts: Vec<Tensor> = recv.chunks(mine.len()).map(|b| Tensor::new(shape.clone(), pjc_tensor::buf_from_le_bytes(dtype, b).expect("whole elements"))).collect();
    let refs: Vec<&Tensor> = parts.iter().collect();
    let r = pjc_tensor::combine(kind, &refs).map_err(|e| RuntimeError::Internal(e.to_string()))?;
    mine.copy_from_slice(&pjc_tensor::buf_to_le_bytes(&r.data));
    Ok(())
}

/// [`run_into`] on raw places: straight into `output` when it does not
/// overlap `input`, else through a result vector.
///
/// # Safety
/// `input` and `output` are valid for their lengths and untouched by others
/// until this returns.
unsafe fn run_at(groups: &[Group], inst: &InstData, input: Place, in_ty: &TensorType, out_ty: &TensorType, output: Place) -> Result<(), RuntimeError> {
    let (a, b) = (input.0 as usize, output.0 as usize);
    let overlap = a < b + output.1 && b < a + input.1;
    // SAFETY: the contract above.
    let inp = unsafe { std::slice::from_raw_parts(input.0 as *const u8, input.1) };
    if overlap {
        let out = run_bytes(groups, inst, inp, in_ty, out_ty)?;
        // SAFETY: the contract above (the input is no longer read).
        return unsafe { pjc_host::put_result(inst, out_ty, &out, output.0, output.1) }.map_err(RuntimeError::Internal);
    }
    // SAFETY: the contract above; disjoint from `inp`.
    run_into(groups, inst, inp, in_ty, out_ty, unsafe { std::slice::from_raw_parts_mut(output.0, output.1) })
}

/// [`run_bytes`] writing the result into `output` (the result's bytes
/// exactly); the all-reduce gathers straight into it.
fn run_into(groups: &[Group], inst: &InstData, input: &[u8], in_ty: &TensorType, out_ty: &TensorType, output: &mut [u8]) -> Result<(), RuntimeError> {
    let out_bytes = out_ty.num_elements() as usize * out_ty.dtype.size_bytes();
    if output.len() != out_bytes {
        return Err(RuntimeError::Internal(format!("collective '{}': a {}-byte buffer for a {out_ty} result", inst.op, output.len())));
    }
    if inst.op == Opcode::AllReduce {
        let g = group(groups, &axes_of(inst))?;
        if let Some(comm) = &g.comm {
            // Reduce-scatter over n equal pieces of the flat array (zero
            // padded), then all-gather of the reduced pieces.
            let kind = inst.attr("kind").and_then(|a| a.as_ident()).and_then(pjc_ir::ReduceKind::from_name).unwrap_or(pjc_ir::ReduceKind::Sum);
            let (n, es) = (g.size, in_ty.dtype.size_bytes());
            let piece = (in_ty.num_elements() as usize).div_ceil(n) * es;
            // Padded only when the pieces do not divide the array.
            let padded;
            let send: &[u8] = if input.len() == n * piece {
                input
            } else {
                let mut p = input.to_vec();
                p.resize(n * piece, 0);
                padded = p;
                &padded
            };
            check_count(send.len())?;
            return SCRATCH.with(|s| {
                let (recv, mine) = &mut *s.borrow_mut();
                let r = sized(recv, n * piece);
                comm.all_to_all_into(send, &mut r[..]);
                let m = sized(mine, piece);
                combine_into(kind, in_ty.dtype, r, n, m)?;
                if output.len() == n * piece {
                    comm.all_gather_into(&m[..], output);
                } else {
                    let mut all = vec![0u8; n * piece];
                    comm.all_gather_into(&m[..], &mut all[..]);
                    output.copy_from_slice(&all[..output.len()]);
                }
                for b in [recv, mine] {
                    if b.len() > KEEP_SCRATCH {
                        *b = Vec::new();
                    }
                }
                Ok(())
            });
        }
    }
    let out = run_vec(groups, inst, input, in_ty, out_ty)?;
    output.copy_from_slice(&out);
    Ok(())
}

fn run_vec(groups: &[Group], inst: &InstData, input: &[u8], in_ty: &TensorType, out_ty: &TensorType) -> Result<Vec<u8>, RuntimeError> {
    {
        let axes = axes_of(inst);
        let int = |name: &str| inst.attr(name).and_then(|a| a.as_int()).unwrap_or(0);
        let kind = inst.attr("kind").and_then(|a| a.as_ident()).and_then(pjc_ir::ReduceKind::from_name).unwrap_or(pjc_ir::ReduceKind::Sum);
        let op = inst.op;
        let g = group(groups, &axes)?;
        let (n, pos) = (g.size, g.pos);
        let es = in_ty.dtype.size_bytes();
        let in_shape = shape(in_ty);
        let out_bytes = out_ty.num_elements() as usize * out_ty.dtype.size_bytes();
        let Some(comm) = &g.comm else {
            // One member: every collective is the identity.
            return Ok(input.to_vec());
        };
        match op {
            // `run_into` runs every all-reduce of a group of several.
            Opcode::AllReduce => Err(RuntimeError::Internal("all-reduce outside run_into".into())),
            Opcode::ReduceScatter => {
                let dim = int("dim") as usize;
                let send = pack_chunks(input, &in_shape, dim, n, es);
                check_count(send.len())?;
                let mut recv = vec![0u8; n * out_bytes];
                comm.all_to_all_into(&send[..], &mut recv[..]);
                let mut mine = vec![0u8; out_bytes];
                combine_into(kind, in_ty.dtype, &recv, n, &mut mine)?;
                Ok(mine)
            }
            Opcode::AllGather => {
                let dim = int("dim") as usize;
                check_count(n * input.len())?;
                let mut recv = vec![0u8; n * input.len()];
                comm.all_gather_into(input, &mut recv[..]);
                Ok(concat_chunks(&recv, &in_shape, dim, n, es))
            }
            Opcode::AllToAll => {
                let (sd, cd) = (int("split_dim") as usize, int("concat_dim") as usize);
                let send = pack_chunks(input, &in_shape, sd, n, es);
                check_count(send.len())?;
                let mut recv = vec![0u8; send.len()];
                comm.all_to_all_into(&send[..], &mut recv[..]);
                let mut chunk = in_shape.clone();
                chunk[sd] /= n;
                Ok(concat_chunks(&recv, &chunk, cd, n, es))
            }
            Opcode::CollectivePermute => {
                let shift = int("shift").rem_euclid(n as i64) as usize;
                if shift == 0 {
                    return Ok(input.to_vec());
                }
                check_count(input.len())?;
                let (to, from) = ((pos + shift) % n, (pos + n - shift) % n);
                let mut recv = vec![0u8; input.len()];
                mpi::point_to_point::send_receive_into(input, &comm.process_at_rank(to as i32), &mut recv[..], &comm.process_at_rank(from as i32));
                Ok(recv)
            }
            op => Err(RuntimeError::Internal(format!("'{op}' is not a collective"))),
        }
    }
}

impl pjc_plan::exec::Collectives for MpiCollectives<'_> {
    fn run(&mut self, inst: &InstData, input: &Tensor, out_ty: &TensorType) -> Result<Tensor, TensorError> {
        let in_ty = TensorType::new(input.dtype(), input.shape.iter().map(|&d| d as u64).collect());
        let bytes = pjc_tensor::buf_to_le_bytes(&input.data);
        let out = self.run_bytes(inst, &bytes, &in_ty, out_ty).map_err(|e| TensorError::Invalid(e.to_string()))?;
        let buf = pjc_tensor::buf_from_le_bytes(out_ty.dtype, &out).map_err(TensorError::Invalid)?;
        Ok(Tensor::new(shape(out_ty), buf))
    }

    fn axis_index(&self, axis: &str) -> i64 {
        self.coordinate(axis).unwrap_or(0) as i64
    }
}

impl pjc_host::StepHooks for MpiCollectives<'_> {
    fn collective(&mut self, inst: &InstData, input: &[u8], in_ty: &TensorType, out_ty: &TensorType) -> Result<Vec<u8>, pjc_host::HostError> {
        self.run_bytes(inst, input, in_ty, out_ty).map_err(|e| pjc_host::HostError::Runtime(e.to_string()))
    }
    unsafe fn start(&mut self, inst: &InstData, input: *const u8, in_len: usize, in_ty: &TensorType, out_ty: &TensorType, output: *mut u8, out_len: usize) -> Result<u64, pjc_host::HostError> {
        let one = group(&self.groups.0, &axes_of(inst)).is_ok_and(|g| g.comm.is_none());
        if !self.allow_async || one {
            let r = match self.worker.is_none() {
                // SAFETY: the caller's contract, passed on.
                true => unsafe { run_at(&self.groups.0, inst, Place(input as *mut u8, in_len), in_ty, out_ty, Place(output, out_len)) },
                // SAFETY: the caller's contract; on the collectives thread,
                // after its earlier collectives (one queue), waited for here.
                false => {
                    let t = unsafe { self.submit(inst, input, in_len, in_ty, out_ty, output, out_len) };
                    self.wait(t).map(|_| ())
                }
            };
            r.map_err(|e| pjc_host::HostError::Runtime(e.to_string()))?;
            return Ok(0);
        }
        // SAFETY: the caller's contract, passed on to the collectives thread.
        Ok(unsafe { self.submit(inst, input, in_len, in_ty, out_ty, output, out_len) })
    }
    fn finish(&mut self, ticket: u64) -> Result<Option<(std::time::Instant, std::time::Duration)>, pjc_host::HostError> {
        self.wait(ticket).map_err(|e| pjc_host::HostError::Runtime(e.to_string()))
    }
    fn axis_index(&self, axis: &str) -> Result<i64, pjc_host::HostError> {
        self.coordinate(axis).map(|c| c as i64).ok_or_else(|| pjc_host::HostError::Runtime(format!("axis_index of unknown axis '{axis}'")))
    }
}
