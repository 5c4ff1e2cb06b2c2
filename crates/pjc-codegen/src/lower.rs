//! Lowering of one [`Kernel`]'s body to LLVM IR, shared by the x86-64 and the
//! NVPTX code generators.
//!
//! [`Lower`] evaluates the kernel's SSA nodes at one iteration point (the
//! coordinates are given as i64 values) in the builder's current block, with the
//! exact semantics of spec section 11 (the same as
//! `pjc_plan::exec::run_kernel`):
//!
//! - registers hold the node's *compute type* (f16/bf16 as f32, pred as i1);
//!   memory holds the *storage type* (f16/bf16 as their 16 bits, pred as one byte
//!   0/1). The 16-bit conversions are written here as integer bit manipulation
//!   (round to nearest even, NaN kept quiet), so they are the same on every
//!   target and never depend on a backend's `half`/`bfloat` support;
//! - integer `div`/`rem` guard division by zero and `INT_MIN / -1` with selects,
//!   shifts guard out-of-range amounts: no instruction ever sees an operand for
//!   which LLVM would give poison or undefined behaviour;
//! - float → int `convert` uses the saturating `fptosi.sat`/`fptoui.sat`
//!   intrinsics (NaN → 0); `max`/`min` use `llvm.maximum`/`llvm.minimum` (NaN
//!   propagates, -0.0 < +0.0); `round` is `llvm.round` (half away from zero),
//!   `round_even` is `llvm.roundeven`;
//! - conversions to f16/bf16 from f64 or from wide integers first round to f32
//!   with round-to-odd, so the result is rounded once (as the interpreter does);
//! - no fast-math flags anywhere except `reassoc` on the accumulation of a
//!   float sum/product reduction (the spec allows reassociation there), so LLVM
//!   never contracts `a*b+c` into an FMA.
//!
//! What differs per target is behind [`Target`]: how a libm function is called
//! (`expf` on the CPU, `__nv_expf` from libdevice on NVPTX), the address space of
//! buffers, and the iteration range of a thread.

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::Module;
use inkwell::types::{BasicTypeEnum, FloatType, IntType};
use inkwell::values::{
    BasicValue, BasicValueEnum, FloatValue, FunctionValue, IntValue, PointerValue,
};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate};
use pjc_plan::kernel::{compute_type, CmpDir, IndexOp, Kernel, Node, ReduceKind};
use pjc_ir::{BinaryOp, DType, UnaryOp};

/// What the shared lowering needs to know about a target.
pub trait Target<'ctx> {
    /// The symbol implementing C math function `name` (`"expf"`, `"atan2"`, ...).
    fn math_symbol(&self, name: &str) -> String;
    /// Address space of the kernel's buffer pointers.
    fn buffer_addrspace(&self) -> AddressSpace;
    /// The iteration range of the current thread over `count` points, as
    /// `(first, end, step)`: the CPU function processes `[begin, end)` with step 1;
    /// an NVPTX thread starts at its global id and strides by the grid size.
    fn point_range(
        &self,
        lw: &Lower<'_, 'ctx>,
        count: IntValue<'ctx>,
    ) -> (IntValue<'ctx>, IntValue<'ctx>, IntValue<'ctx>);
    /// SIMD variants of math symbol `sym` (taking `nargs` arguments) the loop
    /// vectorizer may call instead, as `(lanes, vector symbol)` in the vector
    /// function ABI (glibc's libmvec on the CPU); none by default.
    fn vector_variants(&self, _sym: &str, _nargs: usize) -> Vec<(u32, String)> {
        vec![]
    }
}

/// Builds the IR of one kernel body inside an existing function.
pub struct Lower<'a, 'ctx> {
    pub cx: &'ctx Context,
    pub module: &'a Module<'ctx>,
    pub b: &'a Builder<'ctx>,
    pub target: &'a dyn Target<'ctx>,
    pub kernel: &'a Kernel,
    pub func: FunctionValue<'ctx>,
    /// Base pointers of the kernel's input buffers (in `kernel.inputs` order).
    pub inputs: Vec<PointerValue<'ctx>>,
    /// Base pointers of the kernel's output buffers.
    pub outputs: Vec<PointerValue<'ctx>>,
    /// Values already rounded to f16/bf16 with their 16 bits, so that storing
    /// them does not round again.
    narrowed: std::cell::RefCell<Vec<(FloatValue<'ctx>, DType, IntValue<'ctx>)>>,
}

/// Register type of a compute dtype.
pub fn reg_type<'ctx>(cx: &'ctx Context, d: DType) -> BasicTypeEnum<'ctx> {
    match compute_type(d) {
        DType::F64 => cx.f64_type().into(),
        DType::F32 => cx.f32_type().into(),
        DType::Pred => cx.bool_type().into(),
        d => cx
            .custom_width_int_type(std::num::NonZeroU32::new(d.bits()).unwrap())
            .unwrap()
            .into(),
    }
}

/// Memory type of one element of a buffer of dtype `d`.
pub fn storage_type<'ctx>(cx: &'ctx Context, d: DType) -> BasicTypeEnum<'ctx> {
    match d {
        DType::F64 => cx.f64_type().into(),
        DType::F32 => cx.f32_type().into(),
        _ => cx
            .custom_width_int_type(std::num::NonZeroU32::new(d.bits()).unwrap())
            .unwrap()
            .into(),
    }
}

/// Which nodes the results need (others are not emitted).
pub fn live_nodes(k: &Kernel) -> Vec<bool> {
    let mut live = vec![false; k.nodes.len()];
    for &r in &k.results {
        live[r] = true;
    }
    for i in (0..k.nodes.len()).rev() {
        if !live[i] {
            continue;
        }
        let mut mark = |n: usize| live[n] = true;
        match &k.nodes[i] {
            Node::Coord(_) | Node::ConstInt(..) | Node::ConstFloat(..) | Node::ConstBool(_) => {}
            Node::Load { index, .. } => mark(*index),
            Node::Unary { x, .. } | Node::Convert { x, .. } | Node::Bitcast { x, .. } => mark(*x),
            Node::Binary { a, b, .. } | Node::Compare { a, b, .. } | Node::Index { a, b, .. } => {
                mark(*a);
                mark(*b)
            }
            Node::Select { cond, a, b } => {
                mark(*cond);
                mark(*a);
                mark(*b)
            }
        }
    }
    live
}

