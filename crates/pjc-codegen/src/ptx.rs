//! NVPTX code generation (`nvptx64-nvidia-cuda`, `sm_80`/`sm_90`).
//!
//! Every kernel is a `.entry` (LLVM's `ptx_kernel` calling convention) with the
//! parameters
//!
//! ```text
//! KERNEL(in0, ..., out0, ..., i64 n)      // pointers to global memory
//! ```
//!
//! where `n` is the number of output points.
//!
//! - Elementwise kernels: a grid-stride loop over the points; any grid and block
//!   size work (the runtime picks e.g. 256 threads and enough blocks).
//! - Wide elementwise kernels ([`PtxKernel::vector_width`] = [`VECTOR_WIDTH`]):
//!   an elementwise kernel with at least 4 points, all of whose buffers have
//!   elements of at most 4 bytes and whose every load reads its input at the
//!   output point's own linear index (see [`vector_width`]), handles
//!   [`VECTOR_WIDTH`] = 4 consecutive points per thread and grid-stride step:
//!   thread `t` of the grid takes points `4t..4t+4`, then
//!   `4(t + gridsize)..`, and so on over the `n / 4` whole groups, with one
//!   access per buffer and group: 16 bytes for 32-bit elements
//!   (`ld.global.v4.b32`/`st.global.v4.b32`), 8 for 16-bit ones
//!   (`ld.global.v4.b16`, `st.global.v2.b32`), 4 for 1-byte ones (see
//!   `widen_accesses` for how). The last `n % 4` points are done by a scalar
//!   grid-stride loop (thread `t` takes point `4(n / 4) + t`, ...). Any grid
//!   and block size still work; `ceil(n / 4)` threads cover the output in one
//!   step. All other kernels (64-bit elements, reductions, any load at
//!   another index: transpose, slice, broadcast, ...) keep one point per
//!   thread and step.
//! - Reduction kernels: one-dimensional blocks whose size is a multiple of 32
//!   and at most [`REDUCE_BLOCK`] = 256 (the kernel is compiled with
//!   `.maxntid 256`; launch 256); block `b` handles output points
//!   `b, b + gridDim.x, ...`; the threads stride over the reduction space,
//!   accumulating in `reduce.acc`, then combine with warp shuffles
//!   (`shfl.sync.down`) and one shared-memory slot per warp, and thread 0
//!   rounds once and stores. (Many tiny reductions waste most of each block:
//!   one block per output point is the simple schedule, not the fast one.)
//!
//! **Alignment contract:** every buffer pointer passed to a kernel is 16-byte
//! aligned. The kernels declare it ([`BUFFER_ALIGN`]: `align 16` on the
//! pointer parameters, `.ptr .global .align 16` in the PTX) and the wide
//! accesses rely on it: a misaligned pointer makes them fault. The runtime
//! allocates device buffers 256-byte aligned (as `cudaMalloc` does) and the
//! plan's arena offsets are multiples of 64 bytes (`pjc_fusion::plan_memory`), so
//! every buffer a plan step receives satisfies it; a runtime that passes a
//! pointer into the middle of an allocation must keep it 16-byte aligned.
//!
//! Math functions come from libdevice (`__nv_expf`, ...): the bitcode is linked
//! in lazily (only the functions a kernel calls are read and linked:
//! [`lazy_libdevice`]), everything but the kernels is internalized, and the
//! optimization pipeline ([`OptLevel`]) keeps only what is used (`__nvvm_reflect` folded with FTZ off: subnormals are kept).

use crate::lower::{live_nodes, reg_type, storage_type, Lower, Target as LowerTarget};
use crate::{CodegenError, OptLevel};
use inkwell::context::Context;
use inkwell::module::{FlagBehavior, Linkage, Module};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple,
};
use inkwell::types::{AnyType, BasicType, BasicTypeEnum};
use inkwell::values::{
    BasicValue, BasicValueEnum, FunctionValue, InstructionOpcode, InstructionValue, IntValue,
    Operand, PointerValue,
};
use inkwell::{AddressSpace, IntPredicate, OptimizationLevel};
use pjc_plan::kernel::{compute_type, IndexOp, Kernel, Node, NodeId};
use pjc_plan::Plan;
use pjc_ir::DType;
use std::path::PathBuf;

pub const TRIPLE: &str = "nvptx64-nvidia-cuda";
/// Points per thread and grid-stride step of a wide elementwise kernel.
pub const VECTOR_WIDTH: u32 = 4;
/// Alignment (bytes) every buffer pointer parameter is declared with: the
/// runtime's contract (see the module documentation).
pub const BUFFER_ALIGN: u32 = 16;
/// Threads per block of a reduction kernel.
pub const REDUCE_BLOCK: u32 = 256;
/// The `ptx_kernel` calling convention: makes a function a `.entry`.
const PTX_KERNEL_CC: u32 = 71;

pub use pjc_host::{PtxKernel, PtxModule};

struct Nvptx;

