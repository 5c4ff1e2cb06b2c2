//! x86-64 code generation: one function per kernel,
//!
//! ```text
//! void KERNEL(i8** bufs, i64 begin, i64 end)
//! ```
//!
//! `bufs` holds the kernel's input buffers (in `Kernel::inputs` order) followed
//! by its output buffers; the function computes the output points with linear
//! indices in `[begin, end)`, so a runtime can split a kernel over threads.
//!
//! Elementwise kernels walk the points row by row (the innermost dimension of
//! size > 1 is a plain counted loop whose coordinate is the induction variable,
//! the outer coordinates are computed once per row), which LLVM's loop
//! vectorizer turns into SIMD code. Reduction kernels loop over the reduced
//! dimensions per output point, with the accumulator in a register.
//!
//! Target: `x86_64-unknown-linux-gnu`, CPU `x86-64-v3` (AVX2, FMA, F16C, BMI —
//! FMA is never formed because no fast-math flags are set), by default
//! [`LOOP_PIPELINE`](crate::LOOP_PIPELINE) ([`OptLevel`]).

use crate::lower::{reg_type, Lower, Target as LowerTarget};
use crate::{CodegenError, OptLevel};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::context::Context;
use inkwell::execution_engine::ExecutionEngine;
use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple,
};
use inkwell::values::{FunctionValue, IntValue};
use inkwell::{AddressSpace, IntPredicate, OptimizationLevel};
use pjc_plan::kernel::{compute_type, Kernel};
use pjc_plan::{Plan, Step};

use pjc_tensor::Tensor;
use std::sync::Once;

pub const TRIPLE: &str = "x86_64-unknown-linux-gnu";
/// The CPU of `--emit llvm`'s listing (executables carry one object per
/// level, `pjc_plan::CpuLevel`; the JIT compiles for this machine's best).
pub const CPU: &str = "x86-64-v3";

struct Cpu<'ctx> {
    begin: IntValue<'ctx>,
    end: IntValue<'ctx>,
    /// Whether the CPU has AVX2 (x86-64-v3): 256-bit libmvec variants.
    avx2: bool,
    /// Whether it has AVX-512 (x86-64-v4): 512-bit libmvec variants.
    avx512: bool,
}

/// Math functions with libmvec variants (glibc >= 2.35 has all of them;
/// each symbol is looked up before it is used).
const LIBMVEC_FUNCS: [&str; 10] = [
    "exp", "log", "log1p", "expm1", "tanh", "erf", "sin", "cos", "pow", "atan2",
];

fn symbol_in_process(sym: &str) -> bool {
    let c = std::ffi::CString::new(sym).unwrap();
    // SAFETY: a valid NUL-terminated name.
    !unsafe { inkwell::llvm_sys::support::LLVMSearchForAddressOfSymbol(c.as_ptr()) }.is_null()
}

impl<'ctx> LowerTarget<'ctx> for Cpu<'ctx> {
    fn math_symbol(&self, name: &str) -> String {
        name.to_string()
    }
    fn buffer_addrspace(&self) -> AddressSpace {
        AddressSpace::default()
    }
    fn point_range(
        &self,
        lw: &Lower<'_, 'ctx>,
        _count: IntValue<'ctx>,
    ) -> (IntValue<'ctx>, IntValue<'ctx>, IntValue<'ctx>) {
        (self.begin, self.end, lw.ci64(1))
    }
    fn vector_variants(&self, sym: &str, nargs: usize) -> Vec<(u32, String)> {
        if !uses_libmvec() {
            return vec![];
        }
        let (base, f32) = match sym.strip_suffix('f') {
            Some(b) if LIBMVEC_FUNCS.contains(&b) => (b, true),
            _ if LIBMVEC_FUNCS.contains(&sym) => (sym, false),
            _ => return vec![],
        };
        let _ = base;
        let v = "v".repeat(nargs);
        let sse = if f32 { 4 } else { 2 };
        let mut out = vec![(sse, format!("_ZGVbN{sse}{v}_{sym}"))];
        if self.avx2 {
            out.push((sse * 2, format!("_ZGVdN{}{v}_{sym}", sse * 2)));
        }
        if self.avx512 {
            out.push((sse * 4, format!("_ZGVeN{}{v}_{sym}", sse * 4)));
        }
        out.into_iter()
            .filter(|(_, s)| symbol_in_process(s))
            .collect()
    }
}

static INIT: Once = Once::new();

