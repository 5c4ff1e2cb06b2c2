//! `dot_general` library steps as batched GEMM, whatever the dimension order,
//! the batch dimensions and the dtypes ([`try_dot`]; the layout arithmetic is
//! [`dot_layout`]): the free and contracting dimensions of each operand become
//! a matrix read with strides in place when they lie as one strided dimension,
//! or after one transposing copy; batch dimensions may lie anywhere. Floats go
//! through the `gemm` crate (f32, or f64 when an operand or the result is f64);
//! integers through a wrapping i64 product. [`strided_calls`] is the narrower
//! view the CUDA backend hands to cuBLAS.

use crate::pool::pool;
use pjc_ir::{DType, InstData, Opcode, TensorType};
use pjc_tensor::{collapse, Buf, Tensor};
use std::borrow::Cow;

fn strides(shape: &[usize]) -> Vec<usize> {
    pjc_tensor::strides(shape)
}

/// The product as strided-batched GEMM calls in place (what cuBLAS takes):
/// no transposing copy, the batch dimensions split into outer ones, run as
/// one call each, and the longest trailing run that is one strided dimension
/// on both sides, the call's batch. Attention batched over `[batch, heads]` of
/// `[batch, seq, heads, head_dim]` operands is `batch` calls of `heads`
/// products each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StridedCalls {
    /// Products per call, and the lhs and rhs strides between them (elements).
    pub batch: usize,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    /// (batch stride, row stride, column stride) of each operand.
    pub lhs: [isize; 3],
    pub rhs: [isize; 3],
    /// Per call, the element offsets of its lhs, rhs and result.
    pub calls: Vec<[usize; 3]>,
}

/// At most this many calls per product (more: the product is not one for a
/// strided-batched library, and runs as a generated kernel).
pub const MAX_CALLS: usize = 4096;

/// [`StridedCalls`] of a `dot_general`, or `None` when it needs a
/// transposing copy, more than [`MAX_CALLS`] calls, or is no product of
/// these shapes.
pub fn strided_calls(a: &[usize], b: &[usize], lb: &[usize], rb: &[usize], lc: &[usize], rc: &[usize]) -> Option<StridedCalls> {
    let l = dot_layout(a, b, lb, rb, lc, rc)?;
    if l.lhs.transpose.is_some() || l.rhs.transpose.is_some() {
        return None;
    }
    let nb = l.batch.len();
    let both = |g: &[usize]| collapse(&l.batch, &l.lhs.batch_strides, g).is_some() && collapse(&l.batch, &l.rhs.batch_strides, g).is_some();
    let mut split = nb;
    while split > 0 && both(&(split - 1..nb).collect::<Vec<_>>()) {
        split -= 1;
    }
    let inner: Vec<usize> = (split..nb).collect();
    let (batch, bsa) = collapse(&l.batch, &l.lhs.batch_strides, &inner)?;
    let (_, bsb) = collapse(&l.batch, &l.rhs.batch_strides, &inner)?;
    let outer = &l.batch[..split];
    let count: usize = outer.iter().product();
    if count > MAX_CALLS {
        return None;
    }
    let per_call = batch * l.m * l.n;
    let calls = (0..count)
        .map(|o| {
            let (mut rest, mut oa, mut ob) = (o, 0, 0);
            for d in (0..split).rev() {
                let i = rest % outer[d];
                rest /= outer[d];
                oa += i * l.lhs.batch_strides[d];
                ob += i * l.rhs.batch_strides[d];
            }
            [oa, ob, o * per_call]
        })
        .collect();
    let i = |x: usize| x as isize;
    Some(StridedCalls { batch, m: l.m, k: l.k, n: l.n, lhs: [i(bsa), i(l.lhs.rs), i(l.lhs.cs)], rhs: [i(bsb), i(l.rhs.rs), i(l.rhs.cs)], calls })
}

/// One operand of a product as a GEMM reads it: a matrix (lhs m×k, rhs k×n)
/// per batch index.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmOperand {
    /// The permutation that brings the operand into (batch, rows, columns)
    /// order first, when its rows or its columns are not one strided
    /// dimension where they lie (e.g. two free dimensions with a contracting
    /// one between them); `None`: read in place.
    pub transpose: Option<Vec<usize>>,
    /// The batch dimensions' strides (elements, after any transpose), in
    /// result order.
    pub batch_strides: Vec<usize>,
    /// Row and column strides of the matrix (elements, after any transpose).
    pub rs: usize,
    pub cs: usize,
}

/// Any `dot_general` as a batched GEMM: the result is `[batch…, m…, n…]`
/// (spec section 7: batch, lhs free, rhs free), row-major, so batch index
/// `i` (row-major over `batch`) holds an m×n matrix at `i·m·n`.
#[derive(Clone, Debug, PartialEq)]
pub struct DotLayout {
    /// Sizes of the batch dimensions, in result order.
    pub batch: Vec<usize>,
    /// Rows (the lhs free dimensions together), contraction length (the
    /// contracting dimensions together, in `lhs_contract` order) and
    /// columns (the rhs free dimensions together).
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub lhs: GemmOperand,
    pub rhs: GemmOperand,
}