impl<'ctx> LowerTarget<'ctx> for Nvptx {
    fn math_symbol(&self, name: &str) -> String {
        format!("__nv_{name}")
    }
    fn buffer_addrspace(&self) -> AddressSpace {
        AddressSpace::from(1u16)
    }
    fn point_range(
        &self,
        lw: &Lower<'_, 'ctx>,
        count: IntValue<'ctx>,
    ) -> (IntValue<'ctx>, IntValue<'ctx>, IntValue<'ctx>) {
        let tid = sreg(lw, "tid.x");
        let ntid = sreg(lw, "ntid.x");
        let ctaid = sreg(lw, "ctaid.x");
        let nctaid = sreg(lw, "nctaid.x");
        let gid = lw.iadd(lw.imul(ctaid, ntid), tid);
        (gid, count, lw.imul(ntid, nctaid))
    }
}

/// A PTX special register, zero-extended to i64.
fn sreg<'ctx>(lw: &Lower<'_, 'ctx>, name: &str) -> IntValue<'ctx> {
    let v = lw
        .intrinsic(&format!("llvm.nvvm.read.ptx.sreg.{name}"), &[], &[])
        .into_int_value();
    lw.b.build_int_z_extend(v, lw.i64(), "").unwrap()
}

fn barrier(lw: &Lower<'_, '_>) {
    if inkwell::intrinsics::Intrinsic::find("llvm.nvvm.barrier.cta.sync.aligned.all").is_some() {
        lw.intrinsic_void(
            "llvm.nvvm.barrier.cta.sync.aligned.all",
            &[lw.ci32(0).into()],
        );
    } else {
        lw.intrinsic_void("llvm.nvvm.barrier0", &[]);
    }
}

