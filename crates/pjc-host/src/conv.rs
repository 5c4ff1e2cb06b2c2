//! `convolution` library steps as GEMM (im2col): every form the spec allows —
//! any `dims` label order, strides, padding (negative too), input dilation
//! (the input gradient), kernel dilation, feature groups (grouped and
//! depthwise) and batch groups (the kernel gradient) — on float operands.
//!
//! Input, kernel and output are taken in canonical layouts ([N, spatial.., C],
//! [spatial.., I, O], [N', spatial.., O]; a transposing copy where the labels
//! differ). Per feature or batch group, a block of output rows (one per output
//! batch and position) gathers its receptive fields into a patch matrix
//! (rows × taps·I, zeros for padding and dilation holes — zeros that still
//! multiply the kernel, so an infinite kernel value gives NaN as the reference
//! does) and multiplies it with the group's kernel columns read in place.
//! Floats compute in f32 (f16, bf16, f32) or f64 and round once to the result
//! dtype, like products (spec section 11). Integers compute with wrapping
//! multiply-adds in i32 lanes (results of at most 32 bits) or i64 lanes
//! (`intgemm.rs`) and wrap once to the result dtype: the same bits as the
//! reference's wrapping sums (integer overflow wraps, spec section 11).

use crate::gemm::{gemm_batched, DotLayout, GemmOperand};
use pjc_ir::{Attrs, DType, InstData, Opcode, TensorType};
use pjc_tensor::{Buf, ConvGeometry, Tensor};
use std::borrow::Cow;

/// Convolutions with fewer multiply-adds than this skip the AMX tiles.
const AMX_WORK: usize = 1 << 20;

/// Patch-matrix elements of one block of output rows (512 KiB of f32: about
/// a core's L2 cache).
const PATCH_BLOCK: usize = 128 << 10;

/// `convolution` as im2col + GEMM, or `None` for `pred` operands and for a
/// step the reference kernel must reject (it then says why).
pub fn try_conv<'t>(inst: &InstData, ins: &'t [Tensor], out: &TensorType, threads: usize, blas: Option<&crate::blas::Blas>) -> Option<Tensor> {
    if inst.op != Opcode::Convolution || ins.len() != 2 {
        return None;
    }
    let (x, k) = (&ins[0], &ins[1]);
    let d = x.dtype();
    let int = d.is_int() && out.dtype.is_int();
    if !(int || d.is_float() && out.dtype.is_float()) || k.dtype() != d {
        return None;
    }
    let types: Vec<TensorType> = ins.iter().map(|t| TensorType::new(t.dtype(), t.shape.iter().map(|&s| s as u64).collect())).collect();
    let refs: Vec<&TensorType> = types.iter().collect();
    let a = Attrs::new(inst, &refs);
    let dims = pjc_tensor::parse_conv_dims(&a.string("dims").ok()?, x.shape.len()).ok()?;
    let n = dims.spatial_rank();
    // The reference's checks (attribute lengths, with empty lists the
    // defaults; group counts, sizes, a non-empty output).
    let g = pjc_tensor::conv_geometry(
        &x.shape,
        &k.shape,
        &dims,
        &a.indices("window_strides").ok()?,
        &a.pairs("padding").ok()?,
        &a.indices("lhs_dilation").ok()?,
        &a.indices("rhs_dilation").ok()?,
        a.index("feature_group_count").ok()?,
        a.index("batch_group_count").ok()?,
    )
    .ok()?;
    if g.out_shape.iter().zip(&out.shape).any(|(&a, &b)| a as u64 != b) || g.out_shape.len() != out.shape.len() {
        return None;
    }
    // A window that is the whole input, read once (the kernel gradient of a
    // 1x1 convolution: output spatial size 1, no padding or dilation, no
    // groups) is a product contracting every input position and feature with
    // the kernel's: GEMM reads both operands in place, with no canonical copies.
    let whole = g.out_sp.iter().all(|&o| o == 1)
        && g.k_sp == g.in_sp
        && g.lhs_dil.iter().all(|&d| d == 1)
        && g.rhs_dil.iter().all(|&d| d == 1)
        && g.padding.iter().all(|&p| p == (0, 0))
        && g.fgc * g.bgc == 1;
    if whole && !int {
        if let Some(t) = whole_window(&dims, &g, ins, out, threads, blas) {
            return Some(t);
        }
    }
    // Canonical layouts.
    let mut px = vec![dims.input_batch];
    px.extend(&dims.input_spatial);
    px.push(dims.input_feature);
    let mut pk = dims.kernel_spatial.clone();
    pk.push(dims.kernel_input_feature);
    pk.push(dims.kernel_output_feature);
    let wide = d == DType::F64 || out.dtype == DType::F64;
    let ct = if wide { DType::F64 } else { DType::F32 };
    let canon = |t: &'t Tensor, perm: &[usize], ct: DType| -> Option<Cow<'t, Tensor>> {
        let t = if perm.iter().enumerate().all(|(i, &p)| i == p) { Cow::Borrowed(t) } else { Cow::Owned(pjc_tensor::transpose(t, perm).ok()?) };
        if t.dtype() == ct {
            Some(t)
        } else if let Some(w) = crate::gemm::widen(&t, ct, threads) {
            Some(Cow::Owned(w))
        } else {
            pjc_tensor::convert(&t, ct).ok().map(Cow::Owned)
        }
    };
    let mut canon_out: Vec<usize> = vec![g.out_batch];
    canon_out.extend(&g.out_sp);
    canon_out.push(g.cout);
    let data = if int {
        // Transposed in their own dtype, then widened to the lanes; the sums
        // wrap to the result dtype before the output transpose.
        let (cx, ck) = (canon(x, &px, d)?, canon(k, &pk, d)?);
        if out.dtype.bits() <= 32 {
            let sums = im2col_gemm(&g, &lanes::<i32>(&cx.data)?, &lanes::<i32>(&ck.data)?, threads, blas);
            narrow(out.dtype, sums.into_iter().map(|s| s as i64))
        } else {
            narrow(out.dtype, im2col_gemm(&g, &lanes::<i64>(&cx.data)?, &lanes::<i64>(&ck.data)?, threads, blas).into_iter())
        }
    } else {
        // bf16 on AMX tiles when the CPU has them, the convolution is large
        // enough and no element is too small for them; f32 otherwise.
        let macs = g.out_batch * g.out_sp.iter().product::<usize>() * g.k_sp.iter().product::<usize>() * g.cin_k * (g.cout / (g.fgc * g.bgc).max(1));
        let tiles = |t: &Tensor| matches!(&t.data, Buf::BF16(v) if crate::amx::fits(v));
        let amx = d == DType::BF16 && !wide && macs >= AMX_WORK && crate::amx::available() && tiles(x) && tiles(k);
        let grad = if amx { None } else { kernel_gradient(&dims, &g, x, k, ct, threads) };
        if let Some(v) = grad {
            v
        } else {
        let ct = if amx { DType::BF16 } else { ct };
        let (cx, ck) = (canon(x, &px, ct)?, canon(k, &pk, ct)?);
        match (&cx.data, &ck.data) {
            (Buf::BF16(xv), Buf::BF16(kv)) => Buf::F32(im2col_gemm(&g, xv, kv, threads, blas)),
            (Buf::F32(xv), Buf::F32(kv)) => Buf::F32(im2col_gemm(&g, xv, kv, threads, blas)),
            (Buf::F64(xv), Buf::F64(kv)) => Buf::F64(im2col_gemm(&g, xv, kv, threads, blas)),
            _ => return None,
        }
        }
    };
    let result = Tensor::new(canon_out, data);
    // Back to the output label order: canonical position of each output dim.
    let mut inv = vec![0; n + 2];
    inv[dims.output_batch] = 0;
    for (s, &p) in dims.output_spatial.iter().enumerate() {
        inv[p] = 1 + s;
    }
    inv[dims.output_feature] = n + 1;
    let result = if inv.iter().enumerate().all(|(i, &p)| i == p) { result } else { pjc_tensor::transpose(&result, &inv).ok()? };
    if result.dtype() == out.dtype {
        Some(result)
    } else {
        crate::gemm::narrow(result, out.dtype, threads)
    }
}