/// Initializes the x86 backend once per process and loads glibc's vector math
/// library (libmvec) when it is there: loops calling `expf`, `logf`, `tanhf`,
/// ... then vectorize to its `_ZGVdN8v_expf`, ... (the JIT resolves them in
/// the process; an executable linking generated objects needs `-lmvec`).
/// `PJC_NO_LIBMVEC=1` turns this off.
pub(crate) fn init_x86() {
    INIT.call_once(|| {
        Target::initialize_x86(&InitializationConfig::default());
        if std::env::var_os("PJC_NO_LIBMVEC").is_none()
            && inkwell::support::load_library_permanently(std::path::Path::new("libmvec.so.1"))
                .is_ok()
        {
            LIBMVEC.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
}

static LIBMVEC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether generated host code may call glibc's libmvec (see [`init_x86`]).
pub fn uses_libmvec() -> bool {
    init_x86();
    LIBMVEC.load(std::sync::atomic::Ordering::Relaxed)
}

/// Which libmvec vector variants this process has (they decide what the
/// loop vectorizer calls, so the compile cache's key holds this).
pub fn libmvec_signature() -> String {
    if !uses_libmvec() {
        return "no libmvec".into();
    }
    let mut s = String::from("libmvec:");
    for f in LIBMVEC_FUNCS {
        for sym in [f.to_string(), format!("{f}f")] {
            for (isa, w) in [("b", 2), ("d", 4), ("e", 8)] {
                let w = if sym.ends_with('f') && sym != f { w * 2 } else { w };
                let nargs = if matches!(f, "pow" | "atan2") { 2 } else { 1 };
                let name = format!("_ZGV{isa}N{w}{}_{sym}", "v".repeat(nargs));
                s.push(if symbol_in_process(&name) { '1' } else { '0' });
            }
        }
    }
    s
}

/// A target machine for `cpu` (e.g. `x86-64-v3`).
pub fn target_machine(cpu: &str) -> Result<TargetMachine, CodegenError> {
    init_x86();
    let triple = TargetTriple::create(TRIPLE);
    let target = Target::from_triple(&triple).map_err(|e| CodegenError::Llvm(e.to_string()))?;
    target
        .create_target_machine(
            &triple,
            cpu,
            "",
            OptimizationLevel::Aggressive,
            RelocMode::PIC,
            CodeModel::Default,
        )
        .ok_or_else(|| {
            CodegenError::Llvm(format!(
                "cannot create an x86-64 target machine for CPU {cpu}"
            ))
        })
}

/// The CPU the JIT compiles for: the best x86-64 level this machine runs,
/// plain x86-64 below v2.
pub fn jit_cpu() -> &'static str {
    pjc_host::cpulevel::best().map_or("x86-64", |l| l.name())
}

fn add_fn_attr<'ctx>(cx: &'ctx Context, f: FunctionValue<'ctx>, name: &str) {
    let kind = Attribute::get_named_enum_kind_id(name);
    f.add_attribute(AttributeLoc::Function, cx.create_enum_attribute(kind, 0));
}

/// Adds kernel `k` to `module` as `void k(i8** bufs, i64 begin, i64 end)`.
pub fn build_kernel<'ctx>(
    cx: &'ctx Context,
    module: &Module<'ctx>,
    k: &Kernel,
    cpu: &str,
) -> FunctionValue<'ctx> {
    let ptr = cx.ptr_type(AddressSpace::default());
    let i64t = cx.i64_type();
    let fty = cx
        .void_type()
        .fn_type(&[ptr.into(), i64t.into(), i64t.into()], false);
    let f = module.add_function(&k.name, fty, None);
    add_fn_attr(cx, f, "nounwind");
    f.add_attribute(
        AttributeLoc::Function,
        cx.create_string_attribute("target-cpu", cpu),
    );
    f.add_attribute(
        AttributeLoc::Function,
        cx.create_string_attribute("no-trapping-math", "true"),
    );
    let noalias = Attribute::get_named_enum_kind_id("noalias");
    f.add_attribute(AttributeLoc::Param(0), cx.create_enum_attribute(noalias, 0));
    let b = cx.create_builder();
    let entry = cx.append_basic_block(f, "entry");
    b.position_at_end(entry);
    let bufs = f.get_nth_param(0).unwrap().into_pointer_value();
    let begin = f.get_nth_param(1).unwrap().into_int_value();
    let end = f.get_nth_param(2).unwrap().into_int_value();
    bufs.set_name("bufs");
    begin.set_name("begin");
    end.set_name("end");
    let nbuf = k.inputs.len() + k.outputs.len();
    let mut ptrs = vec![];
    for i in 0..nbuf {
        let p = unsafe {
            b.build_in_bounds_gep(ptr, bufs, &[i64t.const_int(i as u64, false)], "")
                .unwrap()
        };
        let name = if i < k.inputs.len() {
            format!("in{i}")
        } else {
            format!("out{}", i - k.inputs.len())
        };
        ptrs.push(b.build_load(ptr, p, &name).unwrap().into_pointer_value());
    }
    let target = Cpu {
        begin,
        end,
        avx2: matches!(cpu, "x86-64-v3" | "x86-64-v4"),
        avx512: cpu == "x86-64-v4",
    };
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
    if k.reduce.is_some() && column_reduction(k) {
        column_reduction_body(&lw);
    } else if k.reduce.is_some() {
        reduction_body(&lw);
    } else {
        elementwise_body(&lw);
    }
    b.build_return(None).unwrap();
    f
}