/// One operand: batch dims `batch`, matrix rows `rows` and columns `cols`
/// (each in the order they combine).
fn operand(shape: &[usize], batch: &[usize], rows: &[usize], cols: &[usize]) -> GemmOperand {
    let Some(perm) = pjc_tensor::gemm_order(shape, batch, rows, cols) else {
        let st = strides(shape);
        let (_, rs) = collapse(shape, &st, rows).expect("rows in place");
        let (_, cs) = collapse(shape, &st, cols).expect("columns in place");
        return GemmOperand { transpose: None, batch_strides: batch.iter().map(|&d| st[d]).collect(), rs, cs };
    };
    let pshape: Vec<usize> = perm.iter().map(|&d| shape[d]).collect();
    let pst = strides(&pshape);
    let nb = batch.len();
    let idx = |r: std::ops::Range<usize>| -> Vec<usize> { r.collect() };
    let (_, rs) = collapse(&pshape, &pst, &idx(nb..nb + rows.len())).expect("row-major rows collapse");
    let (_, cs) = collapse(&pshape, &pst, &idx(nb + rows.len()..perm.len())).expect("row-major columns collapse");
    GemmOperand { transpose: Some(perm), batch_strides: pst[..nb].to_vec(), rs, cs }
}

/// How `dot_general` of operands shaped `a` and `b` runs as a batched GEMM,
/// whatever its dimension order; `None` when the dimension numbers do not
/// describe a product of these shapes (the reference kernel then says why).
pub fn dot_layout(a: &[usize], b: &[usize], lb: &[usize], rb: &[usize], lc: &[usize], rc: &[usize]) -> Option<DotLayout> {
    if lb.len() != rb.len() || lc.len() != rc.len() {
        return None;
    }
    let valid = |dims: &[usize], rank: usize| dims.iter().all(|&d| d < rank);
    if !valid(lb, a.len()) || !valid(lc, a.len()) || !valid(rb, b.len()) || !valid(rc, b.len()) {
        return None;
    }
    let free = |rank: usize, x: &[usize], y: &[usize]| -> Vec<usize> { (0..rank).filter(|d| !x.contains(d) && !y.contains(d)).collect() };
    let (lf, rf) = (free(a.len(), lb, lc), free(b.len(), rb, rc));
    if lf.len() + lb.len() + lc.len() != a.len() || rf.len() + rb.len() + rc.len() != b.len() {
        return None; // a dimension named twice
    }
    if lb.iter().zip(rb).any(|(&x, &y)| a[x] != b[y]) || lc.iter().zip(rc).any(|(&x, &y)| a[x] != b[y]) {
        return None;
    }
    Some(DotLayout {
        batch: lb.iter().map(|&d| a[d]).collect(),
        m: lf.iter().map(|&d| a[d]).product(),
        k: lc.iter().map(|&d| a[d]).product(),
        n: rf.iter().map(|&d| b[d]).product(),
        lhs: operand(a, lb, &lf, lc),
        rhs: operand(b, rb, rc, &rf),
    })
}

impl DotLayout {
    /// The element offsets of batch index `i` in the lhs and the rhs.
    fn offsets(&self, mut i: usize) -> (usize, usize) {
        let (mut x, mut y) = (0, 0);
        for d in (0..self.batch.len()).rev() {
            let j = i % self.batch[d];
            i /= self.batch[d];
            x += j * self.lhs.batch_strides[d];
            y += j * self.rhs.batch_strides[d];
        }
        (x, y)
    }
    fn batches(&self) -> usize {
        self.batch.iter().product()
    }
}

/// Products with fewer multiply-adds than this run on one thread.
const PARALLEL_WORK: usize = 1 << 15;

/// The batched product in `T` (f32 or f64). Many small products run in
/// parallel, one per thread, with the gemm crate; otherwise each product runs
/// on all the threads, with the system BLAS when there is one (and its strides
/// fit CBLAS) and the gemm crate otherwise.
pub(crate) fn gemm_batched<T: crate::blas::Element + Default + Send + Sync>(l: &DotLayout, x: &[T], y: &[T], one: T, threads: usize, blas: Option<&crate::blas::Blas>) -> Vec<T> {
    let mut dst = vec![T::default(); l.batches() * l.m * l.n];
    gemm_batched_into(l, x, y, one, threads, blas, &mut dst);
    dst
}