/// Rows of the contraction per block of [`kernel_gradient`] (its patch, all
/// output positions' receptive rows, stays in a core's L2 cache).
const GRAD_ROWS: usize = 256;

/// A kernel gradient — few output positions (the kernel's taps), at least
/// 16 output batch rows (input features; fewer make copies too short), a long
/// contraction over the batch and the output gradient's positions — read in
/// the layouts it comes in (the activations' features and the output
/// gradient's features contiguous, as JAX writes them: `f01b_i01o->01bf` of
/// NHWC tensors), with no canonical copies: per block of contraction rows
/// (batch, gradient position), every output position's input row is copied
/// into one patch (zeros where the window leaves the input), and one GEMM
/// multiplies it with the block's output-gradient rows into the accumulator
/// of all output positions at once. Threads take fixed ranges of rows and
/// their accumulators add up in thread order (the same bits every run).
/// `None` where the form or the layouts do not fit (the im2col path then
/// takes it). The result is canonical: [output batch, output spatial..,
/// output feature].
fn kernel_gradient(dims: &pjc_tensor::ConvDims, g: &ConvGeometry, x: &Tensor, k: &Tensor, ct: DType, threads: usize) -> Option<Buf> {
    let osz: usize = g.out_sp.iter().product();
    let tsz: usize = g.k_sp.iter().product();
    let rows = g.cin_k * tsz;
    let xst = pjc_tensor::strides(&x.shape);
    let kst = pjc_tensor::strides(&k.shape);
    let fits = g.fgc * g.bgc == 1
        && g.lhs_dil.iter().all(|&d| d == 1)
        && osz <= 64
        && g.out_batch >= 16
        && rows >= 16 * GRAD_ROWS
        && xst[dims.input_batch] == 1
        && kst[dims.kernel_output_feature] == 1;
    if !fits {
        return None;
    }
    let widen = |t: &Tensor| -> Option<Tensor> {
        if t.dtype() == ct {
            return None;
        }
        crate::gemm::widen(t, ct, threads).or_else(|| pjc_tensor::convert(t, ct).ok())
    };
    let (wx, wk) = (widen(x), widen(k));
    let (x, k) = (wx.as_ref().unwrap_or(x), wk.as_ref().unwrap_or(k));
    let geo = Grad {
        b: g.out_batch,
        f: g.cout,
        osz,
        x_c: xst[dims.input_feature],
        x_sp: dims.input_spatial.iter().map(|&d| xst[d]).collect(),
        k_c: kst[dims.kernel_input_feature],
        k_sp: dims.kernel_spatial.iter().map(|&d| kst[d]).collect(),
    };
    Some(match (&x.data, &k.data) {
        (Buf::F32(xv), Buf::F32(kv)) => Buf::F32(geo.run(g, xv, kv, 1.0f32, threads)),
        (Buf::F64(xv), Buf::F64(kv)) => Buf::F64(geo.run(g, xv, kv, 1.0f64, threads)),
        _ => return None,
    })
}

/// The sizes and element strides [`kernel_gradient`] reads its operands by.
struct Grad {
    /// Output batch (the input's batch label) and output features.
    b: usize,
    f: usize,
    /// Output positions.
    osz: usize,
    /// Input strides: its feature label (the contraction's batch) and
    /// spatial dims; its batch label has stride 1.
    x_c: usize,
    x_sp: Vec<usize>,
    /// Kernel (output gradient) strides: input feature and spatial dims; its
    /// output feature has stride 1.
    k_c: usize,
    k_sp: Vec<usize>,
}