/// Points of an elementwise kernel, row by row.
fn elementwise_body<'ctx>(lw: &Lower<'_, 'ctx>) {
    let k = lw.kernel;
    let (begin, end, _) = lw.target.point_range(lw, lw.num_points());
    let rank = k.shape.len();
    // Every result of the body `pw` lowers, at one point.
    let store_all_of = |pw: &Lower<'_, 'ctx>, coords: &[IntValue<'ctx>], lin: IntValue<'ctx>| {
        let vals = pw.eval(coords);
        for (j, &r) in pw.kernel.results.iter().enumerate() {
            pw.store_result(j, lin, vals[r].unwrap(), pw.kernel.types[r]);
        }
    };
    let store_all = |coords: &[IntValue<'ctx>], lin: IntValue<'ctx>| store_all_of(lw, coords, lin);
    // The innermost dimension of size > 1 (later dims have size 1).
    let Some(inner) = (0..rank).rev().find(|&d| k.shape[d] > 1) else {
        // A single point (or several identical ones): every coordinate is 0.
        let zeros = vec![lw.ci64(0); rank];
        lw.for_loop("i", begin, end, lw.ci64(1), |i| store_all(&zeros, i));
        return;
    };
    // A body that selects by comparing the innermost coordinate with
    // constants (a concatenation along it) runs one loop per range between
    // them, each with the body simplified for its range (crate::pieces).
    let cuts = crate::pieces::cut_points(k, &crate::lower::live_nodes(k), inner, k.shape[inner]);
    let mut bounds = vec![0i128];
    bounds.extend(&cuts);
    bounds.push(k.shape[inner] as i128);
    let pieces: Vec<(i128, i128, Kernel)> = if cuts.is_empty() {
        vec![]
    } else {
        bounds.windows(2).map(|w| (w[0], w[1], crate::pieces::specialize(k, inner, w[0], w[1]))).collect()
    };
    row_runs(lw, begin, end, k.shape[inner], None, |i, row, c0, n| {
        let mut coords = vec![lw.ci64(0); rank];
        let outer = lw.delinearize(row, &k.shape[..inner]);
        coords[..inner].copy_from_slice(&outer);
        let row_base = lw.isub(i, c0);
        let stop = lw.iadd(c0, n);
        if pieces.is_empty() {
            lw.for_loop("j", c0, stop, lw.ci64(1), |j| {
                let mut c = coords.clone();
                c[inner] = j;
                let lin = lw.iadd(row_base, j);
                store_all(&c, lin);
            });
            return;
        }
        for (lo, hi, piece) in &pieces {
            let pw = Lower::new(lw.cx, lw.module, lw.b, lw.target, piece, lw.func, lw.inputs.clone(), lw.outputs.clone());
            let start = lw.iintr2("llvm.smax", c0, lw.ci64(*lo as i64));
            let finish = lw.iintr2("llvm.smin", stop, lw.ci64(*hi as i64));
            pw.for_loop("j", start, finish, pw.ci64(1), |j| {
                let mut c = coords.clone();
                c[inner] = j;
                store_all_of(&pw, &c, pw.iadd(row_base, j));
            });
        }
    });
}

/// Walks the output points `[begin, end)` in runs that stay within one row
/// of a dimension of `len` points (and, with `max`, hold at most that many):
/// `f(i, row, c0, n)` gets a run's first point, its row, its first
/// coordinate in the row and its length.
fn row_runs<'ctx>(
    lw: &Lower<'_, 'ctx>,
    begin: IntValue<'ctx>,
    end: IntValue<'ctx>,
    len: u64,
    max: Option<u32>,
    f: impl FnOnce(IntValue<'ctx>, IntValue<'ctx>, IntValue<'ctx>, IntValue<'ctx>),
) {
    let len = lw.ci64(len as i64);
    let b = lw.b;
    let pre = b.get_insert_block().unwrap();
    let head = lw.cx.append_basic_block(lw.func, "row.head");
    let body = lw.cx.append_basic_block(lw.func, "row.body");
    let exit = lw.cx.append_basic_block(lw.func, "row.exit");
    b.build_unconditional_branch(head).unwrap();
    b.position_at_end(head);
    let phi = b.build_phi(lw.i64(), "i").unwrap();
    let i = phi.as_basic_value().into_int_value();
    let more = b.build_int_compare(IntPredicate::SLT, i, end, "").unwrap();
    b.build_conditional_branch(more, body, exit).unwrap();
    b.position_at_end(body);
    // Row of point i, its first coordinate in the row, and the points left.
    let row = b.build_int_unsigned_div(i, len, "row").unwrap();
    let c0 = b.build_int_unsigned_rem(i, len, "c0").unwrap();
    let mut n = lw.iintr2("llvm.smin", lw.isub(len, c0), lw.isub(end, i));
    if let Some(m) = max {
        n = lw.iintr2("llvm.smin", n, lw.ci64(m as i64));
    }
    f(i, row, c0, n);
    let next = lw.iadd(i, n);
    let latch = b.get_insert_block().unwrap();
    b.build_unconditional_branch(head).unwrap();
    phi.add_incoming(&[(&begin, pre), (&next, latch)]);
    b.position_at_end(exit);
}