/// [`gemm_batched`] writing every element of `dst` (`batches·m·n` long).
pub(crate) fn gemm_batched_into<T: crate::blas::Element + Default + Send + Sync>(
    l: &DotLayout,
    x: &[T],
    y: &[T],
    one: T,
    threads: usize,
    blas: Option<&crate::blas::Blas>,
    dst: &mut [T],
) {
    use rayon::prelude::*;
    let (m, k, n) = (l.m, l.k, l.n);
    assert_eq!(dst.len(), l.batches() * m * n, "the product's output size");
    if dst.is_empty() || k == 0 {
        dst.fill(T::default()); // empty sums are zero
        return;
    }
    let work = m * n * k;
    // `rows` x `cols` of the output at `dst` (row stride n) from the lhs rows
    // starting at element `ox` and the rhs columns starting at element `oy`.
    // SAFETY (callers): every index the strides reach is inside x, y and the
    // output: the layout was computed from these operands' shapes, callers
    // pass offsets of whole batches, row blocks or column blocks of it, and
    // concurrent calls write disjoint parts of the output.
    let block = |rows: usize, cols: usize, dst: *mut T, ox: usize, oy: usize, par: gemm::Parallelism| unsafe {
        gemm::gemm(
            rows,
            cols,
            k,
            dst,
            1,
            n as isize,
            false,
            x.as_ptr().add(ox),
            l.lhs.cs as isize,
            l.lhs.rs as isize,
            y.as_ptr().add(oy),
            l.rhs.cs as isize,
            l.rhs.rs as isize,
            T::default(),
            one,
            false,
            false,
            false,
            par,
        )
    };
    // One product: the output rows `out` (whole rows of n).
    let product = |ox: usize, oy: usize, out: &mut [T], par: gemm::Parallelism| block(out.len() / n, n, out.as_mut_ptr(), ox, oy, par);
    let batches = l.batches();
    if threads > 1 && batches >= threads && work < 1 << 22 {
        let body = |dst: &mut [T]| {
            dst.par_chunks_mut(m * n).enumerate().for_each(|(i, out)| {
                let (ox, oy) = l.offsets(i);
                product(ox, oy, out, gemm::Parallelism::None)
            })
        };
        match pool(threads) {
            Some(p) => p.install(|| body(dst)),
            None => body(dst),
        }
    } else {
        if let Some(b) = blas {
            b.use_threads(threads);
        }
        for (i, out) in dst.chunks_mut(m * n).enumerate() {
            let (ox, oy) = l.offsets(i);
            // SAFETY: as for `product`.
            let done = blas.is_some_and(|b| unsafe {
                T::gemm(b, m, n, k, x.as_ptr().add(ox), l.lhs.rs, l.lhs.cs, y.as_ptr().add(oy), l.rhs.rs, l.rhs.cs, out.as_mut_ptr())
            });
            if done {
                continue;
            }
            if threads > 1 && work >= PARALLEL_WORK && n >= 2 * 64 && m < n && m <= 512 {
                // Few rows and many columns (a batch of activations times a
                // large weight): column blocks in parallel, so that each call
                // packs only its share of the rhs instead of all of it.
                let cb = (n / (threads * 2)).max(64).next_multiple_of(16);
                let blocks = n.div_ceil(cb);
                let dst = out.as_mut_ptr() as usize;
                let body = |bi: usize| {
                    let (j0, w) = (bi * cb, cb.min(n - bi * cb));
                    // Blocks write disjoint column ranges [j0, j0 + w).
                    block(m, w, (dst as *mut T).wrapping_add(j0), ox, oy + j0 * l.rhs.cs, gemm::Parallelism::None)
                };
                match pool(threads) {
                    Some(p) => p.install(|| (0..blocks).into_par_iter().for_each(body)),
                    None => (0..blocks).for_each(body),
                }
            } else if threads > 1 && work >= PARALLEL_WORK && m >= 2 * 64 {
                // Row blocks in parallel, one single-threaded call each: the
                // gemm crate's kernels run best this way (docs/executable.md).
                let mb = (m / (threads * 4)).max(64);
                let body = |(bi, o): (usize, &mut [T])| product(ox + bi * mb * l.lhs.rs, oy, o, gemm::Parallelism::None);
                match pool(threads) {
                    Some(p) => p.install(|| out.par_chunks_mut(mb * n).enumerate().for_each(body)),
                    None => out.chunks_mut(mb * n).enumerate().for_each(body),
                }
            } else {
                let par = if threads > 1 && work >= PARALLEL_WORK { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
                product(ox, oy, out, par);
            }
        }
    }
}

/// Views little-endian bytes of a plan buffer as elements (`None` when the
/// bytes are not aligned for `T` or not a whole number of elements).
fn elements<T>(b: &[u8]) -> Option<&[T]> {
    let size = std::mem::size_of::<T>();
    // SAFETY: checked alignment and length; f32/f64 have no invalid bit patterns.
    (b.as_ptr() as usize % std::mem::align_of::<T>() == 0 && b.len() % size == 0).then(|| unsafe { std::slice::from_raw_parts(b.as_ptr() as *const T, b.len() / size) })
}

fn elements_mut<T>(b: &mut [u8]) -> Option<&mut [T]> {
    let size = std::mem::size_of::<T>();
    // SAFETY: as for `elements`; the slice is borrowed mutably once.
    (b.as_ptr() as usize % std::mem::align_of::<T>() == 0 && b.len() % size == 0).then(|| unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr() as *mut T, b.len() / size) })
}

/// A `dot_general` of f32 (or f64) operands and result whose operands GEMM
/// reads in place, computed from the plan buffers' bytes straight into the
/// result buffer's: no operand or result copies. `false` (nothing written)
/// for every other product, which [`try_dot`] then takes.
pub fn dot_in_place(inst: &InstData, types: [&TensorType; 3], ins: [&[u8]; 2], out: &mut [u8], threads: usize) -> bool {
    let [a, b, o] = types;
    if inst.op != Opcode::DotGeneral || a.dtype != b.dtype || a.dtype != o.dtype || !matches!(a.dtype, DType::F32 | DType::F64) {
        return false;
    }
    let attrs = pjc_ir::Attrs::new(inst, &[a, b]);
    let us = |n: &str| -> Option<Vec<usize>> { Some(attrs.ints(n).ok()?.iter().map(|&x| x as usize).collect()) };
    let shape = |t: &TensorType| -> Vec<usize> { t.shape.iter().map(|&x| x as usize).collect() };
    let Some(l) = (|| dot_layout(&shape(a), &shape(b), &us("lhs_batch")?, &us("rhs_batch")?, &us("lhs_contract")?, &us("rhs_contract")?))() else {
        return false;
    };
    if l.lhs.transpose.is_some() || l.rhs.transpose.is_some() || o.num_elements() as usize != l.batches() * l.m * l.n {
        return false;
    }
    let blas = crate::blas::get();
    match a.dtype {
        DType::F32 => match (elements::<f32>(ins[0]), elements::<f32>(ins[1]), elements_mut::<f32>(out)) {
            (Some(x), Some(y), Some(d)) => gemm_batched_into(&l, x, y, 1.0f32, threads, blas, d),
            _ => return false,
        },
        _ => match (elements::<f64>(ins[0]), elements::<f64>(ins[1]), elements_mut::<f64>(out)) {
            (Some(x), Some(y), Some(d)) => gemm_batched_into(&l, x, y, 1.0f64, threads, blas, d),
            _ => return false,
        },
    }
    true
}