impl Grad {
    fn run<T: Copy + Default + Send + Sync + 'static + std::ops::Add<Output = T>>(&self, g: &ConvGeometry, x: &[T], k: &[T], one: T, threads: usize) -> Vec<T> {
        use rayon::prelude::*;
        let (b, f, osz) = (self.b, self.f, self.osz);
        let n = g.in_sp.len();
        let tsz: usize = g.k_sp.iter().product();
        let rows = g.cin_k * tsz;
        let t_st = pjc_tensor::strides(&g.k_sp);
        let o_st = pjc_tensor::strides(&g.out_sp);
        // Per spatial dim, the input position of (output position, tap) or
        // usize::MAX (a hole).
        let tables: Vec<Vec<usize>> = (0..n)
            .map(|s| (0..g.out_sp[s] * g.k_sp[s]).map(|i| tap(g, s, i / g.k_sp[s], i % g.k_sp[s]).unwrap_or(usize::MAX)).collect())
            .collect();
        // Rows [r0, r1) into `acc` ([osz, b, f], accumulated).
        let range = |r0: usize, r1: usize, acc: &mut [T]| {
            let mut patch = vec![T::default(); GRAD_ROWS * osz * b];
            let mut grad = vec![T::default(); GRAD_ROWS * f];
            let mut r = r0;
            while r < r1 {
                let nr = GRAD_ROWS.min(r1 - r);
                for (i, (prow, grow)) in patch.chunks_mut(osz * b).zip(grad.chunks_mut(f)).take(nr).enumerate() {
                    let (c, t) = ((r + i) / tsz, (r + i) % tsz);
                    let mut koff = c * self.k_c;
                    let mut tc = [0usize; 10];
                    for s in 0..n {
                        tc[s] = t / t_st[s] % g.k_sp[s];
                        koff += tc[s] * self.k_sp[s];
                    }
                    grow.copy_from_slice(&k[koff..koff + f]);
                    for (o, dst) in prow.chunks_mut(b).enumerate() {
                        let mut xoff = c * self.x_c;
                        let mut hole = false;
                        for s in 0..n {
                            let p = tables[s][(o / o_st[s] % g.out_sp[s]) * g.k_sp[s] + tc[s]];
                            if p == usize::MAX {
                                hole = true;
                                break;
                            }
                            xoff += p * self.x_sp[s];
                        }
                        if hole {
                            dst.fill(T::default());
                        } else {
                            dst.copy_from_slice(&x[xoff..xoff + b]);
                        }
                    }
                }
                // acc[(o, i), j] += Σ_rr patch[rr, (o, i)] · grad[rr, j]:
                // (osz·b) × f × nr, the patch read transposed.
                // SAFETY: the patch holds nr rows of osz·b, the gradient nr
                // rows of f and the accumulator osz·b rows of f.
                unsafe {
                    gemm::gemm(
                        osz * b,
                        f,
                        nr,
                        acc.as_mut_ptr(),
                        1,
                        f as isize,
                        true,
                        patch.as_ptr(),
                        (osz * b) as isize,
                        1,
                        grad.as_ptr(),
                        1,
                        f as isize,
                        one,
                        one,
                        false,
                        false,
                        false,
                        gemm::Parallelism::None,
                    );
                }
                r += nr;
            }
        };
        let size = osz * b * f;
        let parts = threads.clamp(1, rows / GRAD_ROWS);
        let share = rows.div_ceil(parts);
        let run = |p: usize| {
            let mut acc = vec![T::default(); size];
            range(p * share, rows.min((p + 1) * share), &mut acc);
            acc
        };
        let accs: Vec<Vec<T>> = match crate::pool::pool(threads).filter(|_| parts > 1) {
            Some(pool) => pool.install(|| (0..parts).into_par_iter().map(run).collect()),
            None => (0..parts).map(run).collect(),
        };
        // [osz, b, f] summed in part order, to canonical [b, osz, f].
        let mut out = vec![T::default(); size];
        for i in 0..b {
            for o in 0..osz {
                let dst = &mut out[(i * osz + o) * f..][..f];
                for acc in &accs {
                    for (d, &v) in dst.iter_mut().zip(&acc[(o * b + i) * f..][..f]) {
                        *d = *d + v;
                    }
                }
            }
        }
        out
    }
}

/// [`try_conv`] of a whole-input window as `dot_general`: the result
/// [output batch, output feature] in the output's label order (its spatial
/// dimensions have size 1), or `None` when GEMM would need copies anyway.
fn whole_window(dims: &pjc_tensor::ConvDims, g: &ConvGeometry, ins: &[Tensor], out: &TensorType, threads: usize, blas: Option<&crate::blas::Blas>) -> Option<Tensor> {
    let mut lc = vec![dims.input_feature];
    lc.extend(&dims.input_spatial);
    let mut rc = vec![dims.kernel_input_feature];
    rc.extend(&dims.kernel_spatial);
    let l = crate::gemm::dot_layout(&ins[0].shape, &ins[1].shape, &[], &[], &lc, &rc)?;
    if l.lhs.transpose.is_some() || l.rhs.transpose.is_some() {
        return None;
    }
    let mut dot = InstData::new(Opcode::DotGeneral);
    let ints = |v: &[usize]| pjc_ir::AttrValue::int_list(&v.iter().map(|&d| d as i64).collect::<Vec<_>>());
    dot.set_attr("lhs_contract", ints(&lc));
    dot.set_attr("rhs_contract", ints(&rc));
    let r = crate::gemm::dot_with(&dot, ins, &TensorType::new(out.dtype, vec![g.out_batch as u64, g.cout as u64]), threads, blas)?;
    let shape: Vec<usize> = out.shape.iter().map(|&d| d as usize).collect();
    if dims.output_batch < dims.output_feature {
        Some(Tensor::new(shape, r.data))
    } else {
        let t = pjc_tensor::transpose(&r, &[1, 0]).ok()?;
        Some(Tensor::new(shape, t.data))
    }
}

/// An integer buffer's elements as wrapping lanes (`as`: sign or zero
/// extension, or truncation to the low bits, which is all a wrapping sum of
/// at most the lanes' width reads).
fn lanes<T: IntFrom>(b: &Buf) -> Option<Vec<T>> {
    Some(match b {
        Buf::I64(v) => v.iter().map(|&x| T::from_i64(x)).collect(),
        Buf::I32(v) => v.iter().map(|&x| T::from_i64(x as i64)).collect(),
        Buf::I16(v) => v.iter().map(|&x| T::from_i64(x as i64)).collect(),
        Buf::I8(v) => v.iter().map(|&x| T::from_i64(x as i64)).collect(),
        Buf::U64(v) => v.iter().map(|&x| T::from_i64(x as i64)).collect(),
        Buf::U32(v) => v.iter().map(|&x| T::from_i64(x as i64)).collect(),
        Buf::U16(v) => v.iter().map(|&x| T::from_i64(x as i64)).collect(),
        Buf::U8(v) => v.iter().map(|&x| T::from_i64(x as i64)).collect(),
        _ => return None,
    })
}

trait IntFrom {
    fn from_i64(x: i64) -> Self;
}
impl IntFrom for i32 {
    fn from_i64(x: i64) -> i32 {
        x as i32
    }
}
impl IntFrom for i64 {
    fn from_i64(x: i64) -> i64 {
        x
    }
}

/// Wrapping sums as elements of the integer dtype `d` (`as` keeps the low
/// bits: the sum modulo 2^width, in `d`'s signedness).
fn narrow(d: DType, v: impl Iterator<Item = i64>) -> Buf {
    match d {
        DType::I64 => Buf::I64(v.collect()),
        DType::I32 => Buf::I32(v.map(|x| x as i32).collect()),
        DType::I16 => Buf::I16(v.map(|x| x as i16).collect()),
        DType::I8 => Buf::I8(v.map(|x| x as i8).collect()),
        DType::U64 => Buf::U64(v.map(|x| x as u64).collect()),
        DType::U32 => Buf::U32(v.map(|x| x as u32).collect()),
        DType::U16 => Buf::U16(v.map(|x| x as u16).collect()),
        _ => Buf::U8(v.map(|x| x as u8).collect()),
    }
}

