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
//! dtype, like products (spec section 11). Integer convolutions return `None`
//! and run the reference kernel.

use crate::gemm::{gemm_batched, DotLayout, GemmOperand};
use pjc_ir::{Attrs, DType, InstData, Opcode, TensorType};
use pjc_tensor::{Buf, ConvGeometry, Tensor};
use std::borrow::Cow;

/// Patch-matrix elements of one block of output rows (512 KiB of f32: about
/// a core's L2 cache).
const PATCH_BLOCK: usize = 128 << 10;

/// `convolution` as im2col + GEMM, or `None` for integer operands and for a
/// step the reference kernel must reject (it then says why).
pub fn try_conv(inst: &InstData, ins: &[Tensor], out: &TensorType, threads: usize, blas: Option<&crate::blas::Blas>) -> Option<Tensor> {
    if inst.op != Opcode::Convolution || ins.len() != 2 {
        return None;
    }
    let (x, k) = (&ins[0], &ins[1]);
    let d = x.dtype();
    if !d.is_float() || !out.dtype.is_float() || k.dtype() != d {
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
    if whole {
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
    fn canon<'t>(t: &'t Tensor, perm: &[usize], ct: DType) -> Option<Cow<'t, Tensor>> {
        let t = if perm.iter().enumerate().all(|(i, &p)| i == p) { Cow::Borrowed(t) } else { Cow::Owned(pjc_tensor::transpose(t, perm).ok()?) };
        if t.dtype() == ct {
            Some(t)
        } else {
            pjc_tensor::convert(&t, ct).ok().map(Cow::Owned)
        }
    }
    let (cx, ck) = (canon(x, &px, ct)?, canon(k, &pk, ct)?);
    let mut canon_out: Vec<usize> = vec![g.out_batch];
    canon_out.extend(&g.out_sp);
    canon_out.push(g.cout);
    let data = match (&cx.data, &ck.data) {
        (Buf::F32(xv), Buf::F32(kv)) => Buf::F32(im2col_gemm(&g, xv, kv, 1.0f32, threads, blas)),
        (Buf::F64(xv), Buf::F64(kv)) => Buf::F64(im2col_gemm(&g, xv, kv, 1.0f64, threads, blas)),
        _ => return None,
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
        pjc_tensor::convert(&result, out.dtype).ok()
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

/// Input position read by output position `o` at kernel tap `t` along
/// spatial dim `s`, or `None` for padding and dilation holes.
fn tap(g: &ConvGeometry, s: usize, o: usize, t: usize) -> Option<usize> {
    let q = (o * g.strides[s] + t * g.rhs_dil[s]) as i64 - g.padding[s].0;
    let ld = g.lhs_dil[s] as i64;
    (q >= 0 && q % ld == 0 && ((q / ld) as usize) < g.in_sp[s]).then(|| (q / ld) as usize)
}

fn im2col_gemm<T: crate::blas::Element + Default + Send + Sync>(g: &ConvGeometry, x: &[T], w: &[T], one: T, threads: usize, blas: Option<&crate::blas::Blas>) -> Vec<T> {
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
        return vec![T::default(); rows * g.cout];
    }
    let gemm = |m: usize, lhs: &[T], lhs_rs: usize, gi: usize| {
        // m x (taps·I) times the group's kernel columns: w[(kp·I + i)·O + gi·og + j].
        let l = DotLayout {
            batch: vec![],
            m,
            k: cols,
            n: og,
            lhs: GemmOperand { transpose: None, batch_strides: vec![], rs: lhs_rs, cs: 1 },
            rhs: GemmOperand { transpose: None, batch_strides: vec![], rs: g.cout, cs: 1 },
        };
        gemm_batched(&l, lhs, &w[gi * og..], one, threads, blas)
    };
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
    let mut out = vec![T::default(); rows * g.cout];
    let mut place = |r0: usize, y: &[T], gi: usize| {
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
    let task = |b0: usize, out: &mut [T], patch: &mut Vec<T>| {
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
            unsafe {
                gemm::gemm(
                    nr,
                    og,
                    cols,
                    out.as_mut_ptr().add(gi * og),
                    1,
                    g.cout as isize,
                    false,
                    patch.as_ptr(),
                    1,
                    cols as isize,
                    w.as_ptr().add(gi * og),
                    1,
                    g.cout as isize,
                    T::default(),
                    one,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
            }
        }
    };
    let mut out = vec![T::default(); rows * g.cout];
    match crate::gemm::pool(threads).filter(|_| threads > 1 && rows > block) {
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

    fn operand(d: DType, shape: &[usize], seed: &mut u64) -> Tensor {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n)
            .map(|_| {
                *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((*seed >> 11) % 17) as f64 * 0.5 - 4.0
            })
            .collect();
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
            for (d, od) in [(DType::F32, DType::F32), (DType::F64, DType::F64), (DType::BF16, DType::BF16), (DType::F16, DType::F32)] {
                let (x, k) = (operand(d, case.x, &mut seed), operand(d, case.k, &mut seed));
                let dims = pjc_tensor::parse_conv_dims(case.dims, case.x.len()).unwrap();
                let us = |v: &[i64]| v.iter().map(|&a| a as usize).collect::<Vec<_>>();
                let want = pjc_tensor::convolution(&x, &k, &dims, &us(case.strides), case.padding, &us(case.lhs_dil), &us(case.rhs_dil), case.fgc as usize, case.bgc as usize, od).unwrap();
                let out = TensorType::new(od, want.shape.iter().map(|&s| s as u64).collect());
                for (threads, blas) in [(1, None), (2, crate::blas::openblas())] {
                    let got = try_conv(&inst(case), &[x.clone(), k.clone()], &out, threads, blas).unwrap_or_else(|| panic!("{} fell off the GEMM path", case.dims));
                    // Exactly representable values: sums are exact in f32, so GEMM and
                    // the reference agree bit for bit after one rounding.
                    close(&want, &got, Tolerance::EXACT).unwrap_or_else(|e| panic!("{} {:?} x {:?} ({d} -> {od}): {e}", case.dims, case.x, case.k));
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
    fn integer_and_malformed_convolutions_are_left_to_the_reference() {
        let case = c("b0f_0io->b0f", &[1, 3, 1], &[2, 1, 1]);
        let x = Tensor::new(vec![1, 3, 1], Buf::I32(vec![1, 2, 3]));
        let k = Tensor::new(vec![2, 1, 1], Buf::I32(vec![1, 1]));
        assert!(try_conv(&inst(&case), &[x, k], &TensorType::new(DType::I32, vec![1, 2, 1]), 1, None).is_none());
        let x = Tensor::new(vec![1, 3, 1], Buf::F32(vec![1.0, 2.0, 3.0]));
        let k = Tensor::new(vec![5, 1, 1], Buf::F32(vec![1.0; 5]));
        assert!(try_conv(&inst(&case), &[x, k], &TensorType::new(DType::F32, vec![1, 1, 1]), 1, None).is_none());
    }
}
