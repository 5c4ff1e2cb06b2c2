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
//! `pjc_tensor::combine` (floats in f64 rounded once, integers wrapped once,
//! pred as logic — also f16/bf16), and, for `all_reduce`, the reduced pieces
//! are shared with `MPI_Allgather`. The result is bitwise the same run to run,
//! for any process placement, and bitwise equal to `pjc eval`'s collectives.
//! The traffic is that of a ring all-reduce (reduce-scatter + all-gather).

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

/// The collectives of one device (rank) of a run.
pub struct MpiCollectives<'w> {
    /// The communicators are split from the world's and must not outlive it.
    _world: &'w World,
    mesh: Mesh,
    coords: Vec<u64>,
    groups: Vec<Group>,
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
        let mut c = MpiCollectives { _world: world, mesh: mesh.clone(), coords: mesh.coords(device), groups: vec![] };
        for t in tables {
            let (g, comm) = group_comm(world, t, device)?;
            c.groups.push(Group { axes: t.axes.clone(), size: g.members.len(), pos: g.pos, comm });
        }
        Ok(c)
    }

    fn group(&mut self, axes: &[String]) -> Result<&Group, RuntimeError> {
        self.groups.iter().find(|g| g.axes == axes).ok_or_else(|| RuntimeError::Internal(format!("the executable carries no device groups over [{}]", axes.join(", "))))
    }

    /// This device's coordinate along `axis`.
    pub fn coordinate(&self, axis: &str) -> Option<u64> {
        self.mesh.axis(axis).map(|i| self.coords[i])
    }

    /// Runs collective `inst` on this device's operand bytes (row-major, of
    /// type `in_ty`); returns the result's bytes (of type `out_ty`).
    pub fn run_bytes(&mut self, inst: &InstData, input: &[u8], in_ty: &TensorType, out_ty: &TensorType) -> Result<Vec<u8>, RuntimeError> {
        let axes = axes_of(inst);
        let int = |name: &str| inst.attr(name).and_then(|a| a.as_int()).unwrap_or(0);
        let kind = inst.attr("kind").and_then(|a| a.as_ident()).and_then(pjc_ir::ReduceKind::from_name).unwrap_or(pjc_ir::ReduceKind::Sum);
        let op = inst.op;
        let g = self.group(&axes)?;
        let (n, pos) = (g.size, g.pos);
        let es = in_ty.dtype.size_bytes();
        let in_shape = shape(in_ty);
        let out_bytes = out_ty.num_elements() as usize * out_ty.dtype.size_bytes();
        let Some(comm) = &g.comm else {
            // One member: every collective is the identity.
            return Ok(input.to_vec());
        };
        let combine = |recv: &[u8], piece: usize, piece_shape: Vec<usize>| -> Result<Vec<u8>, RuntimeError> {
            let parts: Vec<Tensor> = recv
                .chunks(piece)
                .map(|b| Tensor::new(piece_shape.clone(), pjc_tensor::buf_from_le_bytes(in_ty.dtype, b).expect("whole elements")))
                .collect();
            let refs: Vec<&Tensor> = parts.iter().collect();
            let r = pjc_tensor::combine(kind, &refs).map_err(|e| RuntimeError::Internal(e.to_string()))?;
            Ok(pjc_tensor::buf_to_le_bytes(&r.data))
        };
        match op {
            Opcode::AllReduce => {
                // Reduce-scatter over n equal pieces of the flat array (zero
                // padded), then all-gather of the reduced pieces.
                let elems = in_ty.num_elements() as usize;
                let c = elems.div_ceil(n);
                let piece = c * es;
                let mut send = input.to_vec();
                send.resize(n * piece, 0);
                check_count(send.len())?;
                let mut recv = vec![0u8; n * piece];
                comm.all_to_all_into(&send[..], &mut recv[..]);
                let mine = combine(&recv, piece, vec![c])?;
                let mut all = vec![0u8; n * piece];
                comm.all_gather_into(&mine[..], &mut all[..]);
                all.truncate(elems * es);
                Ok(all)
            }
            Opcode::ReduceScatter => {
                let dim = int("dim") as usize;
                let send = pack_chunks(input, &in_shape, dim, n, es);
                check_count(send.len())?;
                let mut recv = vec![0u8; n * out_bytes];
                comm.all_to_all_into(&send[..], &mut recv[..]);
                combine(&recv, out_bytes, shape(out_ty))
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
    fn axis_index(&self, axis: &str) -> Result<i64, pjc_host::HostError> {
        self.coordinate(axis).map(|c| c as i64).ok_or_else(|| pjc_host::HostError::Runtime(format!("axis_index of unknown axis '{axis}'")))
    }
}