/// The element types of the patch matrix and its GEMM: f32 and f64 through
/// the gemm crate (or the system BLAS), i32 and i64 through `intgemm`, bf16
/// on AMX tiles into f32 (`amx.rs`).
trait Elem: Copy + Default + Send + Sync {
    /// The GEMM's result (the accumulator) type.
    type Out: Copy + Default + Send + Sync;
    /// `m × n` output rows at `dst` (row stride `drs`) = the patch rows at
    /// `a` (row stride `ars`) times the kernel columns at `b` (row stride
    /// `brs`), all with unit column strides, on the calling thread.
    ///
    /// # Safety
    /// Every element those strides reach lies in the buffers, and `dst`
    /// overlaps neither operand.
    #[allow(clippy::too_many_arguments)]
    unsafe fn block(m: usize, n: usize, k: usize, dst: *mut Self::Out, drs: usize, a: *const Self, ars: usize, b: *const Self, brs: usize);
    /// The whole `m × n` product of rows read in place (row stride `ars`)
    /// and `k × n` kernel columns (row stride `brs`), on `threads` threads.
    #[allow(clippy::too_many_arguments)]
    fn product(m: usize, n: usize, k: usize, a: &[Self], ars: usize, b: &[Self], brs: usize, threads: usize, blas: Option<&crate::blas::Blas>) -> Vec<Self::Out>;
}

macro_rules! float_elem {
    ($t:ty) => {
        impl Elem for $t {
            type Out = $t;
            unsafe fn block(m: usize, n: usize, k: usize, dst: *mut $t, drs: usize, a: *const $t, ars: usize, b: *const $t, brs: usize) {
                gemm::gemm(m, n, k, dst, 1, drs as isize, false, a, 1, ars as isize, b, 1, brs as isize, 0.0, 1.0, false, false, false, gemm::Parallelism::None);
            }
            fn product(m: usize, n: usize, k: usize, a: &[$t], ars: usize, b: &[$t], brs: usize, threads: usize, blas: Option<&crate::blas::Blas>) -> Vec<$t> {
                let l = DotLayout {
                    batch: vec![],
                    m,
                    k,
                    n,
                    lhs: GemmOperand { transpose: None, batch_strides: vec![], rs: ars, cs: 1 },
                    rhs: GemmOperand { transpose: None, batch_strides: vec![], rs: brs, cs: 1 },
                };
                gemm_batched(&l, a, b, 1.0, threads, blas)
            }
        }
    };
}
float_elem!(f32);
float_elem!(f64);

macro_rules! int_elem {
    ($t:ty) => {
        impl Elem for $t {
            type Out = $t;
            unsafe fn block(m: usize, n: usize, k: usize, dst: *mut $t, drs: usize, a: *const $t, ars: usize, b: *const $t, brs: usize) {
                <$t as crate::intgemm::Lane>::matmul(m, n, k, dst, drs, a, ars, b, brs)
            }
            fn product(m: usize, n: usize, k: usize, a: &[$t], ars: usize, b: &[$t], brs: usize, threads: usize, _: Option<&crate::blas::Blas>) -> Vec<$t> {
                crate::intgemm::product(m, n, k, a, ars, b, brs, threads)
            }
        }
    };
}
int_elem!(i32);
int_elem!(i64);

impl Elem for half::bf16 {
    type Out = f32;
    unsafe fn block(m: usize, n: usize, k: usize, dst: *mut f32, drs: usize, a: *const half::bf16, ars: usize, b: *const half::bf16, brs: usize) {
        let (a, b) = (std::slice::from_raw_parts(a, (m - 1) * ars + k), std::slice::from_raw_parts(b, (k - 1) * brs + n));
        let out = std::slice::from_raw_parts_mut(dst, (m - 1) * drs + n);
        if !crate::amx::bf16_product(m, n, k, a, ars, 1, b, brs, 1, out, drs, 1) {
            bf16_plain(m, n, k, a, ars, b, brs, out, drs);
        }
    }
    fn product(m: usize, n: usize, k: usize, a: &[half::bf16], ars: usize, b: &[half::bf16], brs: usize, threads: usize, _: Option<&crate::blas::Blas>) -> Vec<f32> {
        let mut out = vec![0f32; m * n];
        if !crate::amx::bf16_product(m, n, k, a, ars, 1, b, brs, 1, &mut out, n, threads) {
            bf16_plain(m, n, k, a, ars, b, brs, &mut out, n);
        }
        out
    }
}

/// A bf16 product in f32 the plain way: only where the tiles refuse one
/// that [`try_conv`] sent them (it checks the operands first, so never in
/// practice).
#[allow(clippy::too_many_arguments)]
fn bf16_plain(m: usize, n: usize, k: usize, a: &[half::bf16], ars: usize, b: &[half::bf16], brs: usize, out: &mut [f32], drs: usize) {
    for i in 0..m {
        for j in 0..n {
            out[i * drs + j] = (0..k).map(|p| a[i * ars + p].to_f32() * b[p * brs + j].to_f32()).sum();
        }
    }
}

/// Input position read by output position `o` at kernel tap `t` along
/// spatial dim `s`, or `None` for padding and dilation holes.
fn tap(g: &ConvGeometry, s: usize, o: usize, t: usize) -> Option<usize> {
    let q = (o * g.strides[s] + t * g.rhs_dil[s]) as i64 - g.padding[s].0;
    let ld = g.lhs_dil[s] as i64;
    (q >= 0 && q % ld == 0 && ((q / ld) as usize) < g.in_sp[s]).then(|| (q / ld) as usize)
}

