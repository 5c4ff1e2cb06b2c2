//! The collectives of spec section 8 with NCCL, on the backend's one stream.
//!
//! **Communicators.** Every compiled group table (`pjc_plan::GroupTable`) gets one NCCL
//! communicator per group, built before the first run: the group's position 0
//! creates the unique id (`ncclGetUniqueId`) and broadcasts it over an MPI
//! communicator of the group (split exactly as `collectives.rs` splits it), then
//! every member calls `ncclCommInitRank(size, id, position)`, so the NCCL rank
//! *is* the group position and the group order is spec section 8's. Groups of
//! one device also get a communicator when NCCL is loadable (a locally made
//! id), so a single GPU runs the same NCCL calls as a multi-GPU job; without
//! NCCL a group of one is served by device copies (every collective over one
//! device is the identity).
//!
//! **Data layout** equals `collectives.rs`: `all_gather` and `reduce_scatter`
//! along dim 0, and `all_to_all`'s chunks, move in group order; along another
//! dimension the chunks are packed on the device first ([`super::geometry::pack_plan`],
//! strided 2-D copies into a scratch buffer) and unpacked after
//! ([`super::geometry::concat_plan`]). Data movement is byte-typed (`ncclInt8`), so it
//! serves every dtype.
//!
//! **Reductions** (`all_reduce`, `reduce_scatter`) run in NCCL's element type:
//! f32/f64/f16/bf16 round at every step of NCCL's algorithm, so results equal
//! the CPU path's (which combines in f64 and rounds once, in group order) up
//! to rounding, not bitwise; NCCL's max/min on floats do not promise the
//! spec's NaN propagation or -0.0 < +0.0. Integer sums wrap as on the CPU.
//! `pred` uses u8 with max (sum, max = or) and min (prod, min = and). NCCL
//! has no 16-bit integers: reductions of i16/u16 are refused up front.

use super::geometry::{concat_plan, pack_plan, Copy2D};
use super::libs::{Comm, Nccl};
use crate::collectives::group_comm;
use crate::world::World;
use crate::RuntimeError;
use cudarc::driver::sys;
use cudarc::nccl::sys::{ncclDataType_t as Nt, ncclRedOp_t as Nop, ncclUniqueId};
use mpi::traits::*;
use pjc_ir::{DType, InstData, Opcode, TensorType};
use pjc_plan::GroupTable;
use std::ffi::{c_int, c_void};

/// One device's group over an axis list.
pub struct Group {
    pub axes: Vec<String>,
    pub size: usize,
    pub pos: usize,
    /// None: a group of one without NCCL (collectives are copies).
    pub comm: Option<Comm>,
}

/// Builds the groups of every axis list (collective over the world: every
/// rank calls it with the same lists, in the same order).
pub fn build_groups(world: &World, tables: &[GroupTable], nccl: Option<&Nccl>) -> Result<Vec<Group>, RuntimeError> {
    let device = world.rank() as u64;
    let mut groups: Vec<Group> = vec![];
    for t in tables {
        let a = &t.axes;
        let (g, mpi_comm) = group_comm(world, t, device)?;
        let size = g.members.len();
        let Some(api) = nccl else {
            if size > 1 {
                return Err(RuntimeError::Internal("a multi-device group without NCCL (checked earlier)".into()));
            }
            groups.push(Group { axes: a.clone(), size, pos: g.pos, comm: None });
            continue;
        };
        let mut id = ncclUniqueId { internal: [0; 128] };
        if g.pos == 0 {
            // SAFETY: writes one ncclUniqueId.
            api.check(unsafe { (api.get_unique_id)(&mut id) }, "ncclGetUniqueId").map_err(RuntimeError::Env)?;
        }
        if let Some(c) = &mpi_comm {
            let mut bytes: Vec<u8> = id.internal.iter().map(|&x| x as u8).collect();
            c.process_at_rank(0).broadcast_into(&mut bytes[..]);
            for (d, s) in id.internal.iter_mut().zip(&bytes) {
                *d = *s as _;
            }
        }
        let mut comm: Comm = std::ptr::null_mut();
        // SAFETY: the id came from position 0 of this group; the CUDA context
        // of this device is current on this thread.
        let code = unsafe { (api.comm_init_rank)(&mut comm, size as c_int, id, g.pos as c_int) };
        if let Err(e) = api.check(code, &format!("ncclCommInitRank for axes [{}] ({size} devices, position {})", a.join(", "), g.pos)) {
            destroy(&groups, nccl);
            return Err(RuntimeError::Env(e));
        }
        groups.push(Group { axes: a.clone(), size, pos: g.pos, comm: Some(comm) });
    }
    Ok(groups)
}