impl<'a, 'ctx> Lower<'a, 'ctx> {
    /// Calls an intrinsic returning void.
    pub fn intrinsic_void(&self, name: &str, args: &[BasicValueEnum<'ctx>]) {
        let intr = inkwell::intrinsics::Intrinsic::find(name)
            .unwrap_or_else(|| panic!("LLVM has no intrinsic {name}"));
        let f = intr.get_declaration(self.module, &[]).unwrap();
        let args: Vec<_> = args.iter().map(|&a| a.into()).collect();
        self.b.build_call(f, &args, "").unwrap();
    }

    /// `if cond { body }` at the current position.
    pub fn if_then(&self, name: &str, cond: IntValue<'ctx>, body: impl FnOnce()) {
        let then = self
            .cx
            .append_basic_block(self.func, &format!("{name}.then"));
        let join = self
            .cx
            .append_basic_block(self.func, &format!("{name}.end"));
        self.b.build_conditional_branch(cond, then, join).unwrap();
        self.b.position_at_end(then);
        body();
        self.b.build_unconditional_branch(join).unwrap();
        self.b.position_at_end(join);
    }

    /// `shfl.sync.down` of a value of any register type (split into 32-bit words).
    fn shfl_down(&self, v: BasicValueEnum<'ctx>, delta: u32) -> BasicValueEnum<'ctx> {
        let ty = v.get_type();
        let bits = match ty {
            BasicTypeEnum::FloatType(f) if f == self.f32() => 32,
            BasicTypeEnum::FloatType(_) => 64,
            BasicTypeEnum::IntType(i) => i.get_bit_width(),
            _ => unreachable!(),
        };
        let as_int = match v {
            BasicValueEnum::FloatValue(f) => self
                .b
                .build_bit_cast(f, if bits == 32 { self.i32() } else { self.i64() }, "")
                .unwrap()
                .into_int_value(),
            BasicValueEnum::IntValue(i) if bits < 32 => {
                self.b.build_int_z_extend(i, self.i32(), "").unwrap()
            }
            BasicValueEnum::IntValue(i) => i,
            _ => unreachable!(),
        };
        let shfl = |w: IntValue<'ctx>| -> IntValue<'ctx> {
            let args = [
                self.ci32(-1).into(),
                w.into(),
                self.ci32(delta as i32).into(),
                self.ci32(31).into(),
            ];
            self.intrinsic("llvm.nvvm.shfl.sync.down.i32", &[], &args)
                .into_int_value()
        };
        let r = if bits <= 32 {
            shfl(as_int)
        } else {
            let lo = self.b.build_int_truncate(as_int, self.i32(), "").unwrap();
            let hi = self
                .b
                .build_int_truncate(
                    self.b
                        .build_right_shift(as_int, self.ci64(32), false, "")
                        .unwrap(),
                    self.i32(),
                    "",
                )
                .unwrap();
            let (lo, hi) = (shfl(lo), shfl(hi));
            let lo = self.b.build_int_z_extend(lo, self.i64(), "").unwrap();
            let hi = self.b.build_int_z_extend(hi, self.i64(), "").unwrap();
            self.b
                .build_or(
                    lo,
                    self.b.build_left_shift(hi, self.ci64(32), "").unwrap(),
                    "",
                )
                .unwrap()
        };
        match ty {
            BasicTypeEnum::FloatType(f) => self.b.build_bit_cast(r, f, "").unwrap(),
            BasicTypeEnum::IntType(i) if bits < 32 => {
                self.b.build_int_truncate(r, i, "").unwrap().into()
            }
            _ => r.into(),
        }
    }
}

fn add_kernel_attrs<'ctx>(cx: &'ctx Context, f: FunctionValue<'ctx>, max_threads: Option<u32>) {
    f.set_call_conventions(PTX_KERNEL_CC);
    let nounwind = inkwell::attributes::Attribute::get_named_enum_kind_id("nounwind");
    f.add_attribute(
        inkwell::attributes::AttributeLoc::Function,
        cx.create_enum_attribute(nounwind, 0),
    );
    if let Some(n) = max_threads {
        f.add_attribute(
            inkwell::attributes::AttributeLoc::Function,
            cx.create_string_attribute("nvvm.maxntid", &n.to_string()),
        );
    }
}

/// Whether load index node `n` of kernel `k` is exactly the row-major linear
/// index of the output point: `sum(coord_d * stride_d)` over the output dims
/// of size > 1 (the form `pjc_fusion`'s planner builds; `+ 0` allowed).
fn is_identity_index(k: &Kernel, n: NodeId) -> bool {
    fn terms(k: &Kernel, n: NodeId, out: &mut Vec<(usize, i128)>) -> bool {
        match &k.nodes[n] {
            Node::ConstInt(0, _) => true,
            Node::Index {
                op: IndexOp::Add,
                a,
                b,
            } => terms(k, *a, out) && terms(k, *b, out),
            Node::Index {
                op: IndexOp::Mul,
                a,
                b,
            } => match (&k.nodes[*a], &k.nodes[*b]) {
                (Node::Coord(c), Node::ConstInt(s, _)) | (Node::ConstInt(s, _), Node::Coord(c)) => {
                    out.push((*c, *s));
                    true
                }
                _ => false,
            },
            _ => false,
        }
    }
    let mut got = vec![];
    if !terms(k, n, &mut got) {
        return false;
    }
    got.sort();
    let mut want = vec![];
    let mut stride = 1i128;
    for d in (0..k.shape.len()).rev() {
        if k.shape[d] != 1 {
            want.push((d, stride));
        }
        stride *= k.shape[d] as i128;
    }
    want.sort();
    got == want
}

/// Points per thread and grid-stride step for kernel `k`: [`VECTOR_WIDTH`]
/// when it is elementwise (no reduction), has at least that many points, every
/// input and output element is at most 4 bytes, and every load it performs
/// reads at the output point's own linear index (so the accesses of
/// consecutive points are consecutive in every buffer); 1 otherwise.
pub fn vector_width(k: &Kernel) -> u32 {
    if k.reduce.is_some() || k.num_elements() < VECTOR_WIDTH as u64 {
        return 1;
    }
    if k.inputs
        .iter()
        .chain(&k.outputs)
        .any(|b| b.dtype.size_bytes() > 4)
    {
        return 1;
    }
    let live = live_nodes(k);
    let identity = k.nodes.iter().enumerate().all(|(i, node)| match node {
        Node::Load { index, .. } if live[i] => is_identity_index(k, *index),
        _ => true,
    });
    if identity {
        VECTOR_WIDTH
    } else {
        1
    }
}

/// `k` with the index node of every load replaced by coordinate
/// `k.shape.len()` (one past the output coordinates), which the wide loop sets
/// to the point's linear index. Only for kernels [`vector_width`] accepts:
/// there each such node computes exactly that index, so values are unchanged,
/// and the addresses become `base + i` for LLVM to see that consecutive
/// points' accesses are adjacent (it does not fold `i / d * d + i % d` back).
fn with_linear_loads(k: &Kernel) -> Kernel {
    let mut w = k.clone();
    let lin = k.shape.len();
    let live = live_nodes(k);
    for (i, node) in k.nodes.iter().enumerate() {
        if let Node::Load { index, .. } = node {
            if live[i] {
                debug_assert!(is_identity_index(k, *index));
                w.nodes[*index] = Node::Coord(lin);
            }
        }
    }
    w
}

/// Adds kernel `k` to `module` as a `.entry`.
pub fn build_kernel<'ctx>(
    cx: &'ctx Context,
    module: &Module<'ctx>,
    k: &Kernel,
) -> FunctionValue<'ctx> {
    let gptr = cx.ptr_type(AddressSpace::from(1u16));
    let nptr = k.inputs.len() + k.outputs.len();
    let mut params: Vec<_> = (0..nptr).map(|_| gptr.into()).collect();
    params.push(cx.i64_type().into());
    let f = module.add_function(&k.name, cx.void_type().fn_type(&params, false), None);
    add_kernel_attrs(cx, f, k.reduce.as_ref().map(|_| REDUCE_BLOCK));
    // The alignment contract: every buffer pointer is 16-byte aligned.
    let align = inkwell::attributes::Attribute::get_named_enum_kind_id("align");
    for i in 0..nptr as u32 {
        f.add_attribute(
            inkwell::attributes::AttributeLoc::Param(i),
            cx.create_enum_attribute(align, BUFFER_ALIGN as u64),
        );
    }
    let width = vector_width(k);
    let wide = (width > 1).then(|| with_linear_loads(k));
    let k = wide.as_ref().unwrap_or(k);
    let b = cx.create_builder();
    let entry = cx.append_basic_block(f, "entry");
    b.position_at_end(entry);
    let ptrs: Vec<_> = (0..k.inputs.len() + k.outputs.len())
        .map(|i| {
            let p = f.get_nth_param(i as u32).unwrap().into_pointer_value();
            p.set_name(&if i < k.inputs.len() {
                format!("in{i}")
            } else {
                format!("out{}", i - k.inputs.len())
            });
            p
        })
        .collect();
    let n = f.get_nth_param(ptrs.len() as u32).unwrap().into_int_value();
    n.set_name("n");
    let target = Nvptx;
    let lw = Lower::new(
        cx,
        module,
        &b,
        &target,
        k,
        f,
        ptrs[..k.inputs.len()].to_vec(),
        ptrs[k.inputs.len()..].to_vec(),
    );
    // Coordinates of point `i`: the output's, then (for a wide kernel) the
    // linear index itself, which its loads read at.
    let coords_of = |i: IntValue<'ctx>| {
        let mut c = lw.delinearize(i, &k.shape);
        if width > 1 {
            c.push(i);
        }
        c
    };
    let point = |i: IntValue<'ctx>| {
        let vals = lw.eval(&coords_of(i));
        for (j, &r) in k.results.iter().enumerate() {
            lw.store_result(j, i, vals[r].unwrap(), k.types[r]);
        }
    };
    if k.reduce.is_some() {
        reduction_body(&lw, n);
    } else if width > 1 {
        // Whole groups of `width` points: every load of the group, then every
        // store (the output may be an input's buffer, donated), so the
        // accesses of each buffer are adjacent in one block.
        let (first, _, step) = lw.target.point_range(&lw, n);
        let shift = lw.ci64(width.trailing_zeros() as i64);
        let groups = lw.b.build_right_shift(n, shift, false, "groups").unwrap();
        let buffers: Vec<_> = k
            .inputs
            .iter()
            .chain(&k.outputs)
            .zip(&ptrs)
            .map(|(a, &p)| (p, a.dtype))
            .collect();
        lw.for_loop("g", first, groups, step, |g| {
            let base = lw.b.build_left_shift(g, shift, "").unwrap();
            let idx: Vec<_> = (0..width as i64)
                .map(|l| lw.b.build_int_nsw_add(base, lw.ci64(l), "").unwrap())
                .collect();
            let vals: Vec<_> = idx.iter().map(|&i| lw.eval(&coords_of(i))).collect();
            for (&i, vals) in idx.iter().zip(&vals) {
                for (j, &r) in k.results.iter().enumerate() {
                    lw.store_result(j, i, vals[r].unwrap(), k.types[r]);
                }
            }
            if let Some(anchor) = idx.last().and_then(|i| i.as_instruction()) {
                widen_accesses(&lw, anchor, &idx, &buffers);
            }
        });
        // The last n % width points, one per thread.
        let done = lw.b.build_left_shift(groups, shift, "").unwrap();
        lw.for_loop("i", lw.iadd(done, first), n, step, point);
    } else {
        let (first, end, step) = lw.target.point_range(&lw, n);
        lw.for_loop("i", first, end, step, point);
    }
    b.build_return(None).unwrap();
    f
}