/// A register value by lane class, as the elementwise lowering matches on it.
#[derive(Copy, Clone)]
enum Lane<'ctx> {
    Float(FloatValue<'ctx>),
    /// With whether the dtype is signed.
    Int(IntValue<'ctx>, bool),
    Pred(IntValue<'ctx>),
}

impl<'ctx> Lane<'ctx> {
    fn of(x: BasicValueEnum<'ctx>, d: DType) -> Lane<'ctx> {
        if d.is_float() {
            Lane::Float(x.into_float_value())
        } else if d.is_pred() {
            Lane::Pred(x.into_int_value())
        } else {
            Lane::Int(x.into_int_value(), d.is_signed_int())
        }
    }
}

/// An op the verifier does not admit on this dtype (the op table's operand
/// class): no verified program reaches it.
fn undefined(op: impl std::fmt::Display, d: DType) -> ! {
    unreachable!("'{op}' on {d}: the verifier only admits the dtypes its op table entry declares")
}

impl<'a, 'ctx> Lower<'a, 'ctx> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cx: &'ctx Context,
        module: &'a Module<'ctx>,
        b: &'a Builder<'ctx>,
        target: &'a dyn Target<'ctx>,
        kernel: &'a Kernel,
        func: FunctionValue<'ctx>,
        inputs: Vec<PointerValue<'ctx>>,
        outputs: Vec<PointerValue<'ctx>>,
    ) -> Self {
        Lower {
            cx,
            module,
            b,
            target,
            kernel,
            func,
            inputs,
            outputs,
            narrowed: Default::default(),
        }
    }

    // ---- small helpers ------------------------------------------------------------

    pub fn i1(&self) -> IntType<'ctx> {
        self.cx.bool_type()
    }
    pub fn i8(&self) -> IntType<'ctx> {
        self.cx.i8_type()
    }
    pub fn i16(&self) -> IntType<'ctx> {
        self.cx.i16_type()
    }
    pub fn i32(&self) -> IntType<'ctx> {
        self.cx.i32_type()
    }
    pub fn i64(&self) -> IntType<'ctx> {
        self.cx.i64_type()
    }
    pub fn f32(&self) -> FloatType<'ctx> {
        self.cx.f32_type()
    }
    pub fn f64(&self) -> FloatType<'ctx> {
        self.cx.f64_type()
    }
    pub fn ci64(&self, x: i64) -> IntValue<'ctx> {
        self.i64().const_int(x as u64, true)
    }
    pub fn ci32(&self, x: i32) -> IntValue<'ctx> {
        self.i32().const_int(x as u32 as u64, false)
    }
    fn cint(&self, t: IntType<'ctx>, x: i128) -> IntValue<'ctx> {
        // Two's complement truncation to the type's width.
        let bits = t.get_bit_width();
        if bits <= 64 {
            t.const_int(x as u64, false)
        } else {
            unreachable!("integers are at most 64 bits")
        }
    }

    /// Calls an (overloaded) LLVM intrinsic.
    pub fn intrinsic(
        &self,
        name: &str,
        tys: &[BasicTypeEnum<'ctx>],
        args: &[BasicValueEnum<'ctx>],
    ) -> BasicValueEnum<'ctx> {
        let intr = Intrinsic::find(name).unwrap_or_else(|| panic!("LLVM has no intrinsic {name}"));
        let f = intr
            .get_declaration(self.module, tys)
            .unwrap_or_else(|| panic!("cannot declare {name}"));
        let args: Vec<_> = args.iter().map(|&a| a.into()).collect();
        self.b
            .build_call(f, &args, "")
            .unwrap()
            .try_as_basic_value()
            .basic()
            .unwrap()
    }

    fn fintr1(&self, name: &str, x: FloatValue<'ctx>) -> FloatValue<'ctx> {
        self.intrinsic(name, &[x.get_type().into()], &[x.into()])
            .into_float_value()
    }
    fn fintr2(&self, name: &str, x: FloatValue<'ctx>, y: FloatValue<'ctx>) -> FloatValue<'ctx> {
        self.intrinsic(name, &[x.get_type().into()], &[x.into(), y.into()])
            .into_float_value()
    }
    pub(crate) fn iintr2(&self, name: &str, x: IntValue<'ctx>, y: IntValue<'ctx>) -> IntValue<'ctx> {
        self.intrinsic(name, &[x.get_type().into()], &[x.into(), y.into()])
            .into_int_value()
    }

    /// Calls C math function `name` (f64 spelling) on values of type `ty`
    /// (f32 uses the `f`-suffixed function), through the target's symbols.
    fn libm(&self, name: &str, args: &[FloatValue<'ctx>]) -> FloatValue<'ctx> {
        let ty = args[0].get_type();
        let c = if ty == self.f32() {
            format!("{name}f")
        } else {
            name.to_string()
        };
        let sym = self.target.math_symbol(&c);
        let f = self.module.get_function(&sym).unwrap_or_else(|| {
            let params: Vec<_> = args.iter().map(|a| a.get_type().into()).collect();
            let f = self
                .module
                .add_function(&sym, ty.fn_type(&params, false), None);
            // Pure functions (no errno): lets LLVM hoist, vectorize and delete them.
            for (attr, v) in [
                ("memory", 0u64),
                ("nounwind", 0),
                ("willreturn", 0),
                ("nosync", 0),
            ] {
                let kind = Attribute::get_named_enum_kind_id(attr);
                f.add_attribute(
                    AttributeLoc::Function,
                    self.cx.create_enum_attribute(kind, v),
                );
            }
            f
        });
        let variants = self.target.vector_variants(&sym, args.len());
        let argv: Vec<_> = args.iter().map(|&a| a.into()).collect();
        let call = self.b.build_call(f, &argv, "").unwrap();
        if !variants.is_empty() {
            // The vector function ABI mapping the loop vectorizer reads
            // (what LLVM's InjectTLIMappings adds for a -vector-library).
            let params = "v".repeat(args.len());
            let mut names = vec![];
            for (lanes, vsym) in &variants {
                if self.module.get_function(vsym).is_none() {
                    let vt = ty.vec_type(*lanes);
                    let vparams: Vec<_> = args.iter().map(|_| vt.into()).collect();
                    let vf = self
                        .module
                        .add_function(vsym, vt.fn_type(&vparams, false), None);
                    for (attr, v) in [
                        ("memory", 0u64),
                        ("nounwind", 0),
                        ("willreturn", 0),
                        ("nosync", 0),
                    ] {
                        let kind = Attribute::get_named_enum_kind_id(attr);
                        vf.add_attribute(
                            AttributeLoc::Function,
                            self.cx.create_enum_attribute(kind, v),
                        );
                    }
                }
                names.push(format!("_ZGV_LLVM_N{lanes}{params}_{sym}({vsym})"));
            }
            call.add_attribute(
                AttributeLoc::Function,
                self.cx
                    .create_string_attribute("vector-function-abi-variant", &names.join(",")),
            );
        }
        call.try_as_basic_value()
            .basic()
            .unwrap()
            .into_float_value()
    }

    fn select<T: BasicValue<'ctx>>(&self, c: IntValue<'ctx>, a: T, b: T) -> BasicValueEnum<'ctx> {
        self.b.build_select(c, a, b, "").unwrap()
    }
    fn iselect(&self, c: IntValue<'ctx>, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.select(c, a, b).into_int_value()
    }
    fn fselect(
        &self,
        c: IntValue<'ctx>,
        a: FloatValue<'ctx>,
        b: FloatValue<'ctx>,
    ) -> FloatValue<'ctx> {
        self.select(c, a, b).into_float_value()
    }
    fn icmp(&self, p: IntPredicate, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_int_compare(p, a, b, "").unwrap()
    }
    fn fcmp(&self, p: FloatPredicate, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_float_compare(p, a, b, "").unwrap()
    }
    fn and(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_and(a, b, "").unwrap()
    }
    fn or(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_or(a, b, "").unwrap()
    }
    fn xor(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_xor(a, b, "").unwrap()
    }
    fn shl(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_left_shift(a, b, "").unwrap()
    }
    fn lshr(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_right_shift(a, b, false, "").unwrap()
    }
    fn ashr(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_right_shift(a, b, true, "").unwrap()
    }
    pub fn iadd(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_int_add(a, b, "").unwrap()
    }
    pub fn isub(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_int_sub(a, b, "").unwrap()
    }
    pub fn imul(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        self.b.build_int_mul(a, b, "").unwrap()
    }
    fn bitcast_to_int(&self, x: FloatValue<'ctx>) -> IntValue<'ctx> {
        let t = if x.get_type() == self.f32() {
            self.i32()
        } else {
            self.i64()
        };
        self.b.build_bit_cast(x, t, "").unwrap().into_int_value()
    }
    fn bitcast_to_float(&self, x: IntValue<'ctx>) -> FloatValue<'ctx> {
        let t = if x.get_type().get_bit_width() == 32 {
            self.f32()
        } else {
            self.f64()
        };
        self.b.build_bit_cast(x, t, "").unwrap().into_float_value()
    }
    fn zext(&self, x: IntValue<'ctx>, t: IntType<'ctx>) -> IntValue<'ctx> {
        self.b.build_int_z_extend(x, t, "").unwrap()
    }
    fn trunc(&self, x: IntValue<'ctx>, t: IntType<'ctx>) -> IntValue<'ctx> {
        self.b.build_int_truncate(x, t, "").unwrap()
    }

    /// Floor division of i64 `a` by a positive `b` (as `div_euclid`).
    pub fn floor_div(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        let b = self.safe_index_divisor(b);
        let q = self.b.build_int_signed_div(a, b, "").unwrap();
        let r = self.b.build_int_signed_rem(a, b, "").unwrap();
        let neg = self.icmp(IntPredicate::SLT, r, self.ci64(0));
        let q1 = self.isub(q, self.ci64(1));
        self.iselect(neg, q1, q)
    }
    /// Non-negative remainder of i64 `a` by a positive `b` (as `rem_euclid`).
    pub fn floor_rem(&self, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        let b = self.safe_index_divisor(b);
        let r = self.b.build_int_signed_rem(a, b, "").unwrap();
        let neg = self.icmp(IntPredicate::SLT, r, self.ci64(0));
        let r1 = self.iadd(r, b);
        self.iselect(neg, r1, r)
    }
    /// Index divisors are positive by construction; a non-constant one is
    /// guarded anyway so that the division can never trap.
    fn safe_index_divisor(&self, b: IntValue<'ctx>) -> IntValue<'ctx> {
        if let Some(c) = b.get_sign_extended_constant() {
            if c > 0 {
                return b;
            }
        }
        let bad = self.icmp(IntPredicate::SLT, b, self.ci64(1));
        self.iselect(bad, self.ci64(1), b)
    }

    /// Coordinates of linear index `lin` in row-major `shape` (all i64).
    pub fn delinearize(&self, lin: IntValue<'ctx>, shape: &[u64]) -> Vec<IntValue<'ctx>> {
        let mut out = vec![self.ci64(0); shape.len()];
        let mut rest = lin;
        for k in (0..shape.len()).rev() {
            if shape[k] == 1 {
                continue;
            }
            if k == 0 || shape[..k].iter().all(|&d| d == 1) {
                out[k] = rest;
                break;
            }
            let d = self.ci64(shape[k] as i64);
            out[k] = self.b.build_int_unsigned_rem(rest, d, "").unwrap();
            rest = self.b.build_int_unsigned_div(rest, d, "").unwrap();
        }
        out
    }

    // ---- 16-bit float storage -----------------------------------------------------

    /// f32 → bf16 bits, round to nearest even; NaN stays a (quiet) NaN.
    pub fn f32_to_bf16_bits(&self, x: FloatValue<'ctx>) -> IntValue<'ctx> {
        let u = self.bitcast_to_int(x);
        let c = |v: u32| self.i32().const_int(v as u64, false);
        let lsb = self.and(self.lshr(u, c(16)), c(1));
        let rounded = self.iadd(self.iadd(u, c(0x7fff)), lsb);
        let r = self.lshr(rounded, c(16));
        let nan_bits = self.or(self.lshr(u, c(16)), c(0x40));
        let is_nan = self.fcmp(FloatPredicate::UNO, x, x);
        let r = self.iselect(is_nan, nan_bits, r);
        self.trunc(r, self.i16())
    }
    /// bf16 bits → f32 (exact).
    pub fn bf16_bits_to_f32(&self, h: IntValue<'ctx>) -> FloatValue<'ctx> {
        let u = self.zext(h, self.i32());
        self.bitcast_to_float(self.shl(u, self.ci32(16)))
    }
    /// f32 → f16 bits, round to nearest even (subnormals kept, overflow to inf,
    /// NaN quiet with the top payload bits).
    pub fn f32_to_f16_bits(&self, x: FloatValue<'ctx>) -> IntValue<'ctx> {
        let c = |v: u32| self.i32().const_int(v as u64, false);
        let u = self.bitcast_to_int(x);
        let sign = self.and(u, c(0x8000_0000));
        let a = self.xor(u, sign); // |x| bits
                                   // NaN / overflow.
        let is_nan = self.icmp(IntPredicate::UGT, a, c(0x7f80_0000));
        let nan = self.or(c(0x7e00), self.and(self.lshr(a, c(13)), c(0x3ff)));
        let inf_or_nan = self.iselect(is_nan, nan, c(0x7c00));
        // |x| >= 65520 (the f16 overflow threshold after rounding) → inf.
        let overflow = self.icmp(IntPredicate::UGE, a, c(0x477f_f000));
        // Normal results: rebias and round to nearest even on bit 13.
        let odd = self.and(self.lshr(a, c(13)), c(1));
        let n = self.iadd(a, c(0xc800_0fff)); // (15 - 127) << 23, plus 0xfff
        let n = self.iadd(n, odd);
        let normal = self.lshr(n, c(13));
        // Subnormal (|x| < 2^-14) results: add 0.5 so that the FPU rounds the
        // value to a multiple of 2^-24, then take the low bits.
        let magic = self.f32().const_float(0.5);
        let af = self.bitcast_to_float(a);
        let s = self.b.build_float_add(af, magic, "").unwrap();
        let sub = self.isub(self.bitcast_to_int(s), c(0x3f00_0000));
        let is_sub = self.icmp(IntPredicate::ULT, a, c(0x3880_0000));
        let r = self.iselect(is_sub, sub, normal);
        let r = self.iselect(overflow, inf_or_nan, r);
        let r = self.or(r, self.lshr(sign, c(16)));
        self.trunc(r, self.i16())
    }
    /// f16 bits → f32 (exact).
    pub fn f16_bits_to_f32(&self, h: IntValue<'ctx>) -> FloatValue<'ctx> {
        let c = |v: u32| self.i32().const_int(v as u64, false);
        let u = self.zext(h, self.i32());
        let sign = self.shl(self.and(u, c(0x8000)), c(16));
        let exp = self.and(self.lshr(u, c(10)), c(0x1f));
        let man = self.and(u, c(0x3ff));
        let normal = self.or(
            self.shl(self.iadd(exp, c(112)), c(23)),
            self.shl(man, c(13)),
        );
        let special = self.or(c(0x7f80_0000), self.shl(man, c(13)));
        // Subnormal: man * 2^-24, exact in f32.
        let mf = self
            .b
            .build_unsigned_int_to_float(man, self.f32(), "")
            .unwrap();
        let scaled = self
            .b
            .build_float_mul(mf, self.f32().const_float(2f64.powi(-24)), "")
            .unwrap();
        let sub = self.bitcast_to_int(scaled);
        let is_sub = self.icmp(IntPredicate::EQ, exp, c(0));
        let is_special = self.icmp(IntPredicate::EQ, exp, c(0x1f));
        let r = self.iselect(is_sub, sub, normal);
        let r = self.iselect(is_special, special, r);
        self.bitcast_to_float(self.or(r, sign))
    }
    /// An f32 rounded to f16/bf16 (nearest even) and held as f32 again.
    pub fn round_narrow(&self, x: FloatValue<'ctx>, d: DType) -> FloatValue<'ctx> {
        let (h, r) = match d {
            DType::F16 => {
                let h = self.f32_to_f16_bits(x);
                (h, self.f16_bits_to_f32(h))
            }
            DType::BF16 => {
                let h = self.f32_to_bf16_bits(x);
                (h, self.bf16_bits_to_f32(h))
            }
            _ => return x,
        };
        self.narrowed.borrow_mut().push((r, d, h));
        r
    }

    /// The 16 storage bits of `x` as dtype `d` (f16/bf16), reusing them when
    /// `x` was just rounded to `d` (only in the same block, where they dominate).
    fn narrow_bits(&self, x: FloatValue<'ctx>, d: DType) -> IntValue<'ctx> {
        let block = self.b.get_insert_block();
        let known = self
            .narrowed
            .borrow()
            .iter()
            .find(|(v, t, h)| {
                *v == x
                    && *t == d
                    && (h.as_instruction().is_none()
                        || h.as_instruction().map(|i| i.get_parent()) == Some(block))
            })
            .map(|e| e.2);
        match (known, d) {
            (Some(h), _) => h,
            (None, DType::F16) => self.f32_to_f16_bits(x),
            (None, _) => self.f32_to_bf16_bits(x),
        }
    }

    /// f64 → f32 rounded to odd (exact results and non-finite ones unchanged):
    /// rounding that to f16/bf16 to nearest even is the correctly rounded result.
    fn f64_to_f32_odd(&self, x: FloatValue<'ctx>) -> FloatValue<'ctx> {
        let r = self.b.build_float_trunc(x, self.f32(), "").unwrap();
        let back = self.b.build_float_ext(r, self.f64(), "").unwrap();
        let inexact = self.fcmp(FloatPredicate::ONE, back, x);
        let rabs = self.fintr1("llvm.fabs", r);
        let finite = self.fcmp(
            FloatPredicate::OLT,
            rabs,
            self.f32().const_float(f64::INFINITY),
        );
        let inexact = self.and(inexact, finite);
        let away = self.fcmp(
            FloatPredicate::OGT,
            self.fintr1("llvm.fabs", back),
            self.fintr1("llvm.fabs", x),
        );
        let bits = self.bitcast_to_int(r);
        let bits = self.isub(bits, self.zext(away, self.i32()));
        let bits = self.or(bits, self.ci32(1));
        let odd = self.bitcast_to_float(bits);
        self.fselect(inexact, odd, r)
    }
    /// Integer (of dtype `d`) → f32 rounded to odd.
    fn int_to_f32_odd(&self, x: IntValue<'ctx>, d: DType) -> FloatValue<'ctx> {
        if d.bits() <= 16 {
            return if d.is_signed_int() {
                self.b.build_signed_int_to_float(x, self.f32(), "").unwrap()
            } else {
                self.b
                    .build_unsigned_int_to_float(x, self.f32(), "")
                    .unwrap()
            };
        }
        let i64t = self.i64();
        let (m, neg) = if d.is_signed_int() {
            let w = self.b.build_int_s_extend_or_bit_cast(x, i64t, "").unwrap();
            let neg = self.icmp(IntPredicate::SLT, w, self.ci64(0));
            let n = self.isub(self.ci64(0), w);
            (self.iselect(neg, n, w), Some(neg))
        } else {
            (
                self.b.build_int_z_extend_or_bit_cast(x, i64t, "").unwrap(),
                None,
            )
        };
        let lz = self
            .intrinsic(
                "llvm.ctlz",
                &[i64t.into()],
                &[m.into(), self.i1().const_int(0, false).into()],
            )
            .into_int_value();
        let len = self.isub(self.ci64(64), lz);
        let k = self.isub(len, self.ci64(24));
        let k = self.iintr2("llvm.smax", k, self.ci64(0));
        let t = self.shl(self.lshr(m, k), k);
        let lost = self.icmp(IntPredicate::NE, t, m);
        let sticky = self.or(t, self.shl(self.ci64(1), k));
        let t = self.iselect(lost, sticky, t);
        let f = self
            .b
            .build_unsigned_int_to_float(t, self.f32(), "")
            .unwrap();
        match neg {
            Some(neg) => {
                let nf = self.b.build_float_neg(f, "").unwrap();
                self.fselect(neg, nf, f)
            }
            None => f,
        }
    }

    // ---- memory --------------------------------------------------------------------

    /// Loads element `idx` of a buffer of dtype `d`, as its compute type.
    pub fn load_elem(
        &self,
        base: PointerValue<'ctx>,
        d: DType,
        idx: IntValue<'ctx>,
    ) -> BasicValueEnum<'ctx> {
        let st = storage_type(self.cx, d);
        let p = unsafe { self.b.build_in_bounds_gep(st, base, &[idx], "").unwrap() };
        let v = self.b.build_load(st, p, "").unwrap();
        match d {
            DType::F16 => self.f16_bits_to_f32(v.into_int_value()).into(),
            DType::BF16 => self.bf16_bits_to_f32(v.into_int_value()).into(),
            DType::Pred => self
                .icmp(IntPredicate::NE, v.into_int_value(), self.i8().const_zero())
                .into(),
            _ => v,
        }
    }

    /// Stores compute value `v` (of compute dtype `vt`) as element `idx` of a
    /// buffer of dtype `d`, rounding or converting once.
    pub fn store_elem(
        &self,
        base: PointerValue<'ctx>,
        d: DType,
        idx: IntValue<'ctx>,
        v: BasicValueEnum<'ctx>,
        vt: DType,
    ) {
        let v = if compute_type(d) != vt {
            self.convert(v, vt, d)
        } else {
            v
        };
        let st = storage_type(self.cx, d);
        let bits: BasicValueEnum = match d {
            DType::F16 | DType::BF16 => self.narrow_bits(v.into_float_value(), d).into(),
            DType::Pred => self.zext(v.into_int_value(), self.i8()).into(),
            _ => v,
        };
        let p = unsafe { self.b.build_in_bounds_gep(st, base, &[idx], "").unwrap() };
        self.b.build_store(p, bits).unwrap();
    }

    // ---- conversions ---------------------------------------------------------------

    /// `convert` from compute dtype `from` to dtype `to` (spec section 11); the
    /// result has `to`'s compute type (f16/bf16 rounded and held as f32).
    pub fn convert(&self, v: BasicValueEnum<'ctx>, from: DType, to: DType) -> BasicValueEnum<'ctx> {
        let from = compute_type(from);
        if from == to {
            return v;
        }
        let rt = reg_type(self.cx, to);
        if to.is_pred() {
            return if from.is_float() {
                let v = v.into_float_value();
                self.fcmp(FloatPredicate::UNE, v, v.get_type().const_zero())
                    .into()
            } else {
                let v = v.into_int_value();
                self.icmp(IntPredicate::NE, v, v.get_type().const_zero())
                    .into()
            };
        }
        if to.is_int() {
            let it = rt.into_int_type();
            return if from.is_float() {
                let name = if to.is_signed_int() {
                    "llvm.fptosi.sat"
                } else {
                    "llvm.fptoui.sat"
                };
                let fv = v.into_float_value();
                self.intrinsic(name, &[it.into(), fv.get_type().into()], &[fv.into()])
            } else if from.is_pred() {
                self.zext(v.into_int_value(), it).into()
            } else {
                let v = v.into_int_value();
                let (wf, wt) = (from.bits(), to.bits());
                if wt < wf {
                    self.trunc(v, it).into()
                } else if wt == wf {
                    v.into()
                } else if from.is_signed_int() {
                    self.b.build_int_s_extend(v, it, "").unwrap().into()
                } else {
                    self.zext(v, it).into()
                }
            };
        }
        // To a float.
        match to {
            DType::F64 | DType::F32 => {
                let ft = rt.into_float_type();
                if from.is_float() {
                    let fv = v.into_float_value();
                    if to == DType::F64 {
                        self.b.build_float_ext(fv, ft, "").unwrap().into()
                    } else {
                        self.b.build_float_trunc(fv, ft, "").unwrap().into()
                    }
                } else if from.is_signed_int() {
                    self.b
                        .build_signed_int_to_float(v.into_int_value(), ft, "")
                        .unwrap()
                        .into()
                } else {
                    self.b
                        .build_unsigned_int_to_float(v.into_int_value(), ft, "")
                        .unwrap()
                        .into()
                }
            }
            DType::F16 | DType::BF16 => {
                let f = match from {
                    DType::F32 => v.into_float_value(),
                    DType::F64 => self.f64_to_f32_odd(v.into_float_value()),
                    DType::Pred => self
                        .b
                        .build_unsigned_int_to_float(v.into_int_value(), self.f32(), "")
                        .unwrap(),
                    d => self.int_to_f32_odd(v.into_int_value(), d),
                };
                self.round_narrow(f, to).into()
            }
            _ => unreachable!(),
        }
    }

    /// The storage bits of a value of dtype `d` held in compute type.
    fn bits_of(&self, v: BasicValueEnum<'ctx>, d: DType) -> IntValue<'ctx> {
        match d {
            DType::F16 | DType::BF16 => self.narrow_bits(v.into_float_value(), d),
            DType::F32 | DType::F64 => self.bitcast_to_int(v.into_float_value()),
            _ => v.into_int_value(),
        }
    }
    fn value_from_bits(&self, bits: IntValue<'ctx>, d: DType) -> BasicValueEnum<'ctx> {
        match d {
            DType::F16 => self.f16_bits_to_f32(bits).into(),
            DType::BF16 => self.bf16_bits_to_f32(bits).into(),
            DType::F32 | DType::F64 => self.bitcast_to_float(bits).into(),
            _ => bits.into(),
        }
    }

    // ---- elementwise ops -----------------------------------------------------------

    /// One [`UnaryOp`] on a register value of compute dtype `d`. The match is
    /// exhaustive over the op table's unary ops, so an op added there without
    /// a lowering here does not compile.
    fn unary(&self, op: UnaryOp, x: BasicValueEnum<'ctx>, d: DType) -> BasicValueEnum<'ctx> {
        use Lane::{Float, Int, Pred};
        use UnaryOp::*;
        let lane = Lane::of(x, d);
        // A float-only op.
        let float = |f: &dyn Fn(FloatValue<'ctx>) -> FloatValue<'ctx>| -> BasicValueEnum<'ctx> {
            match lane {
                Float(x) => f(x).into(),
                _ => undefined(op, d),
            }
        };
        match op {
            Neg => match lane {
                Float(x) => self.b.build_float_neg(x, "").unwrap().into(),
                Int(x, _) => self.isub(x.get_type().const_zero(), x).into(),
                Pred(_) => undefined(op, d),
            },
            Abs => match lane {
                Float(x) => self.fintr1("llvm.fabs", x).into(),
                Int(x, true) => self.intrinsic(
                    "llvm.abs",
                    &[x.get_type().into()],
                    &[x.into(), self.i1().const_zero().into()],
                ),
                Int(x, false) => x.into(),
                Pred(_) => undefined(op, d),
            },
            Exp => float(&|x| self.libm("exp", &[x])),
            Log => float(&|x| self.libm("log", &[x])),
            Log1p => float(&|x| self.libm("log1p", &[x])),
            Expm1 => float(&|x| self.libm("expm1", &[x])),
            Tanh => float(&|x| self.libm("tanh", &[x])),
            Erf => float(&|x| self.libm("erf", &[x])),
            Sin => float(&|x| self.libm("sin", &[x])),
            Cos => float(&|x| self.libm("cos", &[x])),
            Sqrt => float(&|x| self.fintr1("llvm.sqrt", x)),
            Rsqrt => float(&|x| {
                // In f64 for f32 operands: 1/sqrt rounded once, as the interpreter.
                let ft = x.get_type();
                let wide = if ft == self.f32() {
                    self.b.build_float_ext(x, self.f64(), "").unwrap()
                } else {
                    x
                };
                let s = self.fintr1("llvm.sqrt", wide);
                let r = self
                    .b
                    .build_float_div(self.f64().const_float(1.0), s, "")
                    .unwrap();
                if ft == self.f32() {
                    self.b.build_float_trunc(r, ft, "").unwrap()
                } else {
                    r
                }
            }),
            Logistic => float(&|x| {
                let ft = x.get_type();
                let n = self.b.build_float_neg(x, "").unwrap();
                let e = self.libm("exp", &[n]);
                let one = ft.const_float(1.0);
                let d = self.b.build_float_add(one, e, "").unwrap();
                self.b.build_float_div(one, d, "").unwrap()
            }),
            Floor => float(&|x| self.fintr1("llvm.floor", x)),
            Ceil => float(&|x| self.fintr1("llvm.ceil", x)),
            Round => float(&|x| self.fintr1("llvm.round", x)),
            RoundEven => float(&|x| self.fintr1("llvm.roundeven", x)),
            Sign => match lane {
                Float(x) => {
                    // ±1 with x's sign; ±0.0 and NaN unchanged.
                    let ft = x.get_type();
                    let nz = self.fcmp(FloatPredicate::ONE, x, ft.const_zero());
                    let s = self.fintr2("llvm.copysign", ft.const_float(1.0), x);
                    self.fselect(nz, s, x).into()
                }
                Int(x, true) => {
                    let t = x.get_type();
                    let pos = self.zext(self.icmp(IntPredicate::SGT, x, t.const_zero()), t);
                    let neg = self.zext(self.icmp(IntPredicate::SLT, x, t.const_zero()), t);
                    self.isub(pos, neg).into()
                }
                Int(x, false) => {
                    let t = x.get_type();
                    self.zext(self.icmp(IntPredicate::NE, x, t.const_zero()), t)
                        .into()
                }
                Pred(_) => undefined(op, d),
            },
            Not => match lane {
                Int(x, _) | Pred(x) => self.b.build_not(x, "").unwrap().into(),
                Float(_) => undefined(op, d),
            },
            IsFinite => match lane {
                Float(x) => {
                    let a = self.fintr1("llvm.fabs", x);
                    self.fcmp(
                        FloatPredicate::OLT,
                        a,
                        x.get_type().const_float(f64::INFINITY),
                    )
                    .into()
                }
                _ => undefined(op, d),
            },
        }
    }

    /// One [`BinaryOp`] on register values of compute dtype `d`; exhaustive
    /// over the op table's binary ops like [`Lower::unary`].
    fn binary(
        &self,
        op: BinaryOp,
        a: BasicValueEnum<'ctx>,
        bv: BasicValueEnum<'ctx>,
        d: DType,
    ) -> BasicValueEnum<'ctx> {
        use BinaryOp::*;
        use Lane::{Float, Int, Pred};
        let b = self.b;
        let lanes = (Lane::of(a, d), Lane::of(bv, d));
        let r: BasicValueEnum<'ctx> = match op {
            Add => match lanes {
                (Float(x), Float(y)) => b.build_float_add(x, y, "").unwrap().into(),
                (Int(x, _), Int(y, _)) => self.iadd(x, y).into(),
                (Pred(x), Pred(y)) => self.or(x, y).into(),
                _ => undefined(op, d),
            },
            Sub => match lanes {
                (Float(x), Float(y)) => b.build_float_sub(x, y, "").unwrap().into(),
                (Int(x, _), Int(y, _)) => self.isub(x, y).into(),
                _ => undefined(op, d),
            },
            Mul => match lanes {
                (Float(x), Float(y)) => b.build_float_mul(x, y, "").unwrap().into(),
                (Int(x, _), Int(y, _)) => self.imul(x, y).into(),
                (Pred(x), Pred(y)) => self.and(x, y).into(),
                _ => undefined(op, d),
            },
            Div => match lanes {
                (Float(x), Float(y)) => b.build_float_div(x, y, "").unwrap().into(),
                (Int(x, signed), Int(y, _)) => self.idiv(x, y, signed).into(),
                _ => undefined(op, d),
            },
            Rem => match lanes {
                (Float(x), Float(y)) => self.libm("fmod", &[x, y]).into(),
                (Int(x, signed), Int(y, _)) => self.irem(x, y, signed).into(),
                _ => undefined(op, d),
            },
            Max => match lanes {
                (Float(x), Float(y)) => self.fintr2("llvm.maximum", x, y).into(),
                (Int(x, signed), Int(y, _)) => self
                    .iintr2(if signed { "llvm.smax" } else { "llvm.umax" }, x, y)
                    .into(),
                (Pred(x), Pred(y)) => self.or(x, y).into(),
                _ => undefined(op, d),
            },
            Min => match lanes {
                (Float(x), Float(y)) => self.fintr2("llvm.minimum", x, y).into(),
                (Int(x, signed), Int(y, _)) => self
                    .iintr2(if signed { "llvm.smin" } else { "llvm.umin" }, x, y)
                    .into(),
                (Pred(x), Pred(y)) => self.and(x, y).into(),
                _ => undefined(op, d),
            },
            Pow => match lanes {
                (Float(x), Float(y)) => self.libm("pow", &[x, y]).into(),
                (Int(x, _), Int(y, _)) => self.ipow(x, y, d).into(),
                _ => undefined(op, d),
            },
            Atan2 => match lanes {
                (Float(x), Float(y)) => self.libm("atan2", &[x, y]).into(),
                _ => undefined(op, d),
            },
            And => match lanes {
                (Int(x, _), Int(y, _)) | (Pred(x), Pred(y)) => self.and(x, y).into(),
                _ => undefined(op, d),
            },
            Or => match lanes {
                (Int(x, _), Int(y, _)) | (Pred(x), Pred(y)) => self.or(x, y).into(),
                _ => undefined(op, d),
            },
            Xor => match lanes {
                (Int(x, _), Int(y, _)) | (Pred(x), Pred(y)) => self.xor(x, y).into(),
                _ => undefined(op, d),
            },
            Shl | Shr => match lanes {
                (Int(x, signed), Int(y, _)) => {
                    // Amounts >= the width or negative (huge as unsigned) are out of range.
                    let t = x.get_type();
                    let w = d.bits() as u64;
                    let zero = t.const_zero();
                    let oob = self.icmp(IntPredicate::UGE, y, t.const_int(w, false));
                    let amt = self.and(y, t.const_int(w - 1, false));
                    match (op, signed) {
                        (Shl, _) => self.iselect(oob, zero, self.shl(x, amt)),
                        // Arithmetic: an out-of-range shift gives the sign (0 or -1).
                        (_, true) => {
                            self.ashr(x, self.iselect(oob, t.const_int(w - 1, false), amt))
                        }
                        (_, false) => self.iselect(oob, zero, self.lshr(x, amt)),
                    }
                    .into()
                }
                _ => undefined(op, d),
            },
        };
        r
    }

    /// Integer `div`: x/0 = -1; signed x/-1 = -x (wrapping: INT_MIN/-1 = INT_MIN).
    fn idiv(&self, x: IntValue<'ctx>, y: IntValue<'ctx>, signed: bool) -> IntValue<'ctx> {
        let b = self.b;
        let t = x.get_type();
        let (zero, ones) = (t.const_zero(), t.const_all_ones());
        let y0 = self.icmp(IntPredicate::EQ, y, zero);
        if signed {
            let ym1 = self.icmp(IntPredicate::EQ, y, ones);
            let safe = self.iselect(self.or(y0, ym1), t.const_int(1, false), y);
            let q = b.build_int_signed_div(x, safe, "").unwrap();
            let q = self.iselect(ym1, self.isub(zero, x), q);
            self.iselect(y0, ones, q)
        } else {
            let safe = self.iselect(y0, t.const_int(1, false), y);
            let q = b.build_int_unsigned_div(x, safe, "").unwrap();
            self.iselect(y0, ones, q)
        }
    }

    /// Integer `rem`: x rem 0 = x; signed x rem -1 = 0 (INT_MIN rem -1 = 0).
    fn irem(&self, x: IntValue<'ctx>, y: IntValue<'ctx>, signed: bool) -> IntValue<'ctx> {
        let b = self.b;
        let t = x.get_type();
        let (zero, ones) = (t.const_zero(), t.const_all_ones());
        let y0 = self.icmp(IntPredicate::EQ, y, zero);
        if signed {
            let ym1 = self.icmp(IntPredicate::EQ, y, ones);
            let safe = self.iselect(self.or(y0, ym1), t.const_int(1, false), y);
            let r = b.build_int_signed_rem(x, safe, "").unwrap();
            self.iselect(y0, x, r)
        } else {
            let safe = self.iselect(y0, t.const_int(1, false), y);
            let r = b.build_int_unsigned_rem(x, safe, "").unwrap();
            self.iselect(y0, x, r)
        }
    }

    /// Integer `pow` (spec section 11), through a helper function with a loop.
    fn ipow(&self, x: IntValue<'ctx>, y: IntValue<'ctx>, d: DType) -> IntValue<'ctx> {
        let t = x.get_type();
        let name = format!("pjc.ipow.{}", d.name());
        let f = match self.module.get_function(&name) {
            Some(f) => f,
            None => self.build_ipow(&name, t, d.is_signed_int()),
        };
        self.b
            .build_call(f, &[x.into(), y.into()], "")
            .unwrap()
            .try_as_basic_value()
            .basic()
            .unwrap()
            .into_int_value()
    }

    fn build_ipow(&self, name: &str, t: IntType<'ctx>, signed: bool) -> FunctionValue<'ctx> {
        let f = self.module.add_function(
            name,
            t.fn_type(&[t.into(), t.into()], false),
            Some(inkwell::module::Linkage::Internal),
        );
        for (attr, v) in [
            ("memory", 0u64),
            ("nounwind", 0),
            ("willreturn", 0),
            ("alwaysinline", 0),
        ] {
            let kind = Attribute::get_named_enum_kind_id(attr);
            f.add_attribute(
                AttributeLoc::Function,
                self.cx.create_enum_attribute(kind, v),
            );
        }
        let b = self.cx.create_builder();
        let entry = self.cx.append_basic_block(f, "entry");
        let neg_bb = self.cx.append_basic_block(f, "negexp");
        let head = self.cx.append_basic_block(f, "loop");
        let body = self.cx.append_basic_block(f, "body");
        let done = self.cx.append_basic_block(f, "done");
        let base = f.get_nth_param(0).unwrap().into_int_value();
        let exp = f.get_nth_param(1).unwrap().into_int_value();
        let (zero, one) = (t.const_zero(), t.const_int(1, false));
        b.position_at_end(entry);
        let is_neg = if signed {
            b.build_int_compare(IntPredicate::SLT, exp, zero, "")
                .unwrap()
        } else {
            self.i1().const_zero()
        };
        b.build_conditional_branch(is_neg, neg_bb, head).unwrap();
        // Negative exponent: 1 for base 1, ±1 for base -1, else 0.
        b.position_at_end(neg_bb);
        let b1 = b
            .build_int_compare(IntPredicate::EQ, base, one, "")
            .unwrap();
        let bm1 = b
            .build_int_compare(IntPredicate::EQ, base, t.const_all_ones(), "")
            .unwrap();
        let odd = b
            .build_int_compare(
                IntPredicate::NE,
                b.build_and(exp, one, "").unwrap(),
                zero,
                "",
            )
            .unwrap();
        let pm = b
            .build_select(odd, t.const_all_ones(), one, "")
            .unwrap()
            .into_int_value();
        let r = b.build_select(bm1, pm, zero, "").unwrap().into_int_value();
        let r = b.build_select(b1, one, r, "").unwrap();
        b.build_return(Some(&r)).unwrap();
        // Square and multiply, wrapping.
        b.position_at_end(head);
        let pr = b.build_phi(t, "r").unwrap();
        let pb = b.build_phi(t, "b").unwrap();
        let pe = b.build_phi(t, "e").unwrap();
        let (r, bb, e) = (
            pr.as_basic_value().into_int_value(),
            pb.as_basic_value().into_int_value(),
            pe.as_basic_value().into_int_value(),
        );
        let more = b.build_int_compare(IntPredicate::NE, e, zero, "").unwrap();
        b.build_conditional_branch(more, body, done).unwrap();
        b.position_at_end(body);
        let bit = b
            .build_int_compare(IntPredicate::NE, b.build_and(e, one, "").unwrap(), zero, "")
            .unwrap();
        let rm = b.build_int_mul(r, bb, "").unwrap();
        let r2 = b.build_select(bit, rm, r, "").unwrap().into_int_value();
        let b2 = b.build_int_mul(bb, bb, "").unwrap();
        let e2 = b.build_right_shift(e, one, false, "").unwrap();
        b.build_unconditional_branch(head).unwrap();
        pr.add_incoming(&[(&one, entry), (&r2, body)]);
        pb.add_incoming(&[(&base, entry), (&b2, body)]);
        pe.add_incoming(&[(&exp, entry), (&e2, body)]);
        b.position_at_end(done);
        b.build_return(Some(&r)).unwrap();
        f
    }

    fn compare(
        &self,
        dir: CmpDir,
        a: BasicValueEnum<'ctx>,
        bv: BasicValueEnum<'ctx>,
        d: DType,
    ) -> IntValue<'ctx> {
        if d.is_float() {
            let p = match dir {
                CmpDir::Eq => FloatPredicate::OEQ,
                CmpDir::Ne => FloatPredicate::UNE,
                CmpDir::Lt => FloatPredicate::OLT,
                CmpDir::Le => FloatPredicate::OLE,
                CmpDir::Gt => FloatPredicate::OGT,
                CmpDir::Ge => FloatPredicate::OGE,
            };
            return self.fcmp(p, a.into_float_value(), bv.into_float_value());
        }
        let signed = d.is_signed_int();
        let p = match (dir, signed) {
            (CmpDir::Eq, _) => IntPredicate::EQ,
            (CmpDir::Ne, _) => IntPredicate::NE,
            (CmpDir::Lt, true) => IntPredicate::SLT,
            (CmpDir::Le, true) => IntPredicate::SLE,
            (CmpDir::Gt, true) => IntPredicate::SGT,
            (CmpDir::Ge, true) => IntPredicate::SGE,
            (CmpDir::Lt, false) => IntPredicate::ULT,
            (CmpDir::Le, false) => IntPredicate::ULE,
            (CmpDir::Gt, false) => IntPredicate::UGT,
            (CmpDir::Ge, false) => IntPredicate::UGE,
        };
        self.icmp(p, a.into_int_value(), bv.into_int_value())
    }

    fn index(&self, op: IndexOp, a: IntValue<'ctx>, b: IntValue<'ctx>) -> IntValue<'ctx> {
        match op {
            IndexOp::Add => self.iadd(a, b),
            IndexOp::Sub => self.isub(a, b),
            IndexOp::Mul => self.imul(a, b),
            IndexOp::Div => self.floor_div(a, b),
            IndexOp::Rem => self.floor_rem(a, b),
            IndexOp::Min => self.iintr2("llvm.smin", a, b),
            IndexOp::Max => self.iintr2("llvm.smax", a, b),
            IndexOp::Lt => self.zext(self.icmp(IntPredicate::SLT, a, b), self.i64()),
        }
    }

    /// Evaluates every live node at the point with coordinates `coords` (output
    /// coordinates, then reduction coordinates), in the current block.
    pub fn eval(&self, coords: &[IntValue<'ctx>]) -> Vec<Option<BasicValueEnum<'ctx>>> {
        let k = self.kernel;
        let live = live_nodes(k);
        let mut v: Vec<Option<BasicValueEnum<'ctx>>> = vec![None; k.nodes.len()];
        for (i, node) in k.nodes.iter().enumerate() {
            if !live[i] {
                continue;
            }
            let ty = k.types[i];
            let get = |n: usize| v[n].expect("nodes refer to earlier live nodes");
            let val: BasicValueEnum<'ctx> = match node {
                Node::Coord(c) => coords[*c].into(),
                Node::ConstInt(x, d) => {
                    let t = reg_type(self.cx, *d).into_int_type();
                    self.cint(t, *x).into()
                }
                Node::ConstFloat(x, d) => match compute_type(*d) {
                    DType::F64 => self.f64().const_float(*x).into(),
                    _ => self.f32().const_float(*x as f32 as f64).into(),
                },
                Node::ConstBool(b) => self.i1().const_int(*b as u64, false).into(),
                Node::Load { input, index } => self.load_elem(
                    self.inputs[*input],
                    k.inputs[*input].dtype,
                    get(*index).into_int_value(),
                ),
                Node::Unary { op, x } => self.unary(*op, get(*x), k.types[*x]),
                Node::Binary { op, a, b } => self.binary(*op, get(*a), get(*b), k.types[*a]),
                Node::Compare { dir, a, b } => {
                    self.compare(*dir, get(*a), get(*b), k.types[*a]).into()
                }
                Node::Select { cond, a, b } => {
                    self.select(get(*cond).into_int_value(), get(*a), get(*b))
                }
                Node::Convert { x, to } => self.convert(get(*x), k.types[*x], *to),
                Node::Bitcast { x, from, to } => {
                    let src = get(*x);
                    let src = if compute_type(*from) != k.types[*x] {
                        self.convert(src, k.types[*x], *from)
                    } else {
                        src
                    };
                    let bits = self.bits_of(src, *from);
                    self.value_from_bits(bits, *to)
                }
                Node::Index { op, a, b } => self
                    .index(*op, get(*a).into_int_value(), get(*b).into_int_value())
                    .into(),
            };
            debug_assert_eq!(val.get_type(), reg_type(self.cx, ty), "node {i} {node:?}");
            v[i] = Some(val);
        }
        v
    }

    // ---- reductions ----------------------------------------------------------------

    /// The identity of reduction `kind` in accumulator dtype `acc`.
    pub fn identity(&self, kind: ReduceKind, acc: DType) -> BasicValueEnum<'ctx> {
        let rt = reg_type(self.cx, acc);
        if acc.is_float() {
            let ft = rt.into_float_type();
            return ft
                .const_float(match kind {
                    ReduceKind::Sum | ReduceKind::And | ReduceKind::Or => 0.0,
                    ReduceKind::Prod => 1.0,
                    ReduceKind::Max => f64::NEG_INFINITY,
                    ReduceKind::Min => f64::INFINITY,
                })
                .into();
        }
        let it = rt.into_int_type();
        if acc.is_pred() {
            return it
                .const_int(
                    matches!(kind, ReduceKind::Prod | ReduceKind::Min | ReduceKind::And) as u64,
                    false,
                )
                .into();
        }
        let (lo, hi) = acc.int_range().unwrap();
        let x = match kind {
            ReduceKind::Sum | ReduceKind::Or => 0,
            ReduceKind::Prod => 1,
            ReduceKind::Max => lo,
            ReduceKind::Min => hi,
            ReduceKind::And => -1,
        };
        self.cint(it, x).into()
    }

    /// Combines accumulator `a` with value `x` (both of dtype `acc`). Float sums
    /// and products carry the `reassoc` flag (reassociation is allowed for
    /// reductions), which lets LLVM vectorize them.
    pub fn combine(
        &self,
        kind: ReduceKind,
        acc: DType,
        a: BasicValueEnum<'ctx>,
        x: BasicValueEnum<'ctx>,
    ) -> BasicValueEnum<'ctx> {
        if acc.is_float() {
            let (p, q) = (a.into_float_value(), x.into_float_value());
            let r = match kind {
                ReduceKind::Sum => self.b.build_float_add(p, q, "").unwrap(),
                ReduceKind::Prod => self.b.build_float_mul(p, q, "").unwrap(),
                ReduceKind::Max => return self.fintr2("llvm.maximum", p, q).into(),
                ReduceKind::Min => return self.fintr2("llvm.minimum", p, q).into(),
                ReduceKind::And | ReduceKind::Or => panic!("{kind:?} reduction on floats"),
            };
            if let Some(inst) = r.as_instruction() {
                let _ = inst.set_fast_math_flags(inkwell::values::FastMathFlags::AllowReassoc);
            }
            return r.into();
        }
        let (p, q) = (a.into_int_value(), x.into_int_value());
        if acc.is_pred() {
            return match kind {
                ReduceKind::Sum | ReduceKind::Max | ReduceKind::Or => self.or(p, q),
                _ => self.and(p, q),
            }
            .into();
        }
        let signed = acc.is_signed_int();
        match kind {
            ReduceKind::Sum => self.iadd(p, q),
            ReduceKind::Prod => self.imul(p, q),
            ReduceKind::Max => self.iintr2(if signed { "llvm.smax" } else { "llvm.umax" }, p, q),
            ReduceKind::Min => self.iintr2(if signed { "llvm.smin" } else { "llvm.umin" }, p, q),
            ReduceKind::And => self.and(p, q),
            ReduceKind::Or => self.or(p, q),
        }
        .into()
    }

    /// The value of result node `r` converted to the accumulator type.
    pub fn to_acc(&self, v: BasicValueEnum<'ctx>, r: usize, acc: DType) -> BasicValueEnum<'ctx> {
        let t = self.kernel.types[r];
        if compute_type(t) == compute_type(acc) {
            v
        } else {
            self.convert(v, t, acc)
        }
    }

    // ---- control flow --------------------------------------------------------------

    /// Emits `for (i = start; i < end; i += step) body(i)` (signed i64) at the
    /// current position; afterwards the builder is positioned after the loop.
    pub fn for_loop(
        &self,
        name: &str,
        start: IntValue<'ctx>,
        end: IntValue<'ctx>,
        step: IntValue<'ctx>,
        body: impl FnOnce(IntValue<'ctx>),
    ) {
        self.counted_loop(name, start, end, step, true, body)
    }

    /// [`Lower::for_loop`], which LLVM may unroll only when `unroll` is set:
    /// a loop whose body holds another loop is marked
    /// `llvm.loop.unroll.disable`, since unrolling it would only copy the
    /// inner loop's (vectorized) code once per iteration — a batch-norm
    /// statistic's [8, 14, 14] reduction around a 64-point column block
    /// became 196 copies and 120 ms of LLVM time for one kernel — for no gain
    /// at run time.
    pub fn counted_loop(
        &self,
        name: &str,
        start: IntValue<'ctx>,
        end: IntValue<'ctx>,
        step: IntValue<'ctx>,
        unroll: bool,
        body: impl FnOnce(IntValue<'ctx>),
    ) {
        let pre = self.b.get_insert_block().unwrap();
        let head = self
            .cx
            .append_basic_block(self.func, &format!("{name}.head"));
        let bb = self
            .cx
            .append_basic_block(self.func, &format!("{name}.body"));
        let exit = self
            .cx
            .append_basic_block(self.func, &format!("{name}.exit"));
        self.b.build_unconditional_branch(head).unwrap();
        self.b.position_at_end(head);
        let phi = self.b.build_phi(self.i64(), name).unwrap();
        let i = phi.as_basic_value().into_int_value();
        let c = self.icmp(IntPredicate::SLT, i, end);
        self.b.build_conditional_branch(c, bb, exit).unwrap();
        self.b.position_at_end(bb);
        body(i);
        let next = self.b.build_int_nsw_add(i, step, "").unwrap();
        let latch: BasicBlock<'ctx> = self.b.get_insert_block().unwrap();
        let back = self.b.build_unconditional_branch(head).unwrap();
        if !unroll {
            self.no_unroll(back);
        }
        phi.add_incoming(&[(&start, pre), (&next, latch)]);
        self.b.position_at_end(exit);
    }

    /// Marks the loop whose back edge is `branch` with
    /// `!llvm.loop !{self, !{"llvm.loop.unroll.disable"}}`.
    fn no_unroll(&self, branch: inkwell::values::InstructionValue<'ctx>) {
        use inkwell::llvm_sys::core::{LLVMGetMDKindIDInContext, LLVMMDNodeInContext2, LLVMMDStringInContext2, LLVMMetadataAsValue, LLVMSetMetadata};
        use inkwell::llvm_sys::debuginfo::{LLVMMetadataReplaceAllUsesWith, LLVMTemporaryMDNode};
        const OPTION: &str = "llvm.loop.unroll.disable";
        const KIND: &str = "llvm.loop";
        let ctx = self.cx.raw();
        // SAFETY: metadata built in this instruction's context; the loop ID
        // refers to itself (LLVM's rule for loop metadata), which the C API
        // builds through a temporary node replaced by the node itself.
        unsafe {
            let name = LLVMMDStringInContext2(ctx, OPTION.as_ptr().cast(), OPTION.len());
            let mut opt_ops = [name];
            let opt = LLVMMDNodeInContext2(ctx, opt_ops.as_mut_ptr(), 1);
            let tmp = LLVMTemporaryMDNode(ctx, std::ptr::null_mut(), 0);
            let mut ops = [tmp, opt];
            let id = LLVMMDNodeInContext2(ctx, ops.as_mut_ptr(), 2);
            LLVMMetadataReplaceAllUsesWith(tmp, id);
            let kind = LLVMGetMDKindIDInContext(ctx, KIND.as_ptr().cast(), KIND.len() as u32);
            LLVMSetMetadata(inkwell::values::AsValueRef::as_value_ref(&branch), kind, LLVMMetadataAsValue(ctx, id));
        }
    }

    /// An alloca in the function's entry block (promoted to a register by mem2reg).
    pub fn entry_alloca(&self, t: BasicTypeEnum<'ctx>, name: &str) -> PointerValue<'ctx> {
        let entry = self.func.get_first_basic_block().unwrap();
        let tmp = self.cx.create_builder();
        match entry.get_first_instruction() {
            Some(i) => tmp.position_before(&i),
            None => tmp.position_at_end(entry),
        }
        tmp.build_alloca(t, name).unwrap()
    }

    /// Output points of the kernel as an i64 constant.
    pub fn num_points(&self) -> IntValue<'ctx> {
        self.ci64(self.kernel.num_elements() as i64)
    }

    /// Stores result `j`'s value `v` at linear index `idx` of output `j`.
    pub fn store_result(&self, j: usize, idx: IntValue<'ctx>, v: BasicValueEnum<'ctx>, vt: DType) {
        let out = &self.kernel.outputs[j];
        self.store_elem(self.outputs[j], out.dtype, idx, v, vt);
    }
}