/// Output points of a reduction kernel, each reducing over the reduction space.
fn reduction_body<'ctx>(lw: &Lower<'_, 'ctx>) {
    let k = lw.kernel;
    let r = k.reduce.as_ref().unwrap();
    let (begin, end, step) = lw.target.point_range(lw, lw.num_points());
    lw.for_loop("o", begin, end, step, |o| {
        let out_coords = lw.delinearize(o, &k.shape);
        let accs: Vec<_> = k
            .results
            .iter()
            .enumerate()
            .map(|(j, _)| {
                let a = lw.entry_alloca(reg_type(lw.cx, r.acc), &format!("acc{j}"));
                lw.b.build_store(a, lw.identity(r.kind, r.acc)).unwrap();
                a
            })
            .collect();
        let acc_ty = reg_type(lw.cx, r.acc);
        nest(lw, &r.shape, 0, &mut out_coords.clone(), false, &|coords| {
            let vals = lw.eval(coords);
            for (j, &res) in k.results.iter().enumerate() {
                let x = lw.to_acc(vals[res].unwrap(), res, r.acc);
                let a = lw.b.build_load(acc_ty, accs[j], "").unwrap();
                let c = lw.combine(r.kind, r.acc, a, x);
                lw.b.build_store(accs[j], c).unwrap();
            }
        });
        for (j, _) in k.results.iter().enumerate() {
            let a = lw.b.build_load(acc_ty, accs[j], "").unwrap();
            lw.store_result(j, o, a, compute_type(r.acc));
        }
    });
}

/// Output points a column reduction computes together (one accumulator each).
const COLUMN_BLOCK: u32 = 64;

/// Whether reduction kernel `k` is a column reduction: its loads step by one
/// element along the innermost output dimension and none steps by one along
/// the innermost reduced dimension (a reduction over leading dimensions, such
/// as batch-norm statistics over [batch, height, width] per channel). Point by
/// point, each output would then stride through memory; computed a block of
/// adjacent outputs at a time, every load is contiguous across the block.
fn column_reduction(k: &Kernel) -> bool {
    use pjc_plan::kernel::Node;
    let Some(r) = &k.reduce else { return false };
    let rank = k.shape.len();
    if rank == 0 || k.shape[rank - 1] < 4 {
        return false;
    }
    let Some(inner_red) = (0..r.shape.len()).rev().find(|&d| r.shape[d] > 1).map(|d| rank + d) else { return false };
    let (mut along_out, mut along_red) = (false, false);
    for n in &k.nodes {
        if let Node::Load { index, .. } = n {
            match k.affine(*index) {
                Some(a) => {
                    along_out |= a.coeff(rank - 1) == 1;
                    along_red |= a.coeff(inner_red).abs() == 1;
                }
                None => return false,
            }
        }
    }
    along_out && !along_red
}