fn im2col_gemm<T: Elem>(g: &ConvGeometry, x: &[T], w: &[T], threads: usize, blas: Option<&crate::blas::Blas>) -> Vec<T::Out> {
    use rayon::prelude::*;
    let n = g.in_sp.len();
    let osz: usize = g.out_sp.iter().product();
    let ksz: usize = g.k_sp.iter().product();
    let isz: usize = g.in_sp.iter().product();
    let groups = g.fgc * g.bgc;
    let og = g.cout / groups.max(1);
    let rows = g.out_batch * osz;
    let cols = ksz * g.cin_k;
    if rows == 0 || og == 0 {
        return vec![T::Out::default(); rows * g.cout];
    }
    // m x (taps·I) times the group's kernel columns: w[(kp·I + i)·O + gi·og + j].
    let gemm = |m: usize, lhs: &[T], lhs_rs: usize, gi: usize| T::product(m, og, cols, lhs, lhs_rs, &w[gi * og..], g.cout, threads, blas);
    // A 1x1 window with unit strides, no padding and no dilation reads the
    // input's rows as they are: no patch matrix.
    let pointwise = ksz == 1
        && g.strides.iter().all(|&s| s == 1)
        && g.lhs_dil.iter().all(|&d| d == 1)
        && g.padding.iter().all(|&p| p == (0, 0))
        && g.out_sp == g.in_sp;
    if pointwise && groups == 1 {
        return gemm(rows, x, g.feat, 0);
    }
    let mut out = vec![T::Out::default(); rows * g.cout];
    let mut place = |r0: usize, y: &[T::Out], gi: usize| {
        for (ri, yrow) in y.chunks(og).enumerate() {
            let o = (r0 + ri) * g.cout + gi * og;
            out[o..o + og].copy_from_slice(yrow);
        }
    };
    if pointwise {
        for gi in 0..groups {
            let base = if g.bgc > 1 { gi * g.out_batch * isz } else { 0 };
            let cbase = if g.fgc > 1 { gi * g.cin_k } else { 0 };
            let y = gemm(rows, &x[base * g.feat + cbase..], g.feat, gi);
            place(0, &y, gi);
        }
        return out;
    }
    let in_st = pjc_tensor::strides(&g.in_sp);
    let out_st = pjc_tensor::strides(&g.out_sp);
    let k_st = pjc_tensor::strides(&g.k_sp);
    // Per spatial dim: input position for (output position, tap), or usize::MAX.
    let tables: Vec<Vec<usize>> = (0..n)
        .map(|s| (0..g.out_sp[s] * g.k_sp[s]).map(|i| tap(g, s, i / g.k_sp[s], i % g.k_sp[s]).unwrap_or(usize::MAX)).collect())
        .collect();
    // Each tap's coordinates, once.
    let (k_st, k_sp) = (&k_st, &g.k_sp);
    let taps: Vec<usize> = (0..ksz).flat_map(|kp| (0..n).map(move |s| kp / k_st[s] % k_sp[s])).collect();
    // Blocks of output rows small enough that their patch matrix stays in the
    // core's cache: each block gathers its receptive fields and multiplies them
    // with every group's kernel columns, writing its rows of the output; blocks
    // run in parallel, one per thread.
    let block = (PATCH_BLOCK / cols.max(1)).max(16).min(rows);
    // Taps along the innermost spatial dimension read adjacent input positions
    // (unit dilations there) and whole feature rows (no feature groups).
    let contiguous = n >= 1 && g.lhs_dil[n - 1] == 1 && g.rhs_dil[n - 1] == 1 && g.cin_k == g.feat;
    let task = |b0: usize, out: &mut [T::Out], patch: &mut Vec<T>| {
        let nr = out.len() / g.cout;
        patch.resize(nr * cols, T::default());
        for gi in 0..groups {
            let cbase = if g.fgc > 1 { gi * g.cin_k } else { 0 };
            for (ri, prow) in patch.chunks_mut(cols).enumerate() {
                let r = b0 + ri;
                let (ob, op) = (r / osz, r % osz);
                let ib = if g.bgc > 1 { gi * g.out_batch + ob } else { ob };
                let mut oc = [0usize; 10];
                for s in 0..n {
                    oc[s] = (op / out_st[s] % g.out_sp[s]) * g.k_sp[s];
                }
                if contiguous {
                    // One copy per run of taps along the innermost spatial
                    // dimension: with unit dilations and every input feature
                    // taken, their receptive fields lie side by side.
                    let kin = g.k_sp[n - 1];
                    for (run, dst) in prow.chunks_mut(kin * g.cin_k).enumerate() {
                        let kp0 = run * kin;
                        let mut lin = 0;
                        let mut hole = false;
                        for s in 0..n - 1 {
                            let p = tables[s][oc[s] + taps[kp0 * n + s]];
                            if p == usize::MAX {
                                hole = true;
                                break;
                            }
                            lin += p * in_st[s];
                        }
                        let tab = &tables[n - 1][oc[n - 1]..oc[n - 1] + kin];
                        match tab.iter().position(|&p| p != usize::MAX).filter(|_| !hole) {
                            None => dst.fill(T::default()),
                            Some(t0) => {
                                let t1 = t0 + tab[t0..].iter().take_while(|&&p| p != usize::MAX).count();
                                let c = g.cin_k;
                                dst[..t0 * c].fill(T::default());
                                dst[t1 * c..].fill(T::default());
                                let src = (ib * isz + lin + tab[t0]) * g.feat;
                                dst[t0 * c..t1 * c].copy_from_slice(&x[src..src + (t1 - t0) * c]);
                            }
                        }
                    }
                    continue;
                }
                for (kp, dst) in prow.chunks_mut(g.cin_k).enumerate() {
                    let mut lin = 0;
                    let mut hole = false;
                    for s in 0..n {
                        let p = tables[s][oc[s] + taps[kp * n + s]];
                        if p == usize::MAX {
                            hole = true;
                            break;
                        }
                        lin += p * in_st[s];
                    }
                    if hole {
                        dst.fill(T::default());
                    } else {
                        let src = (ib * isz + lin) * g.feat + cbase;
                        dst.copy_from_slice(&x[src..src + g.cin_k]);
                    }
                }
            }
            // SAFETY: the patch is nr x cols row-major; the group's kernel
            // columns are cols x og at offset gi·og with row stride cout; the
            // output rows are nr x og at offset gi·og with row stride cout.
            unsafe { T::block(nr, og, cols, out.as_mut_ptr().add(gi * og), g.cout, patch.as_ptr(), cols, w.as_ptr().add(gi * og), g.cout) };
        }
    };
    let mut out = vec![T::Out::default(); rows * g.cout];
    match crate::pool::pool(threads).filter(|_| threads > 1 && rows > block) {
        Some(p) => p.install(|| {
            out.par_chunks_mut(block * g.cout).enumerate().for_each_init(Vec::new, |patch, (bi, o)| task(bi * block, o, patch))
        }),
        None => {
            let mut patch = Vec::new();
            for (bi, o) in out.chunks_mut(block * g.cout).enumerate() {
                task(bi * block, o, &mut patch);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pjc_ir::AttrValue;
    use pjc_tensor::compare::{close, Tolerance};

    /// Floats: multiples of 0.5 in [-4, 4] (sums exact in f32); integers:
    /// the dtype's whole range, so that the sums wrap.
    fn operand(d: DType, shape: &[usize], seed: &mut u64) -> Tensor {
        let n: usize = shape.iter().product();
        let mut next = || {
            *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            *seed >> 11
        };
        if d.is_int() {
            let v: Vec<i128> = (0..n).map(|_| pjc_tensor::wrap_to_dtype(next() as i128 * 0x9e37_79b9_7f4a, d)).collect();
            return Tensor::new(shape.to_vec(), Buf::from_i128(d, &v));
        }
        let v: Vec<f64> = (0..n).map(|_| (next() % 17) as f64 * 0.5 - 4.0).collect();
        Tensor::new(shape.to_vec(), Buf::from_f64(d, &v))
    }

    struct Case {
        dims: &'static str,
        x: &'static [usize],
        k: &'static [usize],
        strides: &'static [i64],
        padding: &'static [(i64, i64)],
        lhs_dil: &'static [i64],
        rhs_dil: &'static [i64],
        fgc: i64,
        bgc: i64,
    }
    const fn c(dims: &'static str, x: &'static [usize], k: &'static [usize]) -> Case {
        Case { dims, x, k, strides: &[], padding: &[], lhs_dil: &[], rhs_dil: &[], fgc: 1, bgc: 1 }
    }
    const CASES: &[Case] = &[
        c("b01f_01io->b01f", &[2, 6, 5, 3], &[3, 2, 3, 4]),                                          // NHWC, valid
        Case { padding: &[(1, 1), (1, 1)], ..c("b01f_01io->b01f", &[2, 6, 5, 3], &[3, 3, 3, 4]) },   // same padding
        Case { strides: &[2, 2], padding: &[(1, 0), (0, 1)], ..c("bf01_oi01->bf01", &[2, 3, 7, 6], &[4, 3, 3, 3]) }, // NCHW, strided
        Case { rhs_dil: &[2, 1], ..c("b01f_01io->b01f", &[1, 7, 5, 2], &[2, 2, 2, 3]) },            // dilated kernel
        Case { lhs_dil: &[2, 2], padding: &[(1, 1), (1, 1)], ..c("b01f_01io->b01f", &[2, 4, 3, 3], &[3, 3, 3, 2]) }, // input gradient
        Case { padding: &[(-1, 0), (0, -1)], ..c("b01f_01io->b01f", &[1, 6, 6, 2], &[2, 2, 2, 2]) }, // negative padding
        Case { fgc: 2, ..c("b01f_01io->b01f", &[2, 5, 5, 4], &[3, 3, 2, 6]) },                       // grouped
        Case { fgc: 4, ..c("b01f_01io->b01f", &[2, 5, 5, 4], &[3, 3, 1, 4]) },                       // depthwise
        Case { bgc: 2, ..c("f01b_i01o->01bf", &[3, 5, 5, 4], &[3, 4, 4, 2]) },                       // kernel gradient (batch groups)
        c("f01b_i01o->01bf", &[3, 6, 6, 2], &[3, 4, 4, 5]),                                         // kernel-gradient labels
        c("b0f_0io->b0f", &[2, 9, 3], &[4, 3, 2]),                                                  // 1-D
        c("b012f_012io->b012f", &[1, 4, 4, 3, 2], &[2, 2, 2, 2, 3]),                                // 3-D
        c("b01f_01io->b01f", &[2, 4, 4, 6], &[1, 1, 6, 5]),                                         // 1x1: no patch matrix
        Case { fgc: 2, ..c("b01f_01io->b01f", &[2, 4, 4, 6], &[1, 1, 3, 4]) },                       // 1x1 grouped
        Case { bgc: 2, ..c("f01b_i01o->01bf", &[3, 4, 4, 4], &[3, 1, 1, 2]) },                       // 1x1 batch groups
        Case { strides: &[2, 2], ..c("b01f_01io->b01f", &[2, 5, 5, 3], &[1, 1, 3, 2]) },             // 1x1 strided: patch
        c("f01b_i01o->01bf", &[3, 5, 5, 4], &[3, 5, 5, 2]),                                         // 1x1 kernel gradient: whole window
        Case { bgc: 2, ..c("f01b_i01o->01bf", &[3, 5, 5, 4], &[3, 5, 5, 2]) },                       // ... with batch groups
        Case { strides: &[2, 2], ..c("f01b_i01o->01bf", &[3, 4, 4, 4], &[3, 4, 4, 2]) },             // ... strides do not matter
        c("b01f_01io->b01f", &[2, 30, 30, 64], &[3, 3, 64, 8]),                                     // several row blocks, in parallel
        Case { fgc: 2, padding: &[(1, 1), (1, 1)], ..c("b01f_01io->b01f", &[2, 30, 30, 64], &[3, 3, 32, 8]) }, // grouped, several blocks
    ];

    /// (operand dtype, result dtype): every float and integer dtype, and
    /// wider results.
    const DTYPES: &[(DType, DType)] = &[
        (DType::F32, DType::F32),
        (DType::F64, DType::F64),
        (DType::BF16, DType::BF16),
        (DType::F16, DType::F32),
        (DType::I8, DType::I8),
        (DType::I8, DType::I32),
        (DType::I16, DType::I16),
        (DType::I32, DType::I32),
        (DType::I32, DType::I64),
        (DType::I64, DType::I64),
        (DType::U8, DType::U8),
        (DType::U16, DType::U32),
        (DType::U32, DType::U32),
        (DType::U64, DType::U64),
    ];

    fn inst(c: &Case) -> InstData {
        let mut i = InstData::new(Opcode::Convolution);
        i.set_attr("dims", AttrValue::Str(c.dims.into()));
        if !c.strides.is_empty() {
            i.set_attr("window_strides", AttrValue::int_list(c.strides));
        }
        if !c.padding.is_empty() {
            i.set_attr("padding", AttrValue::List(c.padding.iter().map(|&(a, b)| AttrValue::int_list(&[a, b])).collect()));
        }
        if !c.lhs_dil.is_empty() {
            i.set_attr("lhs_dilation", AttrValue::int_list(c.lhs_dil));
        }
        if !c.rhs_dil.is_empty() {
            i.set_attr("rhs_dilation", AttrValue::int_list(c.rhs_dil));
        }
        if c.fgc != 1 {
            i.set_attr("feature_group_count", AttrValue::Int(c.fgc));
        }
        if c.bgc != 1 {
            i.set_attr("batch_group_count", AttrValue::Int(c.bgc));
        }
        i
    }

    #[test]
    fn every_convolution_form_runs_as_gemm_like_the_reference() {
        let mut seed = 3;
        for case in CASES {
            for (d, od) in DTYPES.iter().copied() {
                let (x, k) = (operand(d, case.x, &mut seed), operand(d, case.k, &mut seed));
                let dims = pjc_tensor::parse_conv_dims(case.dims, case.x.len()).unwrap();
                let us = |v: &[i64]| v.iter().map(|&a| a as usize).collect::<Vec<_>>();
                let want = pjc_tensor::convolution(&x, &k, &dims, &us(case.strides), case.padding, &us(case.lhs_dil), &us(case.rhs_dil), case.fgc as usize, case.bgc as usize, od).unwrap();
                let out = TensorType::new(od, want.shape.iter().map(|&s| s as u64).collect());
                for (threads, blas) in [(1, None), (2, crate::blas::openblas())] {
                    let got = try_conv(&inst(case), &[x.clone(), k.clone()], &out, threads, blas).unwrap_or_else(|| panic!("{} fell off the GEMM path", case.dims));
                    // Exactly representable values: sums are exact in f32, so GEMM and
                    // the reference agree bit for bit after one rounding; integer
                    // sums wrap to the same bits.
                    close(&want, &got, Tolerance::EXACT).unwrap_or_else(|e| panic!("{} {:?} x {:?} ({d} -> {od}): {e}", case.dims, case.x, case.k));
                }
            }
        }
    }

    #[test]
    fn large_bf16_convolutions_take_the_amx_tiles_like_the_reference() {
        // Above AMX_WORK (on a CPU without AMX-BF16: the f32 path, the same
        // results). Halves in [-4, 4]: exact sums, so bit for bit.
        let cases = [
            Case { padding: &[(1, 1), (1, 1)], ..c("b01f_01io->b01f", &[2, 16, 16, 32], &[3, 3, 32, 64]) },
            Case { strides: &[2, 2], padding: &[(1, 1), (1, 1)], ..c("bf01_oi01->bf01", &[2, 32, 17, 17], &[64, 32, 3, 3]) },
            Case { fgc: 2, padding: &[(1, 1), (1, 1)], ..c("b01f_01io->b01f", &[2, 16, 16, 64], &[3, 3, 32, 64]) },
            c("b01f_01io->b01f", &[4, 16, 16, 64], &[1, 1, 64, 64]),
            c("f01b_i01o->01bf", &[64, 10, 10, 8], &[64, 8, 8, 16]),
            Case { lhs_dil: &[2, 2], padding: &[(2, 2), (2, 2)], ..c("b01f_01io->b01f", &[2, 9, 9, 32], &[3, 3, 32, 32]) },
        ];
        let mut seed = 21;
        for case in &cases {
            let (x, k) = (operand(DType::BF16, case.x, &mut seed), operand(DType::BF16, case.k, &mut seed));
            let dims = pjc_tensor::parse_conv_dims(case.dims, case.x.len()).unwrap();
            let us = |v: &[i64]| v.iter().map(|&a| a as usize).collect::<Vec<_>>();
            for od in [DType::F32, DType::BF16] {
                let want = pjc_tensor::convolution(&x, &k, &dims, &us(case.strides), case.padding, &us(case.lhs_dil), &us(case.rhs_dil), case.fgc as usize, case.bgc as usize, od).unwrap();
                let out = TensorType::new(od, want.shape.iter().map(|&s| s as u64).collect());
                for threads in [1, 2] {
                    let got = try_conv(&inst(case), &[x.clone(), k.clone()], &out, threads, None).unwrap();
                    close(&want, &got, Tolerance::EXACT).unwrap_or_else(|e| panic!("{} {:?} x {:?} (bf16 -> {od}, {threads} threads): {e}", case.dims, case.x, case.k));
                }
            }
        }
    }

    #[test]
    fn kernel_gradients_read_in_place_like_the_reference() {
        // JAX's weight gradients of NHWC convolutions: same padding, and a
        // strided forward convolution's (the output gradient dilated).
        let cases = [
            Case { padding: &[(1, 1), (1, 1)], ..c("f01b_i01o->01bf", &[64, 12, 12, 16], &[64, 12, 12, 8]) },
            Case { rhs_dil: &[2, 2], padding: &[(0, 1), (0, 1)], ..c("f01b_i01o->01bf", &[128, 13, 13, 16], &[128, 6, 6, 8]) },
            Case { padding: &[(3, 3)], ..c("f0b_i0o->0bf", &[64, 70, 16], &[64, 70, 5]) },
        ];
        let mut seed = 31;
        for case in &cases {
            for (d, od) in [(DType::F32, DType::F32), (DType::F64, DType::F64), (DType::F16, DType::F32)] {
                let (x, k) = (operand(d, case.x, &mut seed), operand(d, case.k, &mut seed));
                let dims = pjc_tensor::parse_conv_dims(case.dims, case.x.len()).unwrap();
                let us = |v: &[i64]| v.iter().map(|&a| a as usize).collect::<Vec<_>>();
                let want = pjc_tensor::convolution(&x, &k, &dims, &us(case.strides), case.padding, &us(case.lhs_dil), &us(case.rhs_dil), 1, 1, od).unwrap();
                let g = pjc_tensor::conv_geometry(&x.shape, &k.shape, &dims, &us(case.strides), case.padding, &us(case.lhs_dil), &us(case.rhs_dil), 1, 1).unwrap();
                let ct = if od == DType::F64 { DType::F64 } else { DType::F32 };
                assert!(kernel_gradient(&dims, &g, &x, &k, ct, 1).is_some(), "{} {:?} not read in place", case.dims, case.x);
                let out = TensorType::new(od, want.shape.iter().map(|&s| s as u64).collect());
                for threads in [1, 2, 3] {
                    let got = try_conv(&inst(case), &[x.clone(), k.clone()], &out, threads, None).unwrap();
                    close(&want, &got, Tolerance::EXACT).unwrap_or_else(|e| panic!("{} {:?} x {:?} ({d} -> {od}, {threads} threads): {e}", case.dims, case.x, case.k));
                }
            }
        }
    }

    #[test]
    fn holes_still_meet_the_kernel() {
        // An infinite kernel value under a padding zero gives NaN, as in the reference.
        let case = Case { padding: &[(1, 0)], ..c("b0f_0io->b0f", &[1, 3, 1], &[2, 1, 1]) };
        let x = Tensor::new(vec![1, 3, 1], Buf::F32(vec![1.0, 2.0, 3.0]));
        let k = Tensor::new(vec![2, 1, 1], Buf::F32(vec![f32::INFINITY, 1.0]));
        let dims = pjc_tensor::parse_conv_dims(case.dims, 3).unwrap();
        let want = pjc_tensor::convolution(&x, &k, &dims, &[], case.padding, &[], &[], 1, 1, DType::F32).unwrap();
        let out = TensorType::new(DType::F32, vec![1, 3, 1]);
        let got = try_conv(&inst(&case), &[x, k], &out, 1, None).unwrap();
        close(&want, &got, Tolerance::EXACT).unwrap();
        assert!(matches!(&got.data, Buf::F32(v) if v[0].is_nan()));
    }

    #[test]
    fn integer_sums_wrap_like_the_reference() {
        // i8: 100·2 + 100·2 = 400 wraps to -112; u8: 200·2 + 1·1 = 401 wraps to 145.
        let case = c("b0f_0io->b0f", &[1, 2, 1], &[2, 1, 1]);
        let run = |x: Buf, k: Buf, d: DType| try_conv(&inst(&case), &[Tensor::new(vec![1, 2, 1], x), Tensor::new(vec![2, 1, 1], k)], &TensorType::new(d, vec![1, 1, 1]), 1, None).unwrap();
        assert_eq!(run(Buf::I8(vec![100, 100]), Buf::I8(vec![2, 2]), DType::I8).data, Buf::I8(vec![-112]));
        assert_eq!(run(Buf::I8(vec![100, 100]), Buf::I8(vec![2, 2]), DType::I32).data, Buf::I32(vec![400]));
        assert_eq!(run(Buf::U8(vec![200, 1]), Buf::U8(vec![2, 1]), DType::U8).data, Buf::U8(vec![145]));
        assert_eq!(run(Buf::U64(vec![u64::MAX, 1]), Buf::U64(vec![2, 3]), DType::U64).data, Buf::U64(vec![1]));
    }

    /// Integer (and f32, bf16) 3x3 convolutions at a CNN's size against the
    /// reference kernel (the path integers took before): `cargo test
    /// --release -p pjc-host --lib -- --ignored integer_convolution_speed
    /// --nocapture` (`PJC_AMX=0`: bf16 without the AMX tiles).
    #[test]
    #[ignore]
    fn integer_convolution_speed() {
        let case = Case { padding: &[(1, 1), (1, 1)], ..c("b01f_01io->b01f", &[8, 32, 32, 64], &[3, 3, 64, 64]) };
        let mut seed = 1;
        for (d, od) in [(DType::I8, DType::I32), (DType::I32, DType::I32), (DType::I64, DType::I64), (DType::F32, DType::F32), (DType::BF16, DType::BF16)] {
            let (x, k) = (operand(d, case.x, &mut seed), operand(d, case.k, &mut seed));
            let dims = pjc_tensor::parse_conv_dims(case.dims, 4).unwrap();
            let t0 = std::time::Instant::now();
            let want = pjc_tensor::convolution(&x, &k, &dims, &[], case.padding, &[], &[], 1, 1, od).unwrap();
            let reference = t0.elapsed().as_secs_f64();
            let out = TensorType::new(od, want.shape.iter().map(|&s| s as u64).collect());
            let ins = [x, k];
            let _ = try_conv(&inst(&case), &ins, &out, 2, None);
            let t0 = std::time::Instant::now();
            let got = try_conv(&inst(&case), &ins, &out, 2, None).unwrap();
            let gemm = t0.elapsed().as_secs_f64();
            close(&want, &got, Tolerance::EXACT).unwrap();
            let gop = 2.0 * (8 * 32 * 32 * 64 * 9 * 64) as f64 / 1e9;
            eprintln!("{d} -> {od}: reference {:.1} ms ({:.2} Gop/s), im2col + GEMM {:.1} ms ({:.1} Gop/s)", reference * 1e3, gop / reference, gemm * 1e3, gop / gemm);
        }
    }

    /// The CNN benchmark's weight-gradient convolutions (benches/convnet):
    /// `cargo test --release -p pjc-host --lib -- --ignored
    /// weight_gradient_speed --nocapture`.
    #[test]
    #[ignore]
    fn weight_gradient_speed() {
        let cases = [
            Case { padding: &[(1, 1), (1, 1)], ..c("f01b_i01o->01bf", &[64, 32, 32, 32], &[64, 32, 32, 32]) },
            Case { padding: &[(1, 1), (1, 1)], ..c("f01b_i01o->01bf", &[64, 16, 16, 64], &[64, 16, 16, 64]) },
            Case { padding: &[(1, 1), (1, 1)], ..c("f01b_i01o->01bf", &[64, 32, 32, 3], &[64, 32, 32, 32]) },
            Case { padding: &[(1, 1), (1, 1)], ..c("f01b_i01o->01bf", &[8, 56, 56, 64], &[8, 56, 56, 64]) },
        ];
        let mut seed = 1;
        for case in &cases {
            let (x, k) = (operand(DType::F32, case.x, &mut seed), operand(DType::F32, case.k, &mut seed));
            let dims = pjc_tensor::parse_conv_dims(case.dims, 4).unwrap();
            let want = pjc_tensor::convolution(&x, &k, &dims, &[], case.padding, &[], &[], 1, 1, DType::F32).unwrap();
            let out = TensorType::new(DType::F32, want.shape.iter().map(|&s| s as u64).collect());
            let ins = [x, k];
            let mut best = f64::MAX;
            for _ in 0..5 {
                let t0 = std::time::Instant::now();
                let got = try_conv(&inst(case), &ins, &out, 2, None).unwrap();
                best = best.min(t0.elapsed().as_secs_f64());
                close(&want, &got, Tolerance::EXACT).unwrap();
            }
            let gflop = 2.0 * want.shape.iter().product::<usize>() as f64 * (case.x[0] * case.x[1] * case.x[2]) as f64 / 1e9;
            eprintln!("{:?} x {:?}: {:.1} ms ({:.1} GFLOP/s)", case.x, case.k, best * 1e3, gflop / best);
        }
    }

    #[test]
    fn pred_and_malformed_convolutions_are_left_to_the_reference() {
        let case = c("b0f_0io->b0f", &[1, 3, 1], &[2, 1, 1]);
        let x = Tensor::new(vec![1, 3, 1], Buf::Pred(vec![true, false, true]));
        let k = Tensor::new(vec![2, 1, 1], Buf::Pred(vec![true, true]));
        assert!(try_conv(&inst(&case), &[x, k], &TensorType::new(DType::Pred, vec![1, 2, 1]), 1, None).is_none());
        let x = Tensor::new(vec![1, 3, 1], Buf::F32(vec![1.0, 2.0, 3.0]));
        let k = Tensor::new(vec![5, 1, 1], Buf::F32(vec![1.0; 5]));
        assert!(try_conv(&inst(&case), &[x, k], &TensorType::new(DType::F32, vec![1, 1, 1]), 1, None).is_none());
    }
}