/// Products with fewer multiply-adds than this skip the AMX tiles (packing
/// both operands costs more than it saves).
const AMX_WORK: usize = 1 << 20;

/// A bf16 product (f32 accumulation) on AMX tiles, batch by batch, or `None`
/// when the CPU has none, the product is small, or an operand element is too
/// small for the tiles (`amx.rs`).
fn amx_batched(l: &DotLayout, x: &Tensor, y: &Tensor, ct: DType, threads: usize) -> Option<Vec<f32>> {
    let (Buf::BF16(xv), Buf::BF16(yv)) = (&x.data, &y.data) else { return None };
    let (m, n, k) = (l.m, l.n, l.k);
    if ct != DType::F32 || m * n * k < AMX_WORK || !crate::amx::available() {
        return None;
    }
    let mut dst = vec![0f32; l.batches() * m * n];
    for (i, out) in dst.chunks_mut(m * n).enumerate() {
        let (ox, oy) = l.offsets(i);
        if !crate::amx::bf16_product(m, n, k, &xv[ox..], l.lhs.rs, l.lhs.cs, &yv[oy..], l.rhs.rs, l.rhs.cs, out, n, threads) {
            return None;
        }
    }
    Some(dst)
}

/// Elements per conversion task (on one thread each).
const CONVERT_BLOCK: usize = 1 << 16;

/// A bf16, f16 or f32 tensor widened to f32 (`ct`), exactly and at memory
/// speed (the slice conversions of the `half` crate: a shift for bf16, F16C
/// for f16 where the CPU has it), in blocks on `threads` threads; `None` for
/// any other conversion (the reference `convert` takes it).
pub(crate) fn widen(t: &Tensor, ct: DType, threads: usize) -> Option<Tensor> {
    use half::slice::HalfFloatSliceExt;
    if ct != DType::F32 {
        return None;
    }
    let n: usize = t.shape.iter().product();
    let mut v = vec![0f32; n];
    match &t.data {
        Buf::BF16(x) => blocks(&mut v, threads, |i, o| x[i..i + o.len()].convert_to_f32_slice(o)),
        Buf::F16(x) => blocks(&mut v, threads, |i, o| x[i..i + o.len()].convert_to_f32_slice(o)),
        _ => return None,
    }
    Some(Tensor::new(t.shape.clone(), Buf::F32(v)))
}

/// An f32 result rounded once to `d` (to nearest even, as `convert` rounds);
/// the reference `convert` for other dtypes.
pub(crate) fn narrow(t: Tensor, d: DType, threads: usize) -> Option<Tensor> {
    use half::{bf16, f16, slice::HalfFloatSliceExt};
    let Buf::F32(x) = &t.data else {
        return pjc_tensor::convert(&t, d).ok();
    };
    let data = match d {
        DType::BF16 => {
            let mut v = vec![bf16::ZERO; x.len()];
            blocks(&mut v, threads, |i, o| o.convert_from_f32_slice(&x[i..i + o.len()]));
            Buf::BF16(v)
        }
        DType::F16 => {
            let mut v = vec![f16::ZERO; x.len()];
            blocks(&mut v, threads, |i, o| o.convert_from_f32_slice(&x[i..i + o.len()]));
            Buf::F16(v)
        }
        _ => return pjc_tensor::convert(&t, d).ok(),
    };
    Some(Tensor::new(t.shape, data))
}

/// `f(offset, block)` over blocks of `out`, in parallel when it is large.
fn blocks<T: Send>(out: &mut [T], threads: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    use rayon::prelude::*;
    match pool(threads).filter(|_| threads > 1 && out.len() > CONVERT_BLOCK) {
        Some(p) => p.install(|| out.par_chunks_mut(CONVERT_BLOCK).enumerate().for_each(|(b, o)| f(b * CONVERT_BLOCK, o))),
        None => out.chunks_mut(CONVERT_BLOCK).enumerate().for_each(|(b, o)| f(b * CONVERT_BLOCK, o)),
    }
}

/// The batched product of integer operands: wrapping i64 multiply-adds
/// (exact modulo 2^64, so wrapping the sum to the result's width gives the
/// spec's result), rows in parallel.
fn int_batched(l: &DotLayout, x: &[i64], y: &[i64], threads: usize) -> Vec<i64> {
    use rayon::prelude::*;
    let (m, k, n) = (l.m, l.k, l.n);
    let mut dst = vec![0i64; l.batches() * m * n];
    if dst.is_empty() {
        return dst;
    }
    let row = |r: usize, out: &mut [i64]| {
        let (i, bi) = (r % m, r / m);
        let (ox, oy) = l.offsets(bi);
        for kk in 0..k {
            let a = x[ox + i * l.lhs.rs + kk * l.lhs.cs];
            let yb = oy + kk * l.rhs.rs;
            for (j, o) in out.iter_mut().enumerate() {
                *o = o.wrapping_add(a.wrapping_mul(y[yb + j * l.rhs.cs]));
            }
        }
    };
    if let (true, Some(p)) = (threads > 1 && m * n * k * l.batches() >= PARALLEL_WORK, pool(threads)) {
        p.install(|| dst.par_chunks_mut(n).enumerate().for_each(|(r, out)| row(r, out)));
    } else {
        for (r, out) in dst.chunks_mut(n).enumerate() {
            row(r, out);
        }
    }
    dst
}