/// Makes the scalar accesses of a wide kernel's group body (built one point at
/// a time by [`Lower::eval`] and [`Lower::store_result`]) into one access per
/// buffer. `lanes` are the points' linear indices (`lanes[l] = lanes[0] + l`,
/// `lanes[0]` a multiple of `lanes.len()`), all computed before `anchor`, the
/// last instruction before the points' code; `buffers` are the pointer
/// parameters with their dtypes, inputs then outputs.
///
/// Loads (of a buffer loaded at every lane's index, up to the block's first
/// store) move to just after `anchor`:
///
/// - 16- and 8-bit elements as one explicit `load <W x T>` (8 or 4 bytes,
///   aligned to that) whose elements replace the scalar loads, which are
///   erased: left scalar, the SLP vectorizer packs pairs of lanes and
///   reorders their loads, so they end up in two halves;
/// - 32-bit elements as the scalar loads themselves, together, in lane order,
///   for LLVM's load/store vectorizer to merge into `ld.global.v4` in the
///   backend: an explicit `<4 x i32>` load whose lanes are only truncated
///   (`convert` i32 → i8) is shrunk by the optimizer to an odd-sized vector
///   that the backend splits.
///
/// Either way nothing that may write memory stays between a buffer's loads
/// (the vectorizer gives up on, e.g., libdevice's inline `asm` in `tanhf`).
/// Moving loads up is safe: before the block's stores there is only
/// arithmetic and pure math calls, and the stores stay after all loads (an
/// output may be a donated input's buffer).
///
/// Stores (of a buffer stored once at every lane's index) become one vector
/// store at the end of the block. Leaves the builder at the end of the block.
fn widen_accesses<'ctx>(
    lw: &Lower<'_, 'ctx>,
    anchor: InstructionValue<'ctx>,
    lanes: &[IntValue<'ctx>],
    buffers: &[(PointerValue<'ctx>, DType)],
) {
    let b = lw.b;
    let Some(block) = anchor.get_parent() else {
        return;
    };
    let w = lanes.len();
    // The address of a load or store as (buffer, lane, its GEP), if it is
    // element `lanes[lane]` of one of `buffers`.
    let slot = |addr: Option<Operand<'ctx>>| -> Option<(usize, usize, InstructionValue<'ctx>)> {
        let Some(Operand::Value(BasicValueEnum::PointerValue(p))) = addr else {
            return None;
        };
        let g = p.as_instruction()?;
        if g.get_opcode() != InstructionOpcode::GetElementPtr || g.get_num_operands() != 2 {
            return None;
        }
        let Some(Operand::Value(BasicValueEnum::PointerValue(base))) = g.get_operand(0) else {
            return None;
        };
        let Some(Operand::Value(BasicValueEnum::IntValue(i))) = g.get_operand(1) else {
            return None;
        };
        let buf = buffers.iter().position(|(q, _)| *q == base)?;
        let lane = lanes.iter().position(|&x| x == i)?;
        Some((buf, lane, g))
    };
    type Accesses<'ctx> = Vec<Vec<Vec<(InstructionValue<'ctx>, InstructionValue<'ctx>)>>>;
    let mut loads: Accesses<'ctx> = vec![vec![vec![]; w]; buffers.len()];
    let mut stores: Accesses<'ctx> = vec![vec![vec![]; w]; buffers.len()];
    let mut seen_store = false;
    let mut cur = anchor.get_next_instruction();
    while let Some(i) = cur {
        cur = i.get_next_instruction();
        match i.get_opcode() {
            InstructionOpcode::Load if !seen_store => {
                if let Some((buf, lane, g)) = slot(i.get_operand(0)) {
                    if i.get_type() == storage_type(lw.cx, buffers[buf].1).as_any_type_enum() {
                        loads[buf][lane].push((g, i));
                    }
                }
            }
            InstructionOpcode::Store => {
                seen_store = true;
                if let Some((buf, lane, g)) = slot(i.get_operand(1)) {
                    stores[buf][lane].push((g, i));
                }
            }
            _ => {}
        }
    }
    let lane_index = |l: usize| lw.ci32(l as i32);
    let wide_ptr = |buf: usize| unsafe {
        let st = storage_type(lw.cx, buffers[buf].1);
        b.build_in_bounds_gep(st, buffers[buf].0, &[lanes[0]], "")
            .unwrap()
    };
    let align = |buf: usize| (w * buffers[buf].1.size_bytes()) as u32;
    // New code goes before a marker placed right after the anchor (the
    // instructions after the anchor move or are erased, so none of them can
    // hold the builder's position).
    match anchor.get_next_instruction() {
        Some(next) => b.position_before(&next),
        None => b.position_at_end(block),
    }
    let Some(marker) = lw.iadd(lanes[0], lw.ci64(0)).as_instruction() else {
        b.position_at_end(block);
        return;
    };
    b.position_before(&marker);
    let mut moved: Vec<InstructionValue<'ctx>> = vec![];
    for (buf, lane_loads) in loads.iter().enumerate() {
        if lane_loads.iter().any(|l| l.is_empty()) {
            continue;
        }
        if buffers[buf].1.size_bytes() >= 4 {
            for &(g, l) in lane_loads.iter().flatten() {
                for i in [g, l] {
                    if !moved.contains(&i) {
                        i.remove_from_basic_block();
                        b.insert_instruction(&i, None);
                        moved.push(i);
                    }
                }
            }
            continue;
        }
        let vt = storage_type(lw.cx, buffers[buf].1)
            .into_int_type()
            .vec_type(w as u32);
        let v = b
            .build_load(vt, wide_ptr(buf), "")
            .unwrap()
            .into_vector_value();
        v.as_instruction()
            .unwrap()
            .set_alignment(align(buf))
            .unwrap();
        for (l, scalars) in lane_loads.iter().enumerate() {
            let e = b.build_extract_element(v, lane_index(l), "").unwrap();
            let e = e.as_instruction_value().unwrap();
            for &(_, s) in scalars {
                s.replace_all_uses_with(&e);
                s.erase_from_basic_block();
            }
        }
    }
    marker.erase_from_basic_block();
    b.position_at_end(block);
    for (buf, lane_stores) in stores.iter().enumerate() {
        if lane_stores.iter().any(|s| s.len() != 1) {
            continue;
        }
        let vals: Vec<BasicValueEnum<'ctx>> = lane_stores
            .iter()
            .map(|s| match s[0].1.get_operand(0) {
                Some(Operand::Value(v)) => v,
                _ => unreachable!("a store's first operand is its value"),
            })
            .collect();
        let vt = match vals[0] {
            BasicValueEnum::FloatValue(f) => f.get_type().vec_type(w as u32),
            BasicValueEnum::IntValue(i) => i.get_type().vec_type(w as u32),
            _ => continue,
        };
        let mut v = vt.get_poison();
        for (l, &x) in vals.iter().enumerate() {
            v = b.build_insert_element(v, x, lane_index(l), "").unwrap();
        }
        let st = b.build_store(wide_ptr(buf), v).unwrap();
        st.set_alignment(align(buf)).unwrap();
        for s in lane_stores {
            s[0].1.erase_from_basic_block();
        }
    }
}

fn reduction_body<'ctx>(lw: &Lower<'_, 'ctx>, n: IntValue<'ctx>) {
    let k = lw.kernel;
    let r = k.reduce.as_ref().unwrap();
    let acc_ty = reg_type(lw.cx, r.acc);
    // Slots for up to 32 warps; the block has ntid.x / 32 of them.
    let warps = 32;
    // One shared slot per warp and result (pred accumulators as bytes).
    let slot_ty: BasicTypeEnum = if r.acc.is_pred() {
        lw.i8().into()
    } else {
        acc_ty
    };
    let smem: Vec<_> = k
        .results
        .iter()
        .enumerate()
        .map(|(j, _)| {
            let g = lw.module.add_global(
                slot_ty.array_type(warps),
                Some(AddressSpace::from(3u16)),
                &format!("{}.smem{j}", k.name),
            );
            g.set_linkage(Linkage::Internal);
            g.set_initializer(&slot_ty.array_type(warps).get_undef());
            g.set_alignment(8);
            g
        })
        .collect();
    let tid = sreg(lw, "tid.x");
    let ntid = sreg(lw, "ntid.x");
    let nwarps =
        lw.b.build_right_shift(ntid, lw.ci64(5), false, "nwarps")
            .unwrap();
    let lane = lw.b.build_and(tid, lw.ci64(31), "lane").unwrap();
    let warp =
        lw.b.build_right_shift(tid, lw.ci64(5), false, "warp")
            .unwrap();
    let ctaid = sreg(lw, "ctaid.x");
    let nctaid = sreg(lw, "nctaid.x");
    let total: u64 = r.shape.iter().product();
    let accs: Vec<_> = (0..k.results.len())
        .map(|j| lw.entry_alloca(acc_ty, &format!("acc{j}")))
        .collect();
    let warp_reduce = |mut v: BasicValueEnum<'ctx>| {
        for d in [16, 8, 4, 2, 1] {
            let o = lw.shfl_down(v, d);
            v = lw.combine(r.kind, r.acc, v, o);
        }
        v
    };
    lw.for_loop("o", ctaid, n, nctaid, |o| {
        let out_coords = lw.delinearize(o, &k.shape);
        for &a in &accs {
            lw.b.build_store(a, lw.identity(r.kind, r.acc)).unwrap();
        }
        lw.for_loop("r", tid, lw.ci64(total as i64), ntid, |ri| {
            let mut coords = out_coords.clone();
            coords.extend(lw.delinearize(ri, &r.shape));
            let vals = lw.eval(&coords);
            for (j, &res) in k.results.iter().enumerate() {
                let x = lw.to_acc(vals[res].unwrap(), res, r.acc);
                let a = lw.b.build_load(acc_ty, accs[j], "").unwrap();
                let c = lw.combine(r.kind, r.acc, a, x);
                lw.b.build_store(accs[j], c).unwrap();
            }
        });
        for (j, _) in k.results.iter().enumerate() {
            let a = lw.b.build_load(acc_ty, accs[j], "").unwrap();
            let v = warp_reduce(a);
            let slot = |i: IntValue<'ctx>| unsafe {
                lw.b.build_in_bounds_gep(
                    slot_ty.array_type(warps),
                    smem[j].as_pointer_value(),
                    &[lw.ci64(0), i],
                    "",
                )
                .unwrap()
            };
            let lane0 =
                lw.b.build_int_compare(IntPredicate::EQ, lane, lw.ci64(0), "")
                    .unwrap();
            lw.if_then("w", lane0, || {
                let s: BasicValueEnum = if r.acc.is_pred() {
                    lw.b.build_int_z_extend(v.into_int_value(), lw.i8(), "")
                        .unwrap()
                        .into()
                } else {
                    v
                };
                lw.b.build_store(slot(warp), s).unwrap();
            });
            barrier(lw);
            let warp0 =
                lw.b.build_int_compare(IntPredicate::EQ, warp, lw.ci64(0), "")
                    .unwrap();
            lw.if_then("f", warp0, || {
                let has =
                    lw.b.build_int_compare(IntPredicate::ULT, lane, nwarps, "")
                        .unwrap();
                let idx =
                    lw.b.build_select(has, lane, lw.ci64(0), "")
                        .unwrap()
                        .into_int_value();
                let s = lw.b.build_load(slot_ty, slot(idx), "").unwrap();
                let s: BasicValueEnum = if r.acc.is_pred() {
                    lw.b.build_int_compare(
                        IntPredicate::NE,
                        s.into_int_value(),
                        lw.i8().const_zero(),
                        "",
                    )
                    .unwrap()
                    .into()
                } else {
                    s
                };
                let v =
                    lw.b.build_select(has, s, lw.identity(r.kind, r.acc), "")
                        .unwrap();
                let v = warp_reduce(v);
                lw.if_then("st", lane0, || {
                    lw.store_result(j, o, v, compute_type(r.acc))
                });
            });
            barrier(lw);
        }
    });
}

