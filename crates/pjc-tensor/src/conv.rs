//! `convolution` (spec section 7, StableHLO semantics): the dimension-label
//! string parser, the output-shape rule the verifier reuses, and the reference
//! kernel.
//!
//! Semantics (StableHLO `convolution`, a cross-correlation: the kernel is not
//! flipped). Per spatial dim, the input is dilated by `lhs_dilation` (holes
//! between elements), then padded by `padding` (lo, hi; negative values cut);
//! the kernel is dilated by `rhs_dilation`; the window moves by `window_strides`.
//! Output size = (padded - dilated_kernel) / stride + 1, and must be positive.
//! With `feature_group_count` G the input features split into G blocks of the
//! kernel's input-feature size and the kernel's output features into G blocks;
//! output feature block g sees input feature block g. With
//! `batch_group_count` G the input batch splits into G blocks (output batch is
//! one block) and output feature block g sees batch block g.
//!
//! Strategy: input, kernel and output are permuted to canonical layouts
//! ([N, spatial.., C], [spatial.., I, O], [N', spatial.., O]) so that the inner
//! loop runs over contiguous output features; per spatial dim a table maps
//! (output position, kernel tap) to an input position or "zero" (padding or a
//! dilation hole). Floats accumulate in f64, integers in i128 (wrapping), and
//! round or wrap once to the result dtype.

use std::fmt;

use crate::dot::{check_result_class, gather, transpose_index, Mac};
use crate::tensor::invalid;
use crate::{strides, Buf, Lanes, Tensor, TensorError};
use pjc_dialects::DType;

/// Where each role sits in the input, kernel and output dimension lists, as
/// parsed from XLA's label string ("b01f_01io->b01f"). `*_spatial[k]` is the
/// position of spatial label `k` in that part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvDims {
    pub input_batch: usize,
    pub input_feature: usize,
    pub input_spatial: Vec<usize>,
    pub kernel_input_feature: usize,
    pub kernel_output_feature: usize,
    pub kernel_spatial: Vec<usize>,
    pub output_batch: usize,
    pub output_feature: usize,
    pub output_spatial: Vec<usize>,
}

impl ConvDims {
    /// Number of spatial dimensions.
    pub fn spatial_rank(&self) -> usize {
        self.input_spatial.len()
    }
}

/// Prints the label string back (`b01f_01io->b01f`).
impl fmt::Display for ConvDims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn part(a: (usize, char), b: (usize, char), spatial: &[usize]) -> String {
            let mut labels = vec![' '; spatial.len() + 2];
            labels[a.0] = a.1;
            labels[b.0] = b.1;
            for (k, &p) in spatial.iter().enumerate() {
                labels[p] = char::from_digit(k as u32, 10).unwrap_or('?');
            }
            labels.into_iter().collect()
        }
        write!(
            f,
            "{}_{}->{}",
            part((self.input_batch, 'b'), (self.input_feature, 'f'), &self.input_spatial),
            part((self.kernel_input_feature, 'i'), (self.kernel_output_feature, 'o'), &self.kernel_spatial),
            part((self.output_batch, 'b'), (self.output_feature, 'f'), &self.output_spatial),
        )
    }
}

/// One part of the label string: positions of its two letters and of its
/// spatial digits (by digit).
fn parse_part(s: &str, what: &str, labels: &str, letters: [(char, &str); 2]) -> Result<(usize, usize, Vec<usize>), String> {
    let mut pos: [Option<usize>; 2] = [None, None];
    let mut digits: Vec<Option<usize>> = vec![None; 10];
    let mut n_spatial = 0;
    for (p, ch) in labels.chars().enumerate() {
        if let Some(li) = letters.iter().position(|&(c, _)| c == ch) {
            if pos[li].is_some() {
                return Err(format!("convolution dims \"{s}\": label '{ch}' appears twice in the {what} labels \"{labels}\""));
            }
            pos[li] = Some(p);
        } else if let Some(k) = ch.to_digit(10) {
            let k = k as usize;
            if digits[k].is_some() {
                return Err(format!("convolution dims \"{s}\": spatial label '{ch}' appears twice in the {what} labels \"{labels}\""));
            }
            digits[k] = Some(p);
            n_spatial += 1;
        } else {
            return Err(format!(
                "convolution dims \"{s}\": unexpected label '{ch}' in the {what} labels \"{labels}\" (expected '{}' ({}), '{}' ({}) or a spatial digit 0-9)",
                letters[0].0, letters[0].1, letters[1].0, letters[1].1
            ));
        }
    }
    let mut found = [0usize; 2];
    for i in 0..2 {
        match pos[i] {
            Some(p) => found[i] = p,
            None => {
                return Err(format!(
                    "convolution dims \"{s}\": the {what} labels \"{labels}\" have no '{}' ({}) label",
                    letters[i].0, letters[i].1
                ))
            }
        }
    }
    let mut spatial = Vec::with_capacity(n_spatial);
    for (k, d) in digits.iter().enumerate().take(n_spatial) {
        match d {
            Some(p) => spatial.push(*p),
            None => {
                return Err(format!(
                    "convolution dims \"{s}\": the {what} labels \"{labels}\" have {n_spatial} spatial dims but no label '{k}' (spatial labels must be 0, 1, ... in some order)"
                ))
            }
        }
    }
    Ok((found[0], found[1], spatial))
}