/// `dot_general` as a batched GEMM, for every layout and dtype: float
/// operands through the gemm crate in f32 (f16, bf16 and f32 operands, per
/// spec section 11's f32 accumulation) or f64 (when an operand or the result
/// is f64), then rounded once to the result dtype; integer operands with
/// wrapping i64 arithmetic. Operands whose rows or columns are not one
/// strided dimension in place are transposed into order first (a copy, linear
/// in the operand). `None` only for a step that is not a consistent
/// `dot_general` (the reference kernel then reports the error).
pub fn try_dot(inst: &InstData, ins: &[Tensor], out: &TensorType, threads: usize) -> Option<Tensor> {
    dot_with(inst, ins, out, threads, crate::blas::get())
}

/// [`try_dot`] with the given BLAS (`None`: the gemm crate only).
pub fn dot_with(inst: &InstData, ins: &[Tensor], out: &TensorType, threads: usize, blas: Option<&crate::blas::Blas>) -> Option<Tensor> {
    if inst.op != Opcode::DotGeneral || ins.len() != 2 {
        return None;
    }
    let (a, b) = (&ins[0], &ins[1]);
    let types: Vec<TensorType> = ins.iter().map(|t| TensorType::new(t.dtype(), t.shape.iter().map(|&x| x as u64).collect())).collect();
    let refs: Vec<&TensorType> = types.iter().collect();
    let attrs = pjc_ir::Attrs::new(inst, &refs);
    let us = |n: &str| -> Option<Vec<usize>> { Some(attrs.ints(n).ok()?.iter().map(|&x| x as usize).collect()) };
    let l = dot_layout(&a.shape, &b.shape, &us("lhs_batch")?, &us("rhs_batch")?, &us("lhs_contract")?, &us("rhs_contract")?)?;
    let shape: Vec<usize> = out.shape.iter().map(|&x| x as usize).collect();
    if a.dtype() != b.dtype() || shape.iter().product::<usize>() != l.batches() * l.m * l.n {
        return None;
    }
    // Operands are read in place unless a transpose or a widening is needed.
    fn ordered<'t>(t: &'t Tensor, op: &GemmOperand) -> Option<Cow<'t, Tensor>> {
        match &op.transpose {
            Some(perm) => pjc_tensor::transpose(t, perm).ok().map(Cow::Owned),
            None => Some(Cow::Borrowed(t)),
        }
    }
    fn cast(t: Cow<'_, Tensor>, ct: DType, threads: usize) -> Option<Cow<'_, Tensor>> {
        if t.dtype() == ct {
            return Some(t);
        }
        match widen(&t, ct, threads) {
            Some(w) => Some(Cow::Owned(w)),
            None => pjc_tensor::convert(&t, ct).ok().map(Cow::Owned),
        }
    }
    let d = a.dtype();
    let data = if d.is_float() && out.dtype.is_float() {
        let wide = d == DType::F64 || out.dtype == DType::F64;
        let ct = if wide { DType::F64 } else { DType::F32 };
        let (x, y) = (ordered(a, &l.lhs)?, ordered(b, &l.rhs)?);
        if let Some(r) = amx_batched(&l, &x, &y, ct, threads) {
            let r = Tensor::new(shape.clone(), Buf::F32(r));
            return if r.dtype() == out.dtype { Some(r) } else { narrow(r, out.dtype, threads) };
        }
        let (x, y) = (cast(x, ct, threads)?, cast(y, ct, threads)?);
        let r = match (&x.data, &y.data) {
            (Buf::F32(x), Buf::F32(y)) => Tensor::new(shape.clone(), Buf::F32(gemm_batched(&l, x, y, 1.0f32, threads, blas))),
            (Buf::F64(x), Buf::F64(y)) => Tensor::new(shape.clone(), Buf::F64(gemm_batched(&l, x, y, 1.0f64, threads, blas))),
            _ => return None,
        };
        return if r.dtype() == out.dtype { Some(r) } else { narrow(r, out.dtype, threads) };
    } else if d.is_int() && out.dtype.is_int() {
        let ints = |t: Cow<'_, Tensor>| -> Option<Vec<i64>> {
            match t.data.lanes() {
                pjc_tensor::Lanes::I(v) => Some(v.into_iter().map(|x| x as i64).collect()),
                _ => None,
            }
        };
        let (x, y) = (ints(ordered(a, &l.lhs)?)?, ints(ordered(b, &l.rhs)?)?);
        let sums: Vec<i128> = int_batched(&l, &x, &y, threads).into_iter().map(|s| pjc_tensor::wrap_to_dtype(s as i128, out.dtype)).collect();
        Buf::from_i128(out.dtype, &sums)
    } else {
        return None;
    };
    Some(Tensor::new(shape, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    use pjc_ir::AttrValue;
    use pjc_tensor::compare::{close, Tolerance};

    fn dot_inst(lb: &[i64], rb: &[i64], lc: &[i64], rc: &[i64]) -> InstData {
        let mut inst = InstData::new(Opcode::DotGeneral);
        for (n, v) in [("lhs_batch", lb), ("rhs_batch", rb), ("lhs_contract", lc), ("rhs_contract", rc)] {
            if !v.is_empty() {
                inst.set_attr(n, AttrValue::int_list(v));
            }
        }
        inst
    }

    /// Deterministic operands: for floats, multiples of 0.5 in [-4, 4] (every
    /// product and sum here is exact in f32, so GEMM and the reference agree
    /// bit for bit after the one rounding to the result dtype); for integers,
    /// the dtype's whole range (wrapping exercised).
    fn operand(d: DType, shape: &[usize], seed: &mut u64) -> Tensor {
        let n: usize = shape.iter().product();
        let mut next = || {
            *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            *seed >> 11
        };
        let data = if d.is_float() {
            let v: Vec<f64> = (0..n).map(|_| ((next() % 17) as f64 - 8.0) * 0.5).collect();
            Buf::from_f64(d, &v)
        } else {
            let v: Vec<i128> = (0..n).map(|_| pjc_tensor::wrap_to_dtype(next() as i128 * 0x9e37_79b9, d)).collect();
            Buf::from_i128(d, &v)
        };
        Tensor::new(shape.to_vec(), data)
    }

    /// (lhs shape, rhs shape, lhs_batch, rhs_batch, lhs_contract, rhs_contract)
    type Case = (&'static [usize], &'static [usize], &'static [i64], &'static [i64], &'static [i64], &'static [i64]);
    const LAYOUTS: &[Case] = &[
        (&[5, 7], &[7, 3], &[], &[], &[1], &[0]),                         // plain
        (&[7, 5], &[7, 3], &[], &[], &[0], &[0]),                         // lhs transposed
        (&[5, 7], &[3, 7], &[], &[], &[1], &[1]),                         // rhs transposed
        (&[2, 4, 6], &[6, 3], &[], &[], &[2], &[0]),                      // 3-D activations x 2-D weights
        (&[4, 2, 6], &[2, 6, 3], &[1], &[0], &[2], &[1]),                 // batch not leading
        (&[2, 3, 4, 5], &[3, 2, 5, 6], &[0, 1], &[1, 0], &[3], &[2]),     // batch orders differ
        (&[3, 4, 5], &[4, 5, 2], &[], &[], &[1, 2], &[0, 1]),             // two contracting dims
        (&[4, 3, 5], &[3, 6], &[], &[], &[1], &[0]),                      // free dims around the contracting one
        (&[5, 4, 3], &[3, 4, 2], &[], &[], &[2, 1], &[0, 1]),             // contracting dims out of memory order
        (&[1, 5, 1, 7], &[7, 1, 3], &[], &[], &[3], &[0]),                // size-1 dims
        (&[2, 8, 4, 16], &[2, 8, 4, 16], &[0, 2], &[0, 2], &[3], &[3]),   // attention scores, [B,S,H,D]
        (&[2, 4, 8, 8], &[2, 8, 4, 16], &[0, 1], &[0, 2], &[3], &[1]),    // attention values
        (&[7], &[7], &[], &[], &[0], &[0]),                               // inner product
        (&[3], &[4], &[], &[], &[], &[]),                                 // outer product
        (&[0, 3], &[3, 4], &[], &[], &[1], &[0]),                         // empty result
        (&[2, 0], &[0, 3], &[], &[], &[1], &[0]),                         // empty sums
        (&[40, 64], &[64, 300], &[], &[], &[1], &[0]),                    // few rows, many columns: column blocks
        (&[40, 64], &[300, 64], &[], &[], &[1], &[1]),                    // ... with the rhs transposed
    ];
    /// (operand dtype, result dtype)
    const DTYPES: &[(DType, DType)] = &[
        (DType::F32, DType::F32),
        (DType::F64, DType::F64),
        (DType::F16, DType::F16),
        (DType::BF16, DType::BF16),
        (DType::BF16, DType::F32),
        (DType::F16, DType::F32),
        (DType::F32, DType::F64),
        (DType::I32, DType::I32),
        (DType::I8, DType::I8),
        (DType::I8, DType::I32),
        (DType::U8, DType::U8),
        (DType::I16, DType::I16),
        (DType::I64, DType::I64),
        (DType::U64, DType::U64),
        (DType::U32, DType::U32),
    ];

    #[test]
    fn every_layout_and_dtype_runs_as_gemm_like_the_reference() {
        let mut seed = 7;
        let mut checked = 0;
        for &(sa, sb, lb, rb, lc, rc) in LAYOUTS {
            for &(d, od) in DTYPES {
                let (a, b) = (operand(d, sa, &mut seed), operand(d, sb, &mut seed));
                let us = |v: &[i64]| v.iter().map(|&x| x as usize).collect::<Vec<_>>();
                let want = pjc_tensor::dot_general(&a, &b, &us(lb), &us(rb), &us(lc), &us(rc), od).unwrap();
                let out = TensorType::new(od, want.shape.iter().map(|&x| x as u64).collect());
                for (threads, blas) in [(1, None), (3, None), (1, crate::blas::openblas()), (2, crate::blas::openblas())] {
                    let got = dot_with(&dot_inst(lb, rb, lc, rc), &[a.clone(), b.clone()], &out, threads, blas)
                        .unwrap_or_else(|| panic!("{sa:?} x {sb:?} ({d} -> {od}) fell off the GEMM path"));
                    let with = blas.map_or("the gemm crate", |b| b.name.as_str());
                    close(&want, &got, Tolerance::EXACT).unwrap_or_else(|e| panic!("{sa:?} x {sb:?} ({d} -> {od}, {threads} threads, {with}): {e}"));
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, LAYOUTS.len() * DTYPES.len() * 4);
    }

    #[test]
    fn in_place_products_write_the_reference_result_over_stale_bytes() {
        let mut seed = 9;
        let mut in_place = 0;
        for &(sa, sb, lb, rb, lc, rc) in LAYOUTS {
            for d in [DType::F32, DType::F64] {
                let (a, b) = (operand(d, sa, &mut seed), operand(d, sb, &mut seed));
                let us = |v: &[i64]| v.iter().map(|&x| x as usize).collect::<Vec<_>>();
                let want = pjc_tensor::dot_general(&a, &b, &us(lb), &us(rb), &us(lc), &us(rc), d).unwrap();
                let ty = |t: &Tensor| TensorType::new(d, t.shape.iter().map(|&x| x as u64).collect());
                let (ta, tb, to) = (ty(&a), ty(&b), ty(&want));
                // 8-byte aligned bytes, as plan buffers are.
                let aligned = |t: &Tensor| -> Vec<u64> {
                    let b = pjc_tensor::buf_le_bytes(&t.data);
                    let mut w = vec![0u64; b.len().div_ceil(8)];
                    for (i, &x) in b.iter().enumerate() {
                        w[i / 8] |= (x as u64) << (8 * (i % 8));
                    }
                    w
                };
                let bytes = |w: &[u64], n: u64| -> Vec<u8> { w.iter().flat_map(|x| x.to_le_bytes()).take(n as usize).collect() };
                let (wa, wb) = (aligned(&a), aligned(&b));
                // SAFETY: the words hold at least the tensors' bytes.
                let (ba, bb) = unsafe {
                    (std::slice::from_raw_parts(wa.as_ptr() as *const u8, ta.bytes() as usize), std::slice::from_raw_parts(wb.as_ptr() as *const u8, tb.bytes() as usize))
                };
                // The output buffer holds the previous step's bytes.
                let mut wo = vec![0x7f7f_7f7f_7f7f_7f7fu64; (to.bytes() as usize).div_ceil(8)];
                // SAFETY: as above.
                let bo = unsafe { std::slice::from_raw_parts_mut(wo.as_mut_ptr() as *mut u8, to.bytes() as usize) };
                if !dot_in_place(&dot_inst(lb, rb, lc, rc), [&ta, &tb, &to], [ba, bb], bo, 2) {
                    // Only products that need a transposing copy take the copying path.
                    let l = dot_layout(sa, sb, &us(lb), &us(rb), &us(lc), &us(rc)).unwrap();
                    assert!(l.lhs.transpose.is_some() || l.rhs.transpose.is_some(), "{sa:?} x {sb:?} not in place");
                    continue;
                }
                let got = Tensor::new(want.shape.clone(), pjc_tensor::buf_from_le_bytes(d, &bytes(&wo, to.bytes())).unwrap());
                close(&want, &got, Tolerance::EXACT).unwrap_or_else(|e| panic!("{sa:?} x {sb:?} ({d}): {e}"));
                in_place += 1;
            }
        }
        assert!(in_place >= 20, "{in_place}");
        // Other dtypes are not taken.
        let t = TensorType::new(DType::BF16, vec![2, 2]);
        let bytes = [0u8; 8];
        assert!(!dot_in_place(&dot_inst(&[], &[], &[1], &[0]), [&t, &t, &t], [&bytes, &bytes], &mut [0u8; 8], 1));
    }

    #[test]
    fn large_bf16_products_take_the_amx_tiles_like_the_reference() {
        // Above AMX_WORK, on a CPU with AMX-BF16 (elsewhere the f32 path: the
        // same results). Halves in [-4, 4]: exact sums, so bit for bit.
        let cases: &[Case] = &[
            (&[2, 130, 300], &[300, 70], &[], &[], &[2], &[0]),                 // 3-D x 2-D, edges of every tile
            (&[130, 300], &[70, 300], &[], &[], &[1], &[1]),                    // rhs transposed
            (&[2, 160, 4, 64], &[2, 160, 4, 64], &[0, 2], &[0, 2], &[3], &[3]), // attention scores
            (&[256, 512], &[512, 256], &[], &[], &[1], &[0]),                   // whole tiles, in place
        ];
        let mut seed = 13;
        for &(sa, sb, lb, rb, lc, rc) in cases {
            let us = |v: &[i64]| v.iter().map(|&x| x as usize).collect::<Vec<_>>();
            let l = dot_layout(sa, sb, &us(lb), &us(rb), &us(lc), &us(rc)).unwrap();
            assert!(l.m * l.n * l.k >= AMX_WORK, "{sa:?} x {sb:?} is below the AMX threshold");
            let (a, b) = (operand(DType::BF16, sa, &mut seed), operand(DType::BF16, sb, &mut seed));
            if crate::amx::available() && l.lhs.transpose.is_none() && l.rhs.transpose.is_none() {
                assert!(amx_batched(&l, &a, &b, DType::F32, 2).is_some(), "{sa:?} x {sb:?} not on the tiles");
            }
            for od in [DType::F32, DType::BF16] {
                let want = pjc_tensor::dot_general(&a, &b, &us(lb), &us(rb), &us(lc), &us(rc), od).unwrap();
                let out = TensorType::new(od, want.shape.iter().map(|&x| x as u64).collect());
                for threads in [1, 2] {
                    let got = dot_with(&dot_inst(lb, rb, lc, rc), &[a.clone(), b.clone()], &out, threads, None).unwrap();
                    close(&want, &got, Tolerance::EXACT).unwrap_or_else(|e| panic!("{sa:?} x {sb:?} (bf16 -> {od}, {threads} threads): {e}"));
                }
            }
        }
        // Real values with long sums: within the spec's tolerance.
        let mut s = 17u64;
        let v: Vec<f64> = (0..300 * 2000)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect();
        let a = Tensor::new(vec![300, 2000], Buf::from_f64(DType::BF16, &v));
        let b = Tensor::new(vec![2000, 300], Buf::from_f64(DType::BF16, &v));
        for od in [DType::F32, DType::BF16] {
            let want = pjc_tensor::dot_general(&a, &b, &[], &[], &[1], &[0], od).unwrap();
            let got = dot_with(&dot_inst(&[], &[], &[1], &[0]), &[a.clone(), b.clone()], &TensorType::new(od, vec![300, 300]), 2, None).unwrap();
            close(&want, &got, Tolerance::spec(od)).unwrap_or_else(|e| panic!("bf16 -> {od}: {e}"));
        }
    }

    #[test]
    fn real_valued_products_meet_the_spec_tolerance() {
        // Long sums of non-representable values: GEMM's f32 accumulation
        // against the reference's f64, within the spec's reassociation bound.
        let mut seed = 11u64;
        let mut real = |shape: &[usize], d: DType| {
            let n: usize = shape.iter().product();
            let v: Vec<f64> = (0..n)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    ((seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
                })
                .collect();
            Tensor::new(shape.to_vec(), Buf::from_f64(d, &v))
        };
        for (d, od) in [(DType::F32, DType::F32), (DType::BF16, DType::F32), (DType::BF16, DType::BF16), (DType::F64, DType::F64)] {
            let (a, b) = (real(&[4, 33, 300], d), real(&[300, 17], d));
            let want = pjc_tensor::dot_general(&a, &b, &[], &[], &[2], &[0], od).unwrap();
            let out = TensorType::new(od, vec![4, 33, 17]);
            for blas in [None, crate::blas::openblas()] {
                let got = dot_with(&dot_inst(&[], &[], &[2], &[0]), &[a.clone(), b.clone()], &out, 2, blas).unwrap();
                close(&want, &got, Tolerance::spec(od)).unwrap_or_else(|e| panic!("{d} -> {od}: {e}"));
            }
        }
    }

    #[test]
    fn layouts_read_in_place_when_they_can() {
        // 3-D activations x 2-D weights: rows [B, S] are one strided dim.
        let l = dot_layout(&[2, 4, 6], &[6, 3], &[], &[], &[2], &[0]).unwrap();
        assert_eq!((l.m, l.k, l.n), (8, 6, 3));
        assert_eq!((l.lhs.transpose.clone(), l.lhs.rs, l.lhs.cs), (None, 6, 1));
        // Batch dims anywhere are strides, not copies.
        let l = dot_layout(&[2, 8, 4, 16], &[2, 8, 4, 16], &[0, 2], &[0, 2], &[3], &[3]).unwrap();
        assert_eq!(l.batch, vec![2, 4]);
        assert_eq!((l.lhs.transpose.clone(), l.lhs.batch_strides.clone(), l.lhs.rs, l.lhs.cs), (None, vec![512, 16], 64, 1));
        assert_eq!((l.rhs.transpose.clone(), l.rhs.rs, l.rhs.cs), (None, 1, 64));
        // Free dims on both sides of the contracting one: one transposing copy.
        let l = dot_layout(&[4, 3, 5], &[3, 6], &[], &[], &[1], &[0]).unwrap();
        assert_eq!(l.lhs.transpose, Some(vec![0, 2, 1]));
        assert_eq!((l.lhs.rs, l.lhs.cs), (3, 1));
        // Inconsistent dimension numbers are the reference kernel's to report.
        assert!(dot_layout(&[2, 3], &[4, 5], &[], &[], &[1], &[0]).is_none());
        assert!(dot_layout(&[2, 3], &[3, 5], &[], &[], &[1, 1], &[0, 0]).is_none());
    }

    #[test]
    fn views() {
        // One strided-batched call: (batch, m, k, n, lhs strides, rhs strides).
        let one = |a: &[usize], b: &[usize], lb: &[usize], rb: &[usize], lc: &[usize], rc: &[usize]| {
            let v = strided_calls(a, b, lb, rb, lc, rc).unwrap();
            assert_eq!(v.calls, vec![[0, 0, 0]], "{a:?} x {b:?}");
            (v.batch, v.m, v.k, v.n, v.lhs, v.rhs)
        };
        // [2,3] x [3,4]
        assert_eq!(one(&[2, 3], &[3, 4], &[], &[], &[1], &[0]), (1, 2, 3, 4, [0, 3, 1], [0, 4, 1]));
        // lhs transposed: [3,2] contract 0
        assert_eq!(one(&[3, 2], &[3, 4], &[], &[], &[0], &[0]), (1, 2, 3, 4, [0, 1, 2], [0, 4, 1]));
        // batched
        assert_eq!(one(&[5, 2, 3], &[5, 3, 4], &[0], &[0], &[2], &[1]), (5, 2, 3, 4, [6, 3, 1], [12, 4, 1]));
        // two contracting dims that lie as one: a plain product
        assert_eq!(one(&[2, 3, 4], &[3, 4], &[], &[], &[1, 2], &[0, 1]), (1, 2, 12, 1, [0, 12, 1], [0, 1, 0]));
        // batch dims that do not lie as one strided dim: one call per outer index
        let v = strided_calls(&[2, 8, 4, 16], &[2, 8, 4, 16], &[0, 2], &[0, 2], &[3], &[3]).unwrap();
        assert_eq!((v.batch, v.calls.len()), (4, 2));
        // free dims on both sides of the contracting one: needs a copy first
        assert!(strided_calls(&[4, 3, 5], &[3, 6], &[], &[], &[1], &[0]).is_none());
    }
}