/// Destroys the groups' NCCL communicators.
pub fn destroy(groups: &[Group], nccl: Option<&Nccl>) {
    let Some(api) = nccl else { return };
    for g in groups {
        if let Some(c) = g.comm {
            // SAFETY: created by ncclCommInitRank, destroyed once (the
            // caller drops the groups afterwards).
            unsafe { (api.comm_destroy)(c) };
        }
    }
}

/// What one collective step does on this device, decided before the first run.
#[derive(Clone, Debug, PartialEq)]
pub enum CollOp {
    /// A device copy of `bytes` (a group of one without NCCL, or a permute by
    /// a multiple of the group size).
    Copy {
        bytes: usize,
    },
    /// Nothing to move (zero-size operand).
    Nothing,
    AllReduce {
        count: usize,
        dtype: Nt,
        op: Nop,
    },
    /// Pack (if a non-leading dim) into scratch 0, then reduce-scatter
    /// `count` elements per device.
    ReduceScatter {
        pack: Option<Vec<Copy2D>>,
        count: usize,
        dtype: Nt,
        op: Nop,
    },
    /// Gather `bytes` from every member (into scratch 0 when `unpack`, then
    /// concatenated along the dim into the output).
    AllGather {
        bytes: usize,
        unpack: Option<Vec<Copy2D>>,
    },
    /// Pack into scratch 0 (if needed), exchange `chunk` bytes with every
    /// member (into scratch 1 when `unpack`), concatenate.
    AllToAll {
        pack: Option<Vec<Copy2D>>,
        chunk: usize,
        unpack: Option<Vec<Copy2D>>,
    },
    /// Send `bytes` to position `to`, receive from position `from`.
    Permute {
        to: usize,
        from: usize,
        bytes: usize,
    },
}

impl CollOp {
    /// Scratch buffers (0 and 1) this step needs, in bytes.
    pub fn scratch(&self, in_bytes: usize, out_bytes: usize) -> [usize; 2] {
        match self {
            CollOp::ReduceScatter { pack: Some(_), .. } => [in_bytes, 0],
            CollOp::AllGather { unpack: Some(_), .. } => [out_bytes, 0],
            CollOp::AllToAll { pack, unpack, .. } => [if pack.is_some() { in_bytes } else { 0 }, if unpack.is_some() { out_bytes } else { 0 }],
            _ => [0, 0],
        }
    }
}

/// NCCL's type for reducing `dtype` with `kind`, and its operation.
pub fn reduction_type(dtype: DType, kind: &str, op: Opcode) -> Result<(Nt, Nop), RuntimeError> {
    let red = |k: &str| match k {
        "sum" => Some(Nop::ncclSum),
        "prod" => Some(Nop::ncclProd),
        "max" => Some(Nop::ncclMax),
        "min" => Some(Nop::ncclMin),
        _ => None,
    };
    let Some(mut nop) = red(kind) else {
        return Err(RuntimeError::Env(format!("unsupported: '{op}' with kind={kind} on the CUDA backend")));
    };
    let nt = match dtype {
        DType::F64 => Nt::ncclFloat64,
        DType::F32 => Nt::ncclFloat32,
        DType::F16 => Nt::ncclFloat16,
        DType::BF16 => Nt::ncclBfloat16,
        DType::I64 => Nt::ncclInt64,
        DType::I32 => Nt::ncclInt32,
        DType::I8 => Nt::ncclInt8,
        DType::U64 => Nt::ncclUint64,
        DType::U32 => Nt::ncclUint32,
        DType::U8 => Nt::ncclUint8,
        DType::Pred => {
            // Booleans are bytes 0/1: or = max, and = min.
            nop = if matches!(nop, Nop::ncclSum | Nop::ncclMax) { Nop::ncclMax } else { Nop::ncclMin };
            Nt::ncclUint8
        }
        DType::I16 | DType::U16 => {
            return Err(RuntimeError::Env(format!(
                "unsupported: '{op}' kind={kind} of {dtype} on the CUDA backend (NCCL has no 16-bit integer type; use --device cpu or convert to i32)"
            )))
        }
    };
    Ok((nt, nop))
}

fn shape(t: &TensorType) -> Vec<usize> {
    t.shape.iter().map(|&d| d as usize).collect()
}