/// A column reduction ([`column_reduction`]): blocks of up to
/// [`COLUMN_BLOCK`] adjacent output points of one row, each block reducing
/// over the whole reduction space with one accumulator per point in the
/// innermost loop. Every point combines its values in the same order as
/// [`reduction_body`], so the results are bitwise the same.
fn column_reduction_body<'ctx>(lw: &Lower<'_, 'ctx>) {
    let k = lw.kernel;
    let r = k.reduce.as_ref().unwrap();
    let (begin, end, _) = lw.target.point_range(lw, lw.num_points());
    let rank = k.shape.len();
    let inner = rank - 1;
    let acc_ty = reg_type(lw.cx, r.acc);
    let arr_ty = inkwell::types::BasicType::array_type(&acc_ty, COLUMN_BLOCK);
    let accs: Vec<_> = (0..k.results.len()).map(|j| lw.entry_alloca(arr_ty.into(), &format!("accs{j}"))).collect();
    let slot = |j: usize, at: IntValue<'ctx>| unsafe { lw.b.build_in_bounds_gep(arr_ty, accs[j], &[lw.ci64(0), at], "").unwrap() };
    let b = lw.b;
    // Blocks of points i .. i+n of one row (same outer coordinates).
    row_runs(lw, begin, end, k.shape[inner], Some(COLUMN_BLOCK), |i, row, c0, n| {
        let mut prefix = lw.delinearize(row, &k.shape[..inner]);
        prefix.push(lw.ci64(0));
        lw.for_loop("j0", lw.ci64(0), n, lw.ci64(1), |j| {
            for a in 0..k.results.len() {
                b.build_store(slot(a, j), lw.identity(r.kind, r.acc)).unwrap();
            }
        });
        nest(lw, &r.shape, 0, &mut prefix.clone(), true, &|coords| {
            lw.for_loop("j", lw.ci64(0), n, lw.ci64(1), |j| {
                let mut c = coords.to_vec();
                c[inner] = lw.iadd(c0, j);
                let vals = lw.eval(&c);
                for (a, &res) in k.results.iter().enumerate() {
                    let x = lw.to_acc(vals[res].unwrap(), res, r.acc);
                    let p = slot(a, j);
                    let old = b.build_load(acc_ty, p, "").unwrap();
                    let v = lw.combine(r.kind, r.acc, old, x);
                    b.build_store(p, v).unwrap();
                }
            });
        });
        lw.for_loop("j1", lw.ci64(0), n, lw.ci64(1), |j| {
            for a in 0..k.results.len() {
                let v = b.build_load(acc_ty, slot(a, j), "").unwrap();
                lw.store_result(a, lw.iadd(i, j), v, compute_type(r.acc));
            }
        });
    });
}

/// Nested loops over the reduced dimensions `dims[d..]` (size-1 dims get
/// coordinate 0 without a loop); `f` is called with all coordinates. Every
/// loop that holds another one is kept rolled ([`Lower::counted_loop`]):
/// all of them when `f` itself builds a loop (`inner_loop`), else all but
/// the innermost.
pub(crate) fn nest<'ctx>(
    lw: &Lower<'_, 'ctx>,
    dims: &[u64],
    d: usize,
    coords: &mut Vec<IntValue<'ctx>>,
    inner_loop: bool,
    f: &dyn Fn(&[IntValue<'ctx>]),
) {
    if d == dims.len() {
        f(coords);
        return;
    }
    if dims[d] == 1 {
        coords.push(lw.ci64(0));
        nest(lw, dims, d + 1, coords, inner_loop, f);
        coords.pop();
        return;
    }
    let holds_loop = inner_loop || dims[d + 1..].iter().any(|&n| n > 1);
    let body = |i| {
        let mut c = coords.clone();
        c.push(i);
        nest(lw, dims, d + 1, &mut c, inner_loop, f);
    };
    lw.counted_loop(&format!("r{d}"), lw.ci64(0), lw.ci64(dims[d] as i64), lw.ci64(1), !holds_loop, body);
}

/// The unoptimized host module of every kernel of `plan`.
pub fn build_module<'ctx>(
    cx: &'ctx Context,
    plan: &Plan,
    cpu: &str,
    tm: &TargetMachine,
) -> Result<Module<'ctx>, CodegenError> {
    module_of(cx, &plan.name, plan.kernels(), cpu, tm)
}

/// The unoptimized host module `name` holding `kernels`, each a function
/// named after the kernel.
pub(crate) fn module_of<'ctx, 'k>(
    cx: &'ctx Context,
    name: &str,
    kernels: impl IntoIterator<Item = &'k Kernel>,
    cpu: &str,
    tm: &TargetMachine,
) -> Result<Module<'ctx>, CodegenError> {
    let module = cx.create_module(name);
    module.set_triple(&TargetTriple::create(TRIPLE));
    module.set_data_layout(&tm.get_target_data().get_data_layout());
    for k in kernels {
        build_kernel(cx, &module, k, cpu);
    }
    keep_vector_variants(cx, &module);
    module
        .verify()
        .map_err(|e| CodegenError::Llvm(format!("invalid LLVM IR for module {name}: {}", e.to_string())))?;
    Ok(module)
}