static INIT: std::sync::Once = std::sync::Once::new();

/// The GPU architectures pjc generates PTX for: Volta (sm_70) and newer, as
/// far as both LLVM 22's NVPTX backend and CUDA 12.9's ptxas know them. Older
/// ones lack what the kernels use (`shfl.sync` warp shuffles need PTX 6.0 on
/// sm_70 for LLVM's instruction selection) and CUDA 13 no longer supports them.
pub const SUPPORTED_ARCHS: &[&str] = &[
    "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_101",
    "sm_101a", "sm_103", "sm_103a", "sm_120", "sm_120a", "sm_121", "sm_121a",
];

/// Checks `--gpu-arch` before anything reaches LLVM (which aborts the process
/// on an architecture it cannot select instructions for).
pub fn check_arch(arch: &str) -> Result<(), CodegenError> {
    if SUPPORTED_ARCHS.contains(&arch) {
        return Ok(());
    }
    Err(CodegenError::Input(format!(
        "unsupported GPU architecture '{arch}': pjc generates PTX for {}",
        SUPPORTED_ARCHS.join(", ")
    )))
}

/// A target machine for `arch` (one of [`SUPPORTED_ARCHS`]).
pub fn target_machine(arch: &str) -> Result<TargetMachine, CodegenError> {
    check_arch(arch)?;
    INIT.call_once(|| Target::initialize_nvptx(&InitializationConfig::default()));
    let triple = TargetTriple::create(TRIPLE);
    let target = Target::from_triple(&triple).map_err(|e| CodegenError::Llvm(e.to_string()))?;
    target
        .create_target_machine(
            &triple,
            arch,
            "",
            OptimizationLevel::Aggressive,
            RelocMode::Default,
            CodeModel::Default,
        )
        .ok_or_else(|| CodegenError::Llvm(format!("LLVM cannot target NVPTX {arch}")))
}