/// Decides what collective `inst` does on a device at position `pos` of a
/// group of `n` (`has_comm`: NCCL serves the group).
pub fn plan_collective(
    inst: &InstData,
    in_ty: &TensorType,
    out_ty: &TensorType,
    n: usize,
    pos: usize,
    has_comm: bool,
) -> Result<CollOp, RuntimeError> {
    let int = |name: &str| inst.attr(name).and_then(|a| a.as_int()).unwrap_or(0);
    let kind = inst.attr("kind").and_then(|a| a.as_ident()).unwrap_or("sum").to_string();
    let es = in_ty.dtype.size_bytes();
    let in_bytes = in_ty.num_elements() as usize * es;
    let out_bytes = out_ty.num_elements() as usize * out_ty.dtype.size_bytes();
    let op = inst.op;
    // Refuse unsupported reductions whatever the group size, so a program's
    // support does not depend on the mesh.
    let red = match op.collective() {
        Some(c) if c.reduces() => Some(reduction_type(in_ty.dtype, &kind, op)?),
        Some(_) => None,
        None => return Err(RuntimeError::Internal(format!("'{op}' is not a collective"))),
    };
    if in_bytes == 0 && out_bytes == 0 {
        return Ok(CollOp::Nothing);
    }
    if !has_comm {
        if n != 1 {
            return Err(RuntimeError::Internal(format!("'{op}' over {n} devices without NCCL")));
        }
        return Ok(CollOp::Copy { bytes: in_bytes });
    }
    let in_shape = shape(in_ty);
    Ok(match op {
        Opcode::AllReduce => {
            let (dtype, op) = red.expect("a reduction");
            CollOp::AllReduce { count: in_ty.num_elements() as usize, dtype, op }
        }
        Opcode::ReduceScatter => {
            let (dtype, op) = red.expect("a reduction");
            let dim = int("dim") as usize;
            CollOp::ReduceScatter { pack: pack_plan(&in_shape, dim, n, es), count: out_ty.num_elements() as usize, dtype, op }
        }
        Opcode::AllGather => CollOp::AllGather { bytes: in_bytes, unpack: concat_plan(&in_shape, int("dim") as usize, n, es) },
        Opcode::AllToAll => {
            let (sd, cd) = (int("split_dim") as usize, int("concat_dim") as usize);
            let mut chunk = in_shape.clone();
            chunk[sd] /= n;
            CollOp::AllToAll { pack: pack_plan(&in_shape, sd, n, es), chunk: in_bytes / n, unpack: concat_plan(&chunk, cd, n, es) }
        }
        Opcode::CollectivePermute => {
            let shift = int("shift").rem_euclid(n as i64) as usize;
            if shift == 0 {
                CollOp::Copy { bytes: in_bytes }
            } else {
                CollOp::Permute { to: (pos + shift) % n, from: (pos + n - shift) % n, bytes: in_bytes }
            }
        }
        _ => unreachable!("checked above"),
    })
}

/// Device addresses one collective step works on.
pub struct Ptrs {
    pub input: sys::CUdeviceptr,
    pub output: sys::CUdeviceptr,
    pub scratch: [sys::CUdeviceptr; 2],
}

fn driver(r: sys::CUresult, what: &str) -> Result<(), String> {
    r.result().map_err(|e| format!("{what}: {e}"))
}

/// Runs `copies` from `src` to `dst` on `stream`.
///
/// # Safety
/// Every copy must lie inside the allocations at `src` and `dst`, on the
/// current context's `stream`.
pub unsafe fn copy_2d(copies: &[Copy2D], src: sys::CUdeviceptr, dst: sys::CUdeviceptr, stream: sys::CUstream) -> Result<(), String> {
    for c in copies {
        if c.width == 0 || c.height == 0 {
            continue;
        }
        let pitch_ok = c.src_pitch.max(c.dst_pitch) <= i32::MAX as usize;
        if !pitch_ok {
            // Beyond the driver's pitch limit: one copy per row.
            for r in 0..c.height {
                let (s, d) = (src + (c.src_off + r * c.src_pitch) as u64, dst + (c.dst_off + r * c.dst_pitch) as u64);
                // SAFETY: both ranges lie inside their allocations (the plan
                // was made from the buffers' shapes).
                driver(unsafe { sys::cuMemcpyDtoDAsync_v2(d, s, c.width, stream) }, "cuMemcpyDtoDAsync")?;
            }
            continue;
        }
        let p = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: std::ptr::null(),
            srcDevice: src + c.src_off as u64,
            srcArray: std::ptr::null_mut(),
            srcPitch: c.src_pitch,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            dstHost: std::ptr::null_mut(),
            dstDevice: dst + c.dst_off as u64,
            dstArray: std::ptr::null_mut(),
            dstPitch: c.dst_pitch,
            WidthInBytes: c.width,
            Height: c.height,
        };
        // SAFETY: as above.
        driver(unsafe { sys::cuMemcpy2DAsync_v2(&p, stream) }, "cuMemcpy2DAsync")?;
    }
    Ok(())
}