/// Lists the libmvec declarations in `llvm.compiler.used`, so that they
/// survive until the loop vectorizer looks them up.
fn keep_vector_variants<'ctx>(cx: &'ctx Context, module: &Module<'ctx>) {
    let decls: Vec<_> = module
        .get_functions()
        .filter(|f| f.get_name().to_bytes().starts_with(b"_ZGV"))
        .collect();
    if decls.is_empty() {
        return;
    }
    let ptr = cx.ptr_type(AddressSpace::default());
    let vals: Vec<_> = decls
        .iter()
        .map(|f| f.as_global_value().as_pointer_value())
        .collect();
    let arr = ptr.const_array(&vals);
    let g = module.add_global(
        ptr.array_type(vals.len() as u32),
        None,
        "llvm.compiler.used",
    );
    g.set_linkage(inkwell::module::Linkage::Appending);
    g.set_section(Some("llvm.metadata"));
    g.set_initializer(&arr);
}

/// Runs LLVM's pipeline of the default optimization level ([`OptLevel`]).
pub fn optimize(module: &Module<'_>, tm: &TargetMachine) -> Result<(), CodegenError> {
    optimize_at(module, tm, OptLevel::default())
}


/// Runs the x86-64 pipeline of level `opt` ([`OptLevel::host_pipeline`]).
pub fn optimize_at(module: &Module<'_>, tm: &TargetMachine, opt: OptLevel) -> Result<(), CodegenError> {
    let opts = PassBuilderOptions::create();
    opts.set_loop_vectorization(true);
    opts.set_loop_slp_vectorization(true);
    opts.set_loop_unrolling(true);
    // No interleaving (the vectorizer unrolling its vector loop by 2-4): the
    // kernels are memory-bound loops whose time it does not change (ResNet-50
    // train: 835 vs 830 ms of kernels per step, a GPT block's 14.5 vs 15.1 ms),
    // and without it LLVM takes 22 % less time on them (3.1 -> 2.45 s).
    opts.set_loop_interleaving(false);
    module
        .run_passes(opt.host_pipeline(), tm, opts)
        .map_err(|e| CodegenError::Llvm(e.to_string()))
}

/// The optimized x86-64 LLVM IR of every kernel of `plan` (`pjc compile --emit llvm`).
pub fn emit_llvm(plan: &Plan) -> Result<String, CodegenError> {
    let cx = Context::create();
    let tm = target_machine(CPU)?;
    let m = build_module(&cx, plan, CPU, &tm)?;
    optimize(&m, &tm)?;
    Ok(m.print_to_string().to_string())
}

/// The unoptimized IR (what the lowering produces), for inspection and tests.
pub fn emit_llvm_unoptimized(plan: &Plan) -> Result<String, CodegenError> {
    let cx = Context::create();
    let tm = target_machine(CPU)?;
    let m = build_module(&cx, plan, CPU, &tm)?;
    Ok(m.print_to_string().to_string())
}

// ---- JIT ------------------------------------------------------------------------------

pub use pjc_host::{default_threads, run_kernel_threads, Buffers, HostBuf, KernelFn};

/// The kernels of one plan compiled in-process (MCJIT). Keeps the LLVM context
/// and the engine alive as long as the function pointers are used.
pub struct JitPlan {
    plan: Plan,
    /// Per step in pre-order, the kernel's entry point (None for other steps).
    fns: Vec<Option<KernelFn>>,
    // Drop order: the module handle, then the engine, then the context.
    _module: Module<'static>,
    _engine: ExecutionEngine<'static>,
    _cx: Box<Context>,
}