/// Parses XLA's convolution dimension-label string, e.g. "b01f_01io->b01f",
/// "bf01_oi01->bf01" or "f01b_i01o->01bf". Input labels: `b` batch, `f`
/// feature; kernel labels: `i` input feature, `o` output feature; output labels:
/// `b`, `f`; digits name spatial dims (digit k is spatial dim k in every part).
/// Each part names each of its labels once and the same spatial dims; the input
/// part must have `lhs_rank` labels. Errors are messages for the user.
pub fn parse_conv_dims(s: &str, lhs_rank: usize) -> Result<ConvDims, String> {
    let form = || {
        format!("convolution dims \"{s}\": expected INPUT_KERNEL->OUTPUT labels, e.g. \"b01f_01io->b01f\"")
    };
    let (lhs, out) = s.split_once("->").ok_or_else(form)?;
    if out.contains("->") {
        return Err(form());
    }
    let (inp, ker) = lhs.split_once('_').ok_or_else(form)?;
    if ker.contains('_') || out.contains('_') {
        return Err(form());
    }
    let (ib, ifeat, isp) = parse_part(s, "input", inp, [('b', "batch"), ('f', "feature")])?;
    let (ki, ko, ksp) = parse_part(s, "kernel", ker, [('i', "input feature"), ('o', "output feature")])?;
    let (ob, ofeat, osp) = parse_part(s, "output", out, [('b', "batch"), ('f', "feature")])?;
    for (what, sp) in [("kernel", &ksp), ("output", &osp)] {
        if sp.len() != isp.len() {
            return Err(format!(
                "convolution dims \"{s}\": the input labels name {} spatial dims but the {what} labels name {}",
                isp.len(),
                sp.len()
            ));
        }
    }
    if isp.len() + 2 != lhs_rank {
        return Err(format!(
            "convolution dims \"{s}\": the input labels \"{inp}\" name {} dimensions but the input has rank {lhs_rank}",
            isp.len() + 2
        ));
    }
    Ok(ConvDims {
        input_batch: ib,
        input_feature: ifeat,
        input_spatial: isp,
        kernel_input_feature: ki,
        kernel_output_feature: ko,
        kernel_spatial: ksp,
        output_batch: ob,
        output_feature: ofeat,
        output_spatial: osp,
    })
}

/// A convolution's geometry, checked: sizes in canonical order (batch,
/// spatial dims, feature), shared by the reference kernel, the host's
/// im2col + GEMM and the planner's device kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvGeometry {
    /// Input batch and feature sizes.
    pub batch: usize,
    pub feat: usize,
    /// Input, kernel and output spatial sizes.
    pub in_sp: Vec<usize>,
    pub k_sp: Vec<usize>,
    /// Kernel input features (per group) and output features.
    pub cin_k: usize,
    pub cout: usize,
    /// Output batch (input batch / batch_group_count).
    pub out_batch: usize,
    pub out_sp: Vec<usize>,
    pub fgc: usize,
    pub bgc: usize,
    pub strides: Vec<usize>,
    pub padding: Vec<(i64, i64)>,
    pub lhs_dil: Vec<usize>,
    pub rhs_dil: Vec<usize>,
    /// Result shape in the output label order.
    pub out_shape: Vec<usize>,
}

/// An attribute list with one entry per spatial dim, or empty for the default.
fn per_dim<T: Copy>(name: &str, v: &[T], n: usize, default: T) -> Result<Vec<T>, String> {
    if v.is_empty() {
        Ok(vec![default; n])
    } else if v.len() == n {
        Ok(v.to_vec())
    } else {
        Err(format!("convolution: {name} has {} entries but there are {n} spatial dimensions", v.len()))
    }
}

/// The geometry of a convolution, or a message for every inconsistency (see
/// [`conv_output_shape`]).
#[allow(clippy::too_many_arguments)]
pub fn conv_geometry(
    x_shape: &[usize],
    k_shape: &[usize],
    dims: &ConvDims,
    window_strides: &[usize],
    padding: &[(i64, i64)],
    lhs_dilation: &[usize],
    rhs_dilation: &[usize],
    fgc: usize,
    bgc: usize,
) -> Result<ConvGeometry, String> {
    let n = dims.spatial_rank();
    let all_pos = |batch: usize, feat: usize, sp: &[usize]| {
        let mut v: Vec<usize> = sp.to_vec();
        v.push(batch);
        v.push(feat);
        v.sort_unstable();
        v == (0..n + 2).collect::<Vec<_>>()
    };
    if dims.kernel_spatial.len() != n
        || dims.output_spatial.len() != n
        || !all_pos(dims.input_batch, dims.input_feature, &dims.input_spatial)
        || !all_pos(dims.kernel_input_feature, dims.kernel_output_feature, &dims.kernel_spatial)
        || !all_pos(dims.output_batch, dims.output_feature, &dims.output_spatial)
    {
        return Err(format!("convolution: inconsistent dimension numbers {dims:?}"));
    }
    for (what, shape) in [("input", x_shape), ("kernel", k_shape)] {
        if shape.len() != n + 2 {
            return Err(format!(
                "convolution: the {what} has rank {} but dims \"{dims}\" describe rank {}",
                shape.len(),
                n + 2
            ));
        }
    }
    let strides = per_dim("window_strides", window_strides, n, 1)?;
    let padding = per_dim("padding", padding, n, (0, 0))?;
    let lhs_dil = per_dim("lhs_dilation", lhs_dilation, n, 1)?;
    let rhs_dil = per_dim("rhs_dilation", rhs_dilation, n, 1)?;
    for (name, v) in [("window_strides", &strides), ("lhs_dilation", &lhs_dil), ("rhs_dilation", &rhs_dil)] {
        if v.contains(&0) {
            return Err(format!("convolution: {name} entries must be positive, got {v:?}"));
        }
    }
    if fgc == 0 {
        return Err("convolution: feature_group_count must be positive".into());
    }
    if bgc == 0 {
        return Err("convolution: batch_group_count must be positive".into());
    }
    if fgc > 1 && bgc > 1 {
        return Err(format!(
            "convolution: feature_group_count {fgc} and batch_group_count {bgc} cannot both exceed 1"
        ));
    }
    let batch = x_shape[dims.input_batch];
    let feat = x_shape[dims.input_feature];
    let cin_k = k_shape[dims.kernel_input_feature];
    let cout = k_shape[dims.kernel_output_feature];
    if feat != cin_k * fgc {
        return Err(format!(
            "convolution: input feature dimension {feat} is not kernel input feature {cin_k} × feature_group_count {fgc}"
        ));
    }
    if cout % fgc != 0 {
        return Err(format!(
            "convolution: kernel output feature dimension {cout} is not divisible by feature_group_count {fgc}"
        ));
    }
    if batch % bgc != 0 {
        return Err(format!(
            "convolution: input batch dimension {batch} is not divisible by batch_group_count {bgc}"
        ));
    }
    if cout % bgc != 0 {
        return Err(format!(
            "convolution: kernel output feature dimension {cout} is not divisible by batch_group_count {bgc}"
        ));
    }
    let in_sp: Vec<usize> = dims.input_spatial.iter().map(|&p| x_shape[p]).collect();
    let k_sp: Vec<usize> = dims.kernel_spatial.iter().map(|&p| k_shape[p]).collect();
    let mut out_sp = Vec::with_capacity(n);
    for k in 0..n {
        let dilated = |size: usize, dil: usize| if size == 0 { 0 } else { (size as i64 - 1) * dil as i64 + 1 };
        let padded = dilated(in_sp[k], lhs_dil[k]) + padding[k].0 + padding[k].1;
        let window = dilated(k_sp[k], rhs_dil[k]);
        if padded < window || padded <= 0 {
            return Err(format!(
                "convolution: spatial dimension {k} has no output: the padded (and dilated) input size {padded} is smaller than the dilated kernel size {window}"
            ));
        }
        out_sp.push(((padded - window) / strides[k] as i64 + 1) as usize);
    }
    let out_batch = batch / bgc;
    let mut out_shape = vec![0; n + 2];
    out_shape[dims.output_batch] = out_batch;
    out_shape[dims.output_feature] = cout;
    for k in 0..n {
        out_shape[dims.output_spatial[k]] = out_sp[k];
    }
    Ok(ConvGeometry {
        batch,
        feat,
        in_sp,
        k_sp,
        cin_k,
        cout,
        out_batch,
        out_sp,
        fgc,
        bgc,
        strides,
        padding,
        lhs_dil,
        rhs_dil,
        out_shape,
    })
}