fn dtod(dst: sys::CUdeviceptr, src: sys::CUdeviceptr, bytes: usize, stream: sys::CUstream) -> Result<(), String> {
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: both buffers hold at least `bytes`.
    driver(unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream) }, "cuMemcpyDtoDAsync")
}

/// Enqueues `op` on `stream`.
///
/// # Safety
/// `p` must point at allocations of the sizes `op` was planned for (scratch
/// included), `group` must be this device's group of the step, and `stream`
/// must belong to the current context.
pub unsafe fn run(op: &CollOp, p: &Ptrs, group: &Group, nccl: Option<&Nccl>, stream: sys::CUstream) -> Result<(), String> {
    let (comm, api) = match (group.comm, nccl) {
        (Some(c), Some(api)) => (c, Some(api)),
        _ => (std::ptr::null_mut(), None),
    };
    let need = || api.ok_or_else(|| "internal error: an NCCL collective without NCCL".to_string());
    let s = stream as *mut c_void;
    let int8 = Nt::ncclInt8 as c_int;
    let vp = |x: sys::CUdeviceptr| x as *mut c_void;
    match op {
        CollOp::Nothing => Ok(()),
        CollOp::Copy { bytes } => dtod(p.output, p.input, *bytes, stream),
        CollOp::AllReduce { count, dtype, op } => {
            let api = need()?;
            // SAFETY: input and output hold `count` elements of `dtype`.
            api.check(unsafe { (api.all_reduce)(vp(p.input), vp(p.output), *count, *dtype as c_int, *op as c_int, comm, s) }, "ncclAllReduce")
        }
        CollOp::ReduceScatter { pack, count, dtype, op } => {
            let api = need()?;
            let mut src = p.input;
            if let Some(pl) = pack {
                unsafe { copy_2d(pl, p.input, p.scratch[0], stream)? };
                src = p.scratch[0];
            }
            // SAFETY: src holds n * count elements, the output count.
            api.check(unsafe { (api.reduce_scatter)(vp(src), vp(p.output), *count, *dtype as c_int, *op as c_int, comm, s) }, "ncclReduceScatter")
        }
        CollOp::AllGather { bytes, unpack } => {
            let api = need()?;
            let dst = if unpack.is_some() { p.scratch[0] } else { p.output };
            // SAFETY: dst holds n * bytes.
            api.check(unsafe { (api.all_gather)(vp(p.input), vp(dst), *bytes, int8, comm, s) }, "ncclAllGather")?;
            match unpack {
                Some(pl) => unsafe { copy_2d(pl, dst, p.output, stream) },
                None => Ok(()),
            }
        }
        CollOp::AllToAll { pack, chunk, unpack } => {
            let api = need()?;
            let mut src = p.input;
            if let Some(pl) = pack {
                unsafe { copy_2d(pl, p.input, p.scratch[0], stream)? };
                src = p.scratch[0];
            }
            let dst = if unpack.is_some() { p.scratch[1] } else { p.output };
            // SAFETY: src and dst hold n chunks; the group call pairs every
            // send with the peer's receive.
            unsafe {
                api.check((api.group_start)(), "ncclGroupStart")?;
                for j in 0..group.size {
                    let off = (j * chunk) as u64;
                    api.check((api.send)(vp(src + off), *chunk, int8, j as c_int, comm, s), "ncclSend")?;
                    api.check((api.recv)(vp(dst + off), *chunk, int8, j as c_int, comm, s), "ncclRecv")?;
                }
                api.check((api.group_end)(), "ncclGroupEnd (all_to_all)")?;
            }
            match unpack {
                Some(pl) => unsafe { copy_2d(pl, dst, p.output, stream) },
                None => Ok(()),
            }
        }
        CollOp::Permute { to, from, bytes } => {
            let api = need()?;
            // SAFETY: input and output hold `bytes`.
            unsafe {
                api.check((api.group_start)(), "ncclGroupStart")?;
                api.check((api.send)(vp(p.input), *bytes, int8, *to as c_int, comm, s), "ncclSend")?;
                api.check((api.recv)(vp(p.output), *bytes, int8, *from as c_int, comm, s), "ncclRecv")?;
                api.check((api.group_end)(), "ncclGroupEnd (collective_permute)")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pjc_ir::AttrValue;

    fn inst(op: Opcode, attrs: &[(&str, AttrValue)]) -> InstData {
        let mut i = InstData::new(op);
        for (k, v) in attrs {
            i.set_attr(k, v.clone());
        }
        i
    }

    #[test]
    fn reductions_map_to_nccl_types() {
        assert_eq!(reduction_type(DType::F32, "sum", Opcode::AllReduce).unwrap(), (Nt::ncclFloat32, Nop::ncclSum));
        assert_eq!(reduction_type(DType::BF16, "max", Opcode::AllReduce).unwrap(), (Nt::ncclBfloat16, Nop::ncclMax));
        assert_eq!(reduction_type(DType::Pred, "sum", Opcode::AllReduce).unwrap(), (Nt::ncclUint8, Nop::ncclMax));
        assert_eq!(reduction_type(DType::Pred, "prod", Opcode::AllReduce).unwrap(), (Nt::ncclUint8, Nop::ncclMin));
        let e = reduction_type(DType::I16, "sum", Opcode::ReduceScatter).unwrap_err().to_string();
        assert!(e.starts_with("unsupported:"), "{e}");
    }

    #[test]
    fn plans_follow_the_cpu_layout() {
        let t = |d: DType, s: &[u64]| TensorType::new(d, s.to_vec());
        let ag = inst(Opcode::AllGather, &[("dim", AttrValue::Int(1))]);
        let op = plan_collective(&ag, &t(DType::F32, &[2, 3]), &t(DType::F32, &[2, 12]), 4, 1, true).unwrap();
        let CollOp::AllGather { bytes: 24, unpack: Some(pl) } = &op else { panic!("{op:?}") };
        assert_eq!(pl.len(), 4);
        assert_eq!(op.scratch(24, 96), [96, 0]);
        // Dim 0: straight into the output.
        let ag0 = inst(Opcode::AllGather, &[("dim", AttrValue::Int(0))]);
        assert_eq!(
            plan_collective(&ag0, &t(DType::F32, &[2, 3]), &t(DType::F32, &[8, 3]), 4, 1, true).unwrap(),
            CollOp::AllGather { bytes: 24, unpack: None }
        );
        // Permute by -1 in a group of 4 at position 0: to 3, from 1.
        let cp = inst(Opcode::CollectivePermute, &[("shift", AttrValue::Int(-1))]);
        assert_eq!(
            plan_collective(&cp, &t(DType::I32, &[5]), &t(DType::I32, &[5]), 4, 0, true).unwrap(),
            CollOp::Permute { to: 3, from: 1, bytes: 20 }
        );
        let cp4 = inst(Opcode::CollectivePermute, &[("shift", AttrValue::Int(4))]);
        assert_eq!(plan_collective(&cp4, &t(DType::I32, &[5]), &t(DType::I32, &[5]), 4, 0, true).unwrap(), CollOp::Copy { bytes: 20 });
        // Groups of one without NCCL copy, but unsupported reductions are
        // refused regardless.
        let ar = inst(Opcode::AllReduce, &[("kind", AttrValue::Ident("sum".into()))]);
        assert_eq!(plan_collective(&ar, &t(DType::F32, &[3]), &t(DType::F32, &[3]), 1, 0, false).unwrap(), CollOp::Copy { bytes: 12 });
        assert!(plan_collective(&ar, &t(DType::U16, &[3]), &t(DType::U16, &[3]), 1, 0, false).is_err());
        // all_to_all split 1 concat 0 over 2: pack, no unpack.
        let a2a = inst(Opcode::AllToAll, &[("split_dim", AttrValue::Int(1)), ("concat_dim", AttrValue::Int(0))]);
        let op = plan_collective(&a2a, &t(DType::F32, &[2, 4]), &t(DType::F32, &[4, 2]), 2, 0, true).unwrap();
        let CollOp::AllToAll { pack: Some(_), chunk: 16, unpack: None } = op else { panic!("{op:?}") };
    }
}