impl JitPlan {
    /// Compiles every kernel of `plan`.
    pub fn compile(plan: &Plan) -> Result<JitPlan, CodegenError> {
        let cx = Box::new(Context::create());
        // SAFETY: the context is boxed (its address never changes) and is dropped
        // after the module and the engine that borrow it (field order).
        let cxr: &'static Context = unsafe { &*(cx.as_ref() as *const Context) };
        let cpu = jit_cpu();
        let tm = target_machine(cpu)?;
        // Each distinct body once, under its first kernel's name.
        let kernels: Vec<&Kernel> = plan.kernels().collect();
        let distinct = pjc_plan::kernel::distinct(kernels.iter().copied());
        let module = module_of(cxr, &plan.name, distinct.bodies.iter().map(|b| b.0), cpu, &tm)?;
        optimize(&module, &tm)?;
        let engine = module
            .create_jit_execution_engine(OptimizationLevel::Aggressive)
            .map_err(|e| CodegenError::Llvm(format!("cannot create the JIT: {}", e.to_string())))?;
        let mut fns = vec![];
        let mut nth = 0;
        // Per step in pre-order (the blocks of control steps included): what
        // `pjc_host::run_steps` indexes.
        for step in pjc_plan::control::preorder(&plan.steps) {
            fns.push(match step {
                Step::Kernel(_) => {
                    let name = &distinct.bodies[distinct.body_of[nth]].0.name;
                    nth += 1;
                    let addr = engine.get_function_address(name).map_err(|e| {
                        CodegenError::Llvm(format!("JIT: kernel {name} not found: {e:?}"))
                    })?;
                    // SAFETY: the function was generated with exactly this signature.
                    Some(unsafe { std::mem::transmute::<usize, KernelFn>(addr) })
                }
                _ => None,
            });
        }
        Ok(JitPlan {
            plan: plan.clone(),
            fns,
            _module: module,
            _engine: engine,
            _cx: cx,
        })
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The entry point of the kernel of step `i`.
    pub fn kernel_fn(&self, step: usize) -> Option<KernelFn> {
        self.fns[step]
    }

    /// Every step's entry point (None for library steps and collectives).
    pub fn kernel_fns(&self) -> &[Option<KernelFn>] {
        &self.fns
    }

    /// Allocates the plan's buffers with parameters and constants filled in.
    pub fn buffers(&self, args: &[Tensor]) -> Result<Buffers, CodegenError> {
        Buffers::new(&self.plan, args).map_err(host_error)
    }

    /// Runs every step on `bufs` with up to `threads` threads per kernel, as
    /// one device alone (collectives are copies).
    pub fn run_steps(&self, bufs: &mut Buffers, threads: usize) -> Result<(), CodegenError> {
        pjc_host::run_steps(&self.plan, &self.fns, bufs, threads, &mut pjc_host::SingleDevice, None)
            .map_err(host_error)
    }

    /// Runs the plan on `args` and returns its results.
    pub fn run(&self, args: &[Tensor]) -> Result<Vec<Tensor>, CodegenError> {
        let mut bufs = self.buffers(args)?;
        self.run_steps(&mut bufs, default_threads())?;
        Ok(bufs.results(&self.plan))
    }
}

fn host_error(e: pjc_host::HostError) -> CodegenError {
    match e {
        pjc_host::HostError::Input(m) => CodegenError::Input(m),
        pjc_host::HostError::Runtime(m) => CodegenError::Runtime(m),
    }
}

/// Runs a whole single-device plan: JIT-compiled kernels for `Step::Kernel`,
/// GEMM or the reference library for library steps, identity collectives.
pub fn execute_plan_jit(plan: &Plan, args: &[Tensor]) -> Result<Vec<Tensor>, CodegenError> {
    JitPlan::compile(plan)?.run(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(src: &str) -> Plan {
        let m = pjc_front::load(src).unwrap_or_else(|e| panic!("{e:?}"));
        pjc_fusion::plan(&m.funcs[m.func_by_name("main").unwrap()]).unwrap()
    }

    /// Loops that hold other loops are kept rolled: a batch-norm statistic
    /// (a column reduction over [8, 14, 14]) stays one loop nest instead of
    /// 196 unrolled copies of its vectorized column block (LLVM took 120 ms
    /// on it, against about 10 ms now), and the innermost reduction loop of a
    /// row reduction is still LLVM's to unroll.
    #[test]
    fn outer_loops_are_not_unrolled() {
        let cols = plan("func @main(%x: f32[8,14,14,256]) -> (s: f32[256]) {
  %s = reduce %x {dims=[0,1,2], kind=sum} : f32[256]
  return %s
}");
        assert!(cols.kernels().all(column_reduction), "{cols}");
        let ir = emit_llvm_unoptimized(&cols).unwrap();
        // The three reduction loops around the column block, each marked.
        assert_eq!(ir.matches("!llvm.loop").count(), 3, "{ir}");
        assert!(ir.contains("!\"llvm.loop.unroll.disable\""), "{ir}");
        let opt = emit_llvm(&cols).unwrap();
        let lines = opt.lines().count();
        assert!(lines < 1500, "the optimized column reduction has {lines} lines:\n{opt}");
        let rows = plan("func @main(%x: f32[6,7]) -> (s: f32[6]) {
  %s = reduce %x {dims=[1], kind=sum} : f32[6]
  return %s
}");
        assert!(!emit_llvm_unoptimized(&rows).unwrap().contains("llvm.loop.unroll.disable"));
    }

    /// Concatenations along the innermost dimension run one loop per part
    /// (crate::pieces) and give exactly the interpreter's values, with the
    /// points split over any number of threads (runs that start and end
    /// inside a part, or span several).
    #[test]
    fn piecewise_concatenations_agree_with_the_interpreter() {
        let src = "func @main(%a: f32[7,5], %b: f32[7,1], %c: i32[7,3], %d: f32[21]) -> (y: f32[7,9], z: f32[35]) {
  %cf = convert %c : f32[7,3]
  %t = neg %a
  %y = concat %t, %b, %cf {dim=1} : f32[7,9]
  %fa = reshape %a : f32[35]
  %z0 = slice %fa {start=[0], limit=[14], stride=[1]} : f32[14]
  %z = concat %z0, %d {dim=0} : f32[35]
  return %y, %z
}";
        let m = pjc_front::load(src).unwrap_or_else(|e| panic!("{e:?}"));
        let p = pjc_fusion::plan(&m.funcs[m.func_by_name("main").unwrap()]).unwrap();
        for k in p.kernels() {
            let inner = k.shape.len() - 1;
            assert!(!crate::pieces::cut_points(k, &crate::lower::live_nodes(k), inner, k.shape[inner]).is_empty(), "{k}");
        }
        let f32s = |shape: Vec<usize>, s: u32| {
            let n: usize = shape.iter().product();
            Tensor::new(shape, pjc_tensor::Buf::F32((0..n as u32).map(|i| ((i * 37 + s) % 101) as f32 / 17.0 - 2.5).collect()))
        };
        let args = vec![
            f32s(vec![7, 5], 1),
            f32s(vec![7, 1], 2),
            Tensor::new(vec![7, 3], pjc_tensor::Buf::I32((0..21).map(|i| i * 7 - 60).collect())),
            f32s(vec![21], 3),
        ];
        let want = pjc_interp::eval(&m, m.func_by_name("main").unwrap(), args.clone()).unwrap();
        let jit = JitPlan::compile(&p).unwrap();
        for threads in [1, 2, 3, 5, 8] {
            let mut bufs = jit.buffers(&args).unwrap();
            jit.run_steps(&mut bufs, threads).unwrap();
            let got = bufs.results(&p);
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.data, w.data, "{threads} threads");
            }
        }
    }

    /// Reductions over leading dimensions take the blocked column loop; row
    /// reductions, and kernels whose loads are not affine, keep one point at
    /// a time. Both give the same bits: each point combines in the same order.
    #[test]
    fn column_reductions_are_recognised_and_agree_with_the_point_loop() {
        let cols = plan("func @main(%x: f32[5,6,67]) -> (s: f32[67], m: f32[6,67]) {
  %s = reduce %x {dims=[0,1], kind=sum} : f32[67]
  %m = reduce %x {dims=[0], kind=max} : f32[6,67]
  return %s, %m
}");
        assert!(cols.kernels().all(column_reduction), "{cols}");
        let rows = plan("func @main(%x: f32[5,67]) -> (s: f32[5]) {
  %s = reduce %x {dims=[1], kind=sum} : f32[5]
  return %s
}");
        assert!(!rows.kernels().any(column_reduction), "{rows}");
        // Values whose f32 sums depend on the order: the column loop must give
        // exactly what a point-at-a-time f32 sum in row-major order gives.
        let n = 5 * 6 * 67;
        let v: Vec<f32> = (0..n).map(|i| ((i * 7919 % 1000) as f32 - 500.0) * 1.37e-3 + (i % 3) as f32 * 1e4).collect();
        let x = Tensor::new(vec![5, 6, 67], pjc_tensor::Buf::F32(v.clone()));
        let got = execute_plan_jit(&cols, &[x]).unwrap();
        let pjc_tensor::Buf::F32(s) = &got[0].data else { panic!() };
        let pjc_tensor::Buf::F32(m) = &got[1].data else { panic!() };
        for c in 0..67 {
            let mut acc = 0.0f32;
            for r in 0..30 {
                acc += v[r * 67 + c];
            }
            assert_eq!(s[c].to_bits(), acc.to_bits(), "sum column {c}");
        }
        for j in 0..6 {
            for c in 0..67 {
                let want = (0..5).map(|i| v[(i * 6 + j) * 67 + c]).fold(f32::NEG_INFINITY, f32::max);
                assert_eq!(m[j * 67 + c], want, "max ({j}, {c})");
            }
        }
    }
}