/// Result shape of a convolution (in the output label order), or a message
/// for every inconsistency: ranks, attribute lengths, zero strides/dilations,
/// group counts, feature/batch sizes, and an empty (non-positive) output
/// spatial size. Empty attribute lists mean the defaults (1s, zero padding).
#[allow(clippy::too_many_arguments)]
pub fn conv_output_shape(
    x_shape: &[usize],
    k_shape: &[usize],
    dims: &ConvDims,
    window_strides: &[usize],
    padding: &[(i64, i64)],
    lhs_dilation: &[usize],
    rhs_dilation: &[usize],
    fgc: usize,
    bgc: usize,
) -> Result<Vec<usize>, String> {
    conv_geometry(x_shape, k_shape, dims, window_strides, padding, lhs_dilation, rhs_dilation, fgc, bgc).map(|g| g.out_shape)
}

const HOLE: usize = usize::MAX;

/// Per spatial dim: table[o * K + k] = input position read by output position o
/// at kernel tap k, or HOLE for padding and lhs-dilation holes (zeros that
/// still multiply the kernel, so non-finite kernel values give NaN as in
/// StableHLO).
fn tap_tables(g: &ConvGeometry) -> Vec<Vec<usize>> {
    (0..g.in_sp.len())
        .map(|d| {
            let (os, ks) = (g.out_sp[d], g.k_sp[d]);
            let mut t = Vec::with_capacity(os * ks);
            for o in 0..os {
                for k in 0..ks {
                    // Position in the padded, dilated input, then in the dilated input.
                    let q = (o * g.strides[d] + k * g.rhs_dil[d]) as i64 - g.padding[d].0;
                    let ld = g.lhs_dil[d] as i64;
                    let ok = q >= 0 && q % ld == 0 && ((q / ld) as usize) < g.in_sp[d];
                    t.push(if ok { (q / ld) as usize } else { HOLE });
                }
            }
            t
        })
        .collect()
}

/// out[ob, opos, o] over canonical x [N, S.., C] and w [K.., I, O].
fn conv_core<T: Mac>(x: &[T], w: &[T], g: &ConvGeometry, tabs: &[Vec<usize>]) -> Vec<T> {
    let n = g.in_sp.len();
    let isz: usize = g.in_sp.iter().product();
    let osz: usize = g.out_sp.iter().product();
    let ksz: usize = g.k_sp.iter().product();
    let in_st = strides(&g.in_sp);
    let out_st = strides(&g.out_sp);
    let k_st = strides(&g.k_sp);
    let groups = g.fgc * g.bgc;
    let og = g.cout / groups;
    let (cout, cin_k, c) = (g.cout, g.cin_k, g.feat);
    let mut out = vec![T::ZERO; g.out_batch * osz * cout];
    if og == 0 || cin_k == 0 {
        return out;
    }
    let mut kidx = Vec::with_capacity(ksz * n);
    for kp in 0..ksz {
        for d in 0..n {
            kidx.push(kp / k_st[d] % g.k_sp[d]);
        }
    }
    let mut oidx = vec![0usize; n];
    for ob in 0..g.out_batch {
        for op in 0..osz {
            for d in 0..n {
                oidx[d] = op / out_st[d] % g.out_sp[d];
            }
            let orow = &mut out[(ob * osz + op) * cout..(ob * osz + op + 1) * cout];
            for kp in 0..ksz {
                let mut lin = 0;
                let mut hole = false;
                for d in 0..n {
                    let p = tabs[d][oidx[d] * g.k_sp[d] + kidx[kp * n + d]];
                    if p == HOLE {
                        hole = true;
                        break;
                    }
                    lin += p * in_st[d];
                }
                for gi in 0..groups {
                    let oslice = &mut orow[gi * og..(gi + 1) * og];
                    if hole {
                        // Padding and dilation holes are zeros that still meet the
                        // kernel (StableHLO pads, then convolves): 0 x inf is NaN.
                        for ci in 0..cin_k {
                            let wrow = &w[(kp * cin_k + ci) * cout + gi * og..][..og];
                            for (ov, &wv) in oslice.iter_mut().zip(wrow) {
                                *ov = T::mac(*ov, T::ZERO, wv);
                            }
                        }
                        continue;
                    }
                    let ib = if g.bgc > 1 { gi * g.out_batch + ob } else { ob };
                    let cbase = if g.fgc > 1 { gi * cin_k } else { 0 };
                    let xrow = &x[(ib * isz + lin) * c + cbase..][..cin_k];
                    for (ci, &xv) in xrow.iter().enumerate() {
                        let wrow = &w[(kp * cin_k + ci) * cout + gi * og..][..og];
                        for (ov, &wv) in oslice.iter_mut().zip(wrow) {
                            *ov = T::mac(*ov, xv, wv);
                        }
                    }
                }
            }
        }
    }
    out
}