/// libdevice inside a Python environment's `lib/pythonX.Y/` (pip package
/// `nvidia-cuda-nvcc-cu12`).
const LIBDEVICE_IN_VENV: &str = "site-packages/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc";

/// CUDA installations' libdevice.
const LIBDEVICE_SYSTEM: [&str; 2] =
    ["/usr/local/cuda/nvvm/libdevice/libdevice.10.bc", "/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc"];

/// The Python environments searched: `.venv` in the current directory, then
/// the repository's (for a pjc built from it).
fn venv_roots() -> Vec<PathBuf> {
    let mut roots = vec![];
    if let Ok(cwd) = std::env::current_dir() {
        roots.push(cwd.join(".venv"));
    }
    if let Some(dir) = option_env!("CARGO_MANIFEST_DIR") {
        roots.push(PathBuf::from(dir).join("../../.venv"));
    }
    roots
}

/// Where [`find_libdevice`] looks when `PJC_LIBDEVICE` is not set, in order
/// (for messages).
pub fn libdevice_places() -> Vec<String> {
    let mut places: Vec<String> =
        venv_roots().iter().map(|r| r.join("lib/*").join(LIBDEVICE_IN_VENV).display().to_string()).collect();
    places.extend(LIBDEVICE_SYSTEM.iter().map(|p| p.to_string()));
    places
}