/// `convolution %x, %k {dims, window_strides, padding, lhs_dilation,
/// rhs_dilation, feature_group_count, batch_group_count}` with StableHLO
/// semantics (see the module doc). Operands share one dtype; `out` is of the
/// same class and may be wider. Empty attribute lists mean the defaults.
#[allow(clippy::too_many_arguments)]
pub fn convolution(
    x: &Tensor,
    k: &Tensor,
    dims: &ConvDims,
    window_strides: &[usize],
    padding: &[(i64, i64)],
    lhs_dilation: &[usize],
    rhs_dilation: &[usize],
    feature_group_count: usize,
    batch_group_count: usize,
    out: DType,
) -> Result<Tensor, TensorError> {
    if x.dtype() != k.dtype() {
        return invalid(format!("convolution: operand dtypes differ ({} and {})", x.dtype(), k.dtype()));
    }
    check_result_class("convolution", x.dtype(), out)?;
    let g = conv_geometry(
        &x.shape,
        &k.shape,
        dims,
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        feature_group_count,
        batch_group_count,
    )
    .map_err(TensorError::Invalid)?;
    debug_assert_eq!(g.batch, x.shape[dims.input_batch]);
    let n = dims.spatial_rank();
    let mut perm_x = vec![dims.input_batch];
    perm_x.extend(&dims.input_spatial);
    perm_x.push(dims.input_feature);
    let mut perm_k = dims.kernel_spatial.clone();
    perm_k.push(dims.kernel_input_feature);
    perm_k.push(dims.kernel_output_feature);
    let ix = transpose_index(&x.shape, &perm_x);
    let ik = transpose_index(&k.shape, &perm_k);
    let tabs = tap_tables(&g);
    let canon = match (x.data.lanes(), k.data.lanes()) {
        (Lanes::F(a), Lanes::F(b)) => Lanes::F(conv_core(&gather(&a, &ix), &gather(&b, &ik), &g, &tabs)),
        (Lanes::I(a), Lanes::I(b)) => Lanes::I(conv_core(&gather(&a, &ix), &gather(&b, &ik), &g, &tabs)),
        (Lanes::P(a), Lanes::P(b)) => Lanes::P(conv_core(&gather(&a, &ix), &gather(&b, &ik), &g, &tabs)),
        _ => return invalid("convolution: operand dtypes differ"),
    };
    // Canonical [N', S'.., O] to the output label order.
    let mut canon_shape = vec![g.out_batch];
    canon_shape.extend(&g.out_sp);
    canon_shape.push(g.cout);
    let mut perm_out = vec![0; n + 2];
    perm_out[dims.output_batch] = 0;
    perm_out[dims.output_feature] = n + 1;
    for (kk, &p) in dims.output_spatial.iter().enumerate() {
        perm_out[p] = 1 + kk;
    }
    let io = transpose_index(&canon_shape, &perm_out);
    let lanes = match canon {
        Lanes::F(v) => Lanes::F(gather(&v, &io)),
        Lanes::I(v) => Lanes::I(gather(&v, &io)),
        Lanes::P(v) => Lanes::P(gather(&v, &io)),
    };
    Ok(Tensor::new(g.out_shape, Buf::from_lanes(out, lanes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(shape: &[usize], data: Buf) -> Tensor {
        Tensor::new(shape.to_vec(), data)
    }

    fn f64s(t: &Tensor) -> Vec<f64> {
        match t.data.lanes() {
            Lanes::F(v) => v,
            Lanes::I(v) => v.iter().map(|&x| x as f64).collect(),
            Lanes::P(_) => panic!(),
        }
    }

    fn dims(s: &str, rank: usize) -> ConvDims {
        parse_conv_dims(s, rank).unwrap()
    }

    #[test]
    fn parse_labels() {
        let d = dims("b01f_01io->b01f", 4);
        assert_eq!((d.input_batch, d.input_feature, d.input_spatial.clone()), (0, 3, vec![1, 2]));
        assert_eq!((d.kernel_input_feature, d.kernel_output_feature, d.kernel_spatial.clone()), (2, 3, vec![0, 1]));
        assert_eq!((d.output_batch, d.output_feature, d.output_spatial.clone()), (0, 3, vec![1, 2]));
        assert_eq!(d.to_string(), "b01f_01io->b01f");
        let d = dims("f01b_i01o->01bf", 4);
        assert_eq!((d.input_batch, d.input_feature), (3, 0));
        assert_eq!((d.kernel_input_feature, d.kernel_output_feature), (0, 3));
        assert_eq!((d.output_batch, d.output_feature, d.output_spatial.clone()), (2, 3, vec![0, 1]));
        assert_eq!(d.to_string(), "f01b_i01o->01bf");
        let d = dims("bf10_oi01->bf01", 4);
        assert_eq!(d.input_spatial, vec![3, 2]);
        assert_eq!(d.to_string(), "bf10_oi01->bf01");
        assert_eq!(dims("bf_io->bf", 2).spatial_rank(), 0);
    }

    #[test]
    fn parse_errors_are_specific() {
        let e = |s: &str, r: usize| parse_conv_dims(s, r).unwrap_err();
        assert!(e("b01f01io->b01f", 4).contains("expected INPUT_KERNEL->OUTPUT"));
        assert!(e("b01f_01io", 4).contains("expected INPUT_KERNEL->OUTPUT"));
        assert!(e("b01f_01io->b01f->b01f", 4).contains("expected INPUT_KERNEL->OUTPUT"));
        assert!(e("bb1f_01io->b01f", 4).contains("label 'b' appears twice in the input labels"));
        assert!(e("b00f_01io->b01f", 4).contains("spatial label '0' appears twice"));
        assert!(e("b01x_01io->b01f", 4).contains("unexpected label 'x' in the input labels"));
        assert!(e("b01f_01if->b01f", 4).contains("unexpected label 'f' in the kernel labels"));
        assert!(e("b01_01io->b01f", 3).contains("have no 'f' (feature) label"));
        assert!(e("b02f_01io->b01f", 4).contains("no label '1'"));
        assert!(e("b01f_0io->b01f", 4).contains("the input labels name 2 spatial dims but the kernel labels name 1"));
        assert!(e("b01f_01io->b01f", 3).contains("name 4 dimensions but the input has rank 3"));
    }

    /// Shorthand for a 1-D "b0f" conv of one batch and one feature.
    fn conv1(x: &[f64], k: &[f64], s: usize, pad: (i64, i64), ld: usize, rd: usize) -> Vec<f64> {
        let xt = t(&[1, x.len(), 1], Buf::F64(x.to_vec()));
        let kt = t(&[k.len(), 1, 1], Buf::F64(k.to_vec()));
        let r = convolution(&xt, &kt, &dims("b0f_0io->b0f", 3), &[s], &[pad], &[ld], &[rd], 1, 1, DType::F64).unwrap();
        f64s(&r)
    }

    #[test]
    fn one_d_by_hand() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let k = [1.0, 10.0, 100.0];
        // out[i] = x[i] + 10 x[i+1] + 100 x[i+2] (no kernel flip).
        assert_eq!(conv1(&x, &k, 1, (0, 0), 1, 1), vec![321.0, 432.0, 543.0]);
        // Padded [0,1,2,3,4,5,0], stride 2: windows at 0, 2, 4.
        assert_eq!(conv1(&x, &k, 2, (1, 1), 1, 1), vec![210.0, 432.0, 54.0]);
        // Negative padding cuts: [2,3,4,5].
        assert_eq!(conv1(&x, &k, 1, (-1, 0), 1, 1), vec![432.0, 543.0]);
        assert_eq!(conv1(&x, &k, 1, (0, -1), 1, 1), vec![321.0, 432.0]);
        // lhs_dilation 2: [1,0,2,0,3,0,4,0,5].
        assert_eq!(conv1(&x, &k, 1, (0, 0), 2, 1), vec![201.0, 20.0, 302.0, 30.0, 403.0, 40.0, 504.0]);
        // rhs_dilation 2: kernel taps at 0, 2, 4.
        assert_eq!(conv1(&x, &k, 1, (0, 0), 1, 2), vec![531.0]);
        // Everything at once: dilated [1,0,2,0,3,0,4,0,5] padded by (2,-1) ->
        // [0,0,1,0,2,0,3,0,4,0]; kernel taps 0,2,4; stride 3: windows at 0, 3.
        assert_eq!(conv1(&x, &k, 3, (2, -1), 2, 2), vec![0.0 + 10.0 + 200.0, 0.0 + 0.0 + 0.0]);
    }

    #[test]
    fn two_d_by_hand_and_layouts() {
        // 3x3 input 1..9, 2x2 kernel [[1,2],[3,4]].
        let x = t(&[1, 3, 3, 1], Buf::F32((1..=9).map(|v| v as f32).collect()));
        let k = t(&[2, 2, 1, 1], Buf::F32(vec![1.0, 2.0, 3.0, 4.0]));
        let r = convolution(&x, &k, &dims("b01f_01io->b01f", 4), &[], &[], &[], &[], 1, 1, DType::F32).unwrap();
        assert_eq!(r.shape, vec![1, 2, 2, 1]);
        assert_eq!(r.data, Buf::F32(vec![37.0, 47.0, 67.0, 77.0]));
        // Same data in NCHW / OIHW, output NHWC-ish "b01f" and transposed "bf10".
        let x2 = t(&[1, 1, 3, 3], x.data.clone());
        let k2 = t(&[1, 1, 2, 2], k.data.clone());
        let r = convolution(&x2, &k2, &dims("bf01_oi01->bf01", 4), &[1, 1], &[(0, 0), (0, 0)], &[1, 1], &[1, 1], 1, 1, DType::F64).unwrap();
        assert_eq!(r.data, Buf::F64(vec![37.0, 47.0, 67.0, 77.0]));
        let r = convolution(&x2, &k2, &dims("bf01_oi01->bf10", 4), &[], &[], &[], &[], 1, 1, DType::F32).unwrap();
        assert_eq!(r.data, Buf::F32(vec![37.0, 67.0, 47.0, 77.0]));
        // Stride 2 with padding 1 on both sides: padded 5x5, windows at 0 and 2.
        let r = convolution(&x, &k, &dims("b01f_01io->b01f", 4), &[2, 2], &[(1, 1), (1, 1)], &[], &[], 1, 1, DType::F32).unwrap();
        // (0,0): only x[0][0]*4 = 4; (0,1): x[0][1]*3 + x[0][2]*4 = 6+12;
        // (1,0): x[1][0]*2 + x[2][0]*4 = 8+28; (1,1): 5+12+24+36.
        assert_eq!(r.data, Buf::F32(vec![4.0, 18.0, 36.0, 77.0]));
    }

    #[test]
    fn depthwise_and_batch_groups_by_hand() {
        // Depthwise: 2 features, feature_group_count 2, kernel I=1, O=2.
        // feature 0 = [1,2,3] with kernel [1,1]; feature 1 = [10,20,30] with [1,-1].
        let x = t(&[1, 3, 2], Buf::I32(vec![1, 10, 2, 20, 3, 30]));
        let k = t(&[2, 1, 2], Buf::I32(vec![1, 1, 1, -1]));
        let d = dims("b0f_0io->b0f", 3);
        let r = convolution(&x, &k, &d, &[], &[], &[], &[], 2, 1, DType::I32).unwrap();
        assert_eq!(r.shape, vec![1, 2, 2]);
        assert_eq!(r.data, Buf::I32(vec![3, -10, 5, -10]));
        // Without groups the kernel must have I = 2.
        assert!(convolution(&x, &k, &d, &[], &[], &[], &[], 1, 1, DType::I32).is_err());
        // Batch groups: batch 0 = [1,2,3], batch 1 = [10,20,30], one feature;
        // output feature 0 uses batch 0 and kernel o0, feature 1 batch 1 and o1.
        let x = t(&[2, 3, 1], Buf::I32(vec![1, 2, 3, 10, 20, 30]));
        let k = t(&[2, 1, 2], Buf::I32(vec![1, 1, 1, -1]));
        let r = convolution(&x, &k, &d, &[], &[], &[], &[], 1, 2, DType::I64).unwrap();
        assert_eq!(r.shape, vec![1, 2, 2]);
        assert_eq!(r.data, Buf::I64(vec![3, -10, 5, -10]));
    }

    #[test]
    fn shape_errors() {
        let d = dims("b01f_01io->b01f", 4);
        let e = conv_output_shape(&[1, 5, 5, 6], &[3, 3, 4, 8], &d, &[], &[], &[], &[], 2, 1).unwrap_err();
        assert_eq!(e, "convolution: input feature dimension 6 is not kernel input feature 4 × feature_group_count 2");
        assert!(conv_output_shape(&[1, 5, 5, 8], &[3, 3, 4, 6], &d, &[], &[], &[], &[], 2, 1).unwrap().len() == 4);
        assert!(conv_output_shape(&[1, 5, 5, 8], &[3, 3, 4, 7], &d, &[], &[], &[], &[], 2, 1).unwrap_err().contains("not divisible by feature_group_count"));
        assert!(conv_output_shape(&[3, 5, 5, 4], &[3, 3, 4, 8], &d, &[], &[], &[], &[], 1, 2).unwrap_err().contains("batch dimension 3"));
        assert!(conv_output_shape(&[4, 5, 5, 4], &[3, 3, 4, 7], &d, &[], &[], &[], &[], 1, 2).unwrap_err().contains("batch_group_count"));
        assert!(conv_output_shape(&[4, 5, 5, 4], &[3, 3, 2, 8], &d, &[], &[], &[], &[], 2, 2).unwrap_err().contains("cannot both"));
        assert!(conv_output_shape(&[1, 2, 5, 4], &[3, 3, 4, 8], &d, &[], &[], &[], &[], 1, 1).unwrap_err().contains("spatial dimension 0 has no output"));
        assert!(conv_output_shape(&[1, 5, 5, 4], &[3, 3, 4, 8], &d, &[], &[(-2, -1), (0, 0)], &[], &[], 1, 1).unwrap_err().contains("no output"));
        assert!(conv_output_shape(&[1, 5, 5, 4], &[3, 3, 4, 8], &d, &[1], &[], &[], &[], 1, 1).unwrap_err().contains("window_strides has 1 entries"));
        assert!(conv_output_shape(&[1, 5, 5, 4], &[3, 3, 4, 8], &d, &[0, 1], &[], &[], &[], 1, 1).unwrap_err().contains("positive"));
        assert!(conv_output_shape(&[1, 5, 5, 4], &[3, 3, 8], &d, &[], &[], &[], &[], 1, 1).unwrap_err().contains("kernel has rank 3"));
        assert!(conv_output_shape(&[1, 5, 5, 4], &[3, 3, 4, 8], &d, &[], &[], &[], &[], 0, 1).is_err());
        // 7x9 input, 3x2 kernel, stride (2,3), padding ((1,1),(0,-1)), lhs_dil (1,2), rhs_dil (2,1):
        // dim 0: padded 9, window 5 -> 3; dim 1: dilated 17, padded 16, window 2 -> 5.
        assert_eq!(
            conv_output_shape(&[2, 7, 9, 4], &[3, 2, 4, 5], &d, &[2, 3], &[(1, 1), (0, -1)], &[1, 2], &[2, 1], 1, 1).unwrap(),
            vec![2, 3, 5, 5]
        );
        let d = dims("f01b_i01o->01bf", 4);
        assert_eq!(conv_output_shape(&[2, 5, 5, 3], &[2, 3, 3, 4], &d, &[], &[], &[], &[], 1, 1).unwrap(), vec![3, 3, 3, 4]);
    }

    /// Independent reference for "bf01_oi01->bf01": builds the dilated, padded
    /// input and the dilated kernel explicitly, and applies the StableHLO
    /// definition of groups (split the operands, convolve, concatenate).
    #[allow(clippy::too_many_arguments)]
    fn naive_nchw(
        x: &[i64], xs: [usize; 4], w: &[i64], ws: [usize; 4], st: [usize; 2], pad: [(i64, i64); 2],
        ld: [usize; 2], rd: [usize; 2], fgc: usize, bgc: usize,
    ) -> (Vec<i64>, [usize; 4]) {
        let [n, c, h, wd] = xs;
        let [o, ci, kh, kw] = ws;
        // Dilate then pad the input.
        let dh = (h - 1) * ld[0] + 1;
        let dw = (wd - 1) * ld[1] + 1;
        let ph = (dh as i64 + pad[0].0 + pad[0].1) as usize;
        let pw = (dw as i64 + pad[1].0 + pad[1].1) as usize;
        let mut xp = vec![0i64; n * c * ph * pw];
        for b in 0..n {
            for f in 0..c {
                for yy in 0..ph {
                    for xx in 0..pw {
                        let sy = yy as i64 - pad[0].0;
                        let sx = xx as i64 - pad[1].0;
                        if sy >= 0 && sx >= 0 && (sy as usize) < dh && (sx as usize) < dw
                            && sy as usize % ld[0] == 0 && sx as usize % ld[1] == 0
                        {
                            xp[((b * c + f) * ph + yy) * pw + xx] =
                                x[((b * c + f) * h + sy as usize / ld[0]) * wd + sx as usize / ld[1]];
                        }
                    }
                }
            }
        }
        // Dilate the kernel.
        let dkh = (kh - 1) * rd[0] + 1;
        let dkw = (kw - 1) * rd[1] + 1;
        let mut wk = vec![0i64; o * ci * dkh * dkw];
        for a in 0..o {
            for b in 0..ci {
                for i in 0..kh {
                    for j in 0..kw {
                        wk[((a * ci + b) * dkh + i * rd[0]) * dkw + j * rd[1]] = w[((a * ci + b) * kh + i) * kw + j];
                    }
                }
            }
        }
        let oh = (ph - dkh) / st[0] + 1;
        let ow = (pw - dkw) / st[1] + 1;
        let on = n / bgc;
        let mut out = vec![0i64; on * o * oh * ow];
        let groups = fgc.max(bgc);
        let og = o / groups;
        for bo in 0..on {
            for of in 0..o {
                let grp = of / og;
                let b_in = if bgc > 1 { grp * on + bo } else { bo };
                for y in 0..oh {
                    for xx in 0..ow {
                        let mut s = 0i64;
                        for kc in 0..ci {
                            let f_in = if fgc > 1 { grp * ci + kc } else { kc };
                            for i in 0..dkh {
                                for j in 0..dkw {
                                    s += xp[((b_in * c + f_in) * ph + y * st[0] + i) * pw + xx * st[1] + j]
                                        * wk[((of * ci + kc) * dkh + i) * dkw + j];
                                }
                            }
                        }
                        out[((bo * o + of) * oh + y) * ow + xx] = s;
                    }
                }
            }
        }
        (out, [on, o, oh, ow])
    }

    fn vals(len: usize, seed: usize) -> Vec<i64> {
        (0..len).map(|i| ((i * 7 + seed * 13) % 11) as i64 - 5).collect()
    }

    #[test]
    fn general_2d_against_naive() {
        // (x shape NCHW, w shape OIHW, strides, padding, lhs_dil, rhs_dil, fgc, bgc)
        type Case = ([usize; 4], [usize; 4], [usize; 2], [(i64, i64); 2], [usize; 2], [usize; 2], usize, usize);
        let cases: Vec<Case> = vec![
            ([2, 3, 5, 6], [4, 3, 3, 2], [1, 1], [(0, 0), (0, 0)], [1, 1], [1, 1], 1, 1),
            ([2, 3, 7, 6], [4, 3, 3, 3], [2, 3], [(1, 2), (2, 0)], [1, 1], [1, 1], 1, 1),
            ([1, 2, 6, 6], [3, 2, 2, 3], [1, 2], [(-1, 1), (1, -2)], [1, 1], [1, 1], 1, 1),
            ([2, 2, 4, 3], [2, 2, 3, 2], [1, 1], [(1, 1), (0, 2)], [2, 3], [1, 1], 1, 1),
            ([2, 2, 7, 8], [2, 2, 2, 3], [2, 1], [(0, 1), (1, 0)], [1, 1], [3, 2], 1, 1),
            ([2, 4, 5, 5], [6, 2, 3, 2], [1, 2], [(1, 0), (0, 1)], [2, 1], [1, 2], 2, 1),
            ([2, 6, 5, 4], [6, 1, 2, 2], [1, 1], [(0, 0), (1, 1)], [1, 1], [1, 1], 6, 1),
            ([4, 3, 5, 5], [4, 3, 2, 3], [2, 1], [(1, 1), (0, 0)], [1, 2], [2, 1], 1, 2),
            ([6, 2, 4, 4], [6, 2, 3, 3], [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1], 1, 3),
        ];
        for (ci, (xs, ws, st, pad, ld, rd, fgc, bgc)) in cases.into_iter().enumerate() {
            let xv = vals(xs.iter().product(), ci);
            let wv = vals(ws.iter().product(), ci + 5);
            let (want, want_shape) = naive_nchw(&xv, xs, &wv, ws, st, pad, ld, rd, fgc, bgc);
            let d = dims("bf01_oi01->bf01", 4);
            let x = t(&xs, Buf::I64(xv.clone()));
            let w = t(&ws, Buf::I64(wv.clone()));
            let r = convolution(&x, &w, &d, &st, &pad, &ld, &rd, fgc, bgc, DType::I64).unwrap();
            assert_eq!(r.shape, want_shape.to_vec(), "case {ci}");
            assert_eq!(r.data, Buf::I64(want.clone()), "case {ci}");
            // Same in f32 with NHWC/HWIO layouts and output in "b01f".
            let xf = t(&[xs[0], xs[2], xs[3], xs[1]], Buf::F32(gather(&xv, &transpose_index(&xs, &[0, 2, 3, 1])).iter().map(|&v| v as f32).collect()));
            let wf = t(&[ws[2], ws[3], ws[1], ws[0]], Buf::F32(gather(&wv, &transpose_index(&ws, &[2, 3, 1, 0])).iter().map(|&v| v as f32).collect()));
            let d = dims("b01f_01io->b01f", 4);
            let r = convolution(&xf, &wf, &d, &st, &pad, &ld, &rd, fgc, bgc, DType::F32).unwrap();
            let ws4 = want_shape;
            let want_nhwc: Vec<f32> = gather(&want, &transpose_index(&ws4, &[0, 2, 3, 1])).iter().map(|&v| v as f32).collect();
            assert_eq!(r.shape, vec![ws4[0], ws4[2], ws4[3], ws4[1]], "case {ci}");
            assert_eq!(r.data, Buf::F32(want_nhwc), "case {ci}");
        }
    }

    #[test]
    fn kernel_gradient_label_order() {
        // Forward "b01f_01io->b01f": x [N=2, H=6, W=4, C=3], kernel 3x3, stride 2,
        // padding ((1,0),(0,1)) -> dy [2, 3, 2, O=4]. The kernel gradient
        // dw[kh,kw,c,o] = sum_{n,oh,ow} xpad[n, 2oh+kh, 2ow+kw, c] * dy[n,oh,ow,o]
        // is the conv "f01b_i01o->01bf" of x with dy, rhs_dilation = stride.
        let (n, h, w, c, o) = (2, 6, 4, 3, 4);
        let (oh, ow) = (3, 2);
        let xv: Vec<f64> = (0..n * h * w * c).map(|i| ((i * 5) % 9) as f64 - 4.0).collect();
        let dyv: Vec<f64> = (0..n * oh * ow * o).map(|i| ((i * 3) % 7) as f64 - 3.0).collect();
        let fwd = dims("b01f_01io->b01f", 4);
        let fwd_shape =
            conv_output_shape(&[n, h, w, c], &[3, 3, c, o], &fwd, &[2, 2], &[(1, 0), (0, 1)], &[], &[], 1, 1).unwrap();
        assert_eq!(fwd_shape, vec![n, oh, ow, o]);
        let x = t(&[n, h, w, c], Buf::F64(xv.clone()));
        let dy = t(&[n, oh, ow, o], Buf::F64(dyv.clone()));
        let d = dims("f01b_i01o->01bf", 4);
        let r = convolution(&x, &dy, &d, &[], &[(1, 0), (0, 1)], &[], &[2, 2], 1, 1, DType::F64).unwrap();
        assert_eq!(r.shape, vec![3, 3, c, o]);
        let xp = |b: usize, y: i64, xx: i64, f: usize| -> f64 {
            if y < 0 || xx < 0 || y >= h as i64 || xx >= w as i64 {
                0.0
            } else {
                xv[((b * h + y as usize) * w + xx as usize) * c + f]
            }
        };
        let mut want = vec![];
        for kh in 0..3 {
            for kw in 0..3 {
                for f in 0..c {
                    for of in 0..o {
                        let mut s = 0.0;
                        for b in 0..n {
                            for y in 0..oh {
                                for xx in 0..ow {
                                    s += xp(b, (2 * y + kh) as i64 - 1, (2 * xx + kw) as i64, f)
                                        * dyv[((b * oh + y) * ow + xx) * o + of];
                                }
                            }
                        }
                        want.push(s);
                    }
                }
            }
        }
        assert_eq!(r.data, Buf::F64(want));
    }

    #[test]
    fn bf16_to_f32_result_and_wrong_dtypes() {
        let x = t(&[1, 3, 1], Buf::from_f64(DType::BF16, &[1.0, 1.0 / 256.0, 1.0 / 256.0]));
        let k = t(&[3, 1, 1], Buf::from_f64(DType::BF16, &[1.0, 1.0, 1.0]));
        let d = dims("b0f_0io->b0f", 3);
        let r = convolution(&x, &k, &d, &[], &[], &[], &[], 1, 1, DType::F32).unwrap();
        assert_eq!(r.data, Buf::F32(vec![1.0 + 2.0 / 256.0]));
        let r = convolution(&x, &k, &d, &[], &[], &[], &[], 1, 1, DType::BF16).unwrap();
        assert_eq!(r.data, Buf::from_f64(DType::BF16, &[1.0 + 2.0 / 256.0]));
        let k32 = t(&[3, 1, 1], Buf::F32(vec![1.0; 3]));
        assert!(convolution(&x, &k32, &d, &[], &[], &[], &[], 1, 1, DType::F32).is_err());
        assert!(convolution(&x, &k, &d, &[], &[], &[], &[], 1, 1, DType::I32).is_err());
    }

    /// 8x32x32x16 input with a 3x3x16x32 kernel must be well under a second.
    /// Run with `cargo test -p pjc-tensor -- --ignored conv_speed`.
    #[test]
    #[ignore]
    fn conv_speed() {
        let x = t(&[8, 32, 32, 16], Buf::F32((0..8 * 32 * 32 * 16).map(|i| (i % 13) as f32).collect()));
        let k = t(&[3, 3, 16, 32], Buf::F32((0..3 * 3 * 16 * 32).map(|i| (i % 7) as f32).collect()));
        let start = std::time::Instant::now();
        let r = convolution(&x, &k, &dims("b01f_01io->b01f", 4), &[], &[(1, 1), (1, 1)], &[], &[], 1, 1, DType::F32)
            .unwrap();
        let dt = start.elapsed();
        eprintln!("8x32x32x16 * 3x3x16x32 conv: {dt:?}");
        assert_eq!(r.shape, vec![8, 32, 32, 32]);
        assert!(dt.as_secs_f64() < 1.0);
    }
}