/// Where libdevice is: `PJC_LIBDEVICE`, else the project's `.venv` (pip
/// package `nvidia-cuda-nvcc-cu12`), else a CUDA installation.
pub fn find_libdevice() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PJC_LIBDEVICE") {
        return Some(PathBuf::from(p));
    }
    for root in venv_roots() {
        let Ok(rd) = std::fs::read_dir(root.join("lib")) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path().join(LIBDEVICE_IN_VENV);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    LIBDEVICE_SYSTEM.iter().map(PathBuf::from).find(|p| p.is_file())
}

/// libdevice's bytes, read once per process (per path).
fn libdevice_bytes(path: &std::path::Path) -> Result<std::sync::Arc<Vec<u8>>, CodegenError> {
    static READ: std::sync::Mutex<Vec<(PathBuf, std::sync::Arc<Vec<u8>>)>> = std::sync::Mutex::new(vec![]);
    let mut read = READ.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, b)) = read.iter().find(|(p, _)| p == path) {
        return Ok(b.clone());
    }
    let bytes = std::fs::read(path).map_err(|e| {
        CodegenError::Environment(format!("cannot read libdevice '{}': {e}", path.display()))
    })?;
    let b = std::sync::Arc::new(bytes);
    read.push((path.to_path_buf(), b.clone()));
    Ok(b)
}

/// libdevice as a lazily read module whose every definition is
/// `linkonce_odr`: linking it into a kernel's module brings in (and reads)
/// only the functions the kernel calls, directly or through each other,
/// instead of parsing and optimizing all of libdevice for every kernel.
fn lazy_libdevice<'ctx>(cx: &'ctx Context, path: &std::path::Path) -> Result<Module<'ctx>, CodegenError> {
    use inkwell::memory_buffer::MemoryBuffer;
    let bytes = libdevice_bytes(path)?;
    let buf = MemoryBuffer::create_from_memory_range_copy(&bytes, "libdevice");
    let mut raw = std::ptr::null_mut();
    // SAFETY: valid context and buffer; on success the module owns the buffer.
    let failed = unsafe { inkwell::llvm_sys::bit_reader::LLVMGetBitcodeModuleInContext2(cx.raw(), buf.as_mut_ptr(), &mut raw) };
    if failed != 0 || raw.is_null() {
        return Err(CodegenError::Environment(format!("cannot read libdevice '{}': not LLVM bitcode", path.display())));
    }
    std::mem::forget(buf);
    // SAFETY: a module just created in `cx`.
    let lib = unsafe { Module::new(raw) };
    for f in lib.get_functions() {
        if !f.as_global_value().is_declaration() {
            f.set_linkage(Linkage::LinkOnceODR);
        }
    }
    for g in lib.get_globals() {
        if !g.is_declaration() {
            g.set_linkage(Linkage::LinkOnceODR);
        }
    }
    Ok(lib)
}

fn uses_libdevice(m: &Module<'_>) -> bool {
    m.get_functions()
        .any(|f| f.count_basic_blocks() == 0 && f.get_name().to_bytes().starts_with(b"__nv_"))
}

/// Builds, links and optimizes the NVPTX module of `plan`; returns it for
/// printing or assembling.
fn build_module<'ctx>(
    cx: &'ctx Context,
    plan: &Plan,
    tm: &TargetMachine,
) -> Result<Module<'ctx>, CodegenError> {
    module_of(cx, &plan.name, pjc_host::device::ptx_kernels(plan).into_iter(), tm, OptLevel::default())
}

/// The linked and optimized NVPTX module `name` holding `kernels`, each a
/// `.entry` named after the kernel.
pub(crate) fn module_of<'ctx, 'k>(
    cx: &'ctx Context,
    name: &str,
    kernels_in: impl IntoIterator<Item = &'k Kernel>,
    tm: &TargetMachine,
    opt: OptLevel,
) -> Result<Module<'ctx>, CodegenError> {
    let module = cx.create_module(name);
    module.set_triple(&TargetTriple::create(TRIPLE));
    let layout = tm.get_target_data().get_data_layout();
    module.set_data_layout(&layout);
    module.add_basic_value_flag(
        "nvvm-reflect-ftz",
        FlagBehavior::Override,
        cx.i32_type().const_zero(),
    );
    let mut kernels = vec![];
    for k in kernels_in {
        kernels.push(build_kernel(cx, &module, k));
    }
    module
        .verify()
        .map_err(|e| CodegenError::Llvm(format!("invalid NVPTX IR for module {name}: {}", e.to_string())))?;
    if uses_libdevice(&module) {
        let path = find_libdevice().ok_or_else(|| {
            CodegenError::Environment(
                "libdevice.10.bc not found (needed for math functions on NVPTX): run scripts/ptxas.sh, which installs the pip package nvidia-cuda-nvcc-cu12 into .venv, or set PJC_LIBDEVICE".into(),
            )
        })?;
        let lib = lazy_libdevice(cx, &path)?;
        lib.set_triple(&TargetTriple::create(TRIPLE));
        lib.set_data_layout(&layout);
        module
            .link_in_module(lib)
            .map_err(|e| CodegenError::Llvm(format!("linking libdevice: {}", e.to_string())))?;
    }
    // Internalize everything but the kernels, so O3 drops what is unused.
    for f in module.get_functions() {
        if f.count_basic_blocks() > 0 && !kernels.contains(&f) {
            f.set_linkage(Linkage::Internal);
        }
    }
    for g in module.get_globals() {
        if !g.is_declaration() {
            g.set_linkage(Linkage::Internal);
        }
    }
    let opts = PassBuilderOptions::create();
    module
        .run_passes(opt.ptx_pipeline(), tm, opts)
        .map_err(|e| CodegenError::Llvm(e.to_string()))?;
    if let Some(f) = module
        .get_functions()
        .find(|f| f.count_basic_blocks() == 0 && f.get_intrinsic_id() == 0)
    {
        return Err(CodegenError::Llvm(format!(
            "NVPTX module still calls undefined function {}",
            f.get_name().to_string_lossy()
        )));
    }
    Ok(module)
}

/// The plan as the CUDA backend runs it (`pjc_host::device::cuda_plan`):
/// the PTX holds its kernels, library steps' device kernels included.
pub(crate) fn cuda_view(plan: &Plan) -> Result<Plan, CodegenError> {
    pjc_host::device::cuda_plan(plan).map_err(|e| CodegenError::Llvm(e.to_string()))
}

/// The optimized NVPTX LLVM IR (after linking libdevice), for inspection.
pub fn emit_nvptx_llvm(plan: &Plan, arch: &str) -> Result<String, CodegenError> {
    let plan = &cuda_view(plan)?;
    let tm = target_machine(arch)?;
    let cx = Context::create();
    let module = build_module(&cx, plan, &tm)?;
    Ok(module.print_to_string().to_string())
}
