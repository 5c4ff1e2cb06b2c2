//! Sliding-window ops (spec section 7): `reduce_window` (pooling) and
//! `select_and_scatter_add` (the gradient of max pooling), plus the window
//! output-shape rule the verifier reuses.
//!
//! Windows have no dilation. Per dim, the operand is padded by (lo, hi)
//! (negative values cut), and window o covers padded positions
//! [o*stride, o*stride + window); the number of windows is
//! (size + lo + hi - window) / stride + 1, which must be positive. Padding holds
//! the kind's identity, so padded positions are simply skipped.
//!
//! `select_and_scatter_add` picks, in each window, the first maximum in
//! row-major window order among the non-padding positions, and adds the
//! window's source element there. Ordering used for the pick: NaN is greater
//! than everything and the first NaN wins; -0.0 and +0.0 compare equal (the
//! first wins), as JAX's `ge`-based selection does; pred orders false < true.
//! A window that lies entirely in padding adds nothing.
//!
//! Floats accumulate in f64 and round once; integers in i128, wrapping once.

use crate::reduce::Kind;
use crate::tensor::invalid;
use pjc_dialects::ReduceKind;
use crate::{strides, Buf, Lanes, Tensor, TensorError};

const PAD: usize = usize::MAX;

/// The windows of one op, checked: for every output position, the operand
/// positions of its window.
struct Windows {
    out_shape: Vec<usize>,
    out_st: Vec<usize>,
    in_st: Vec<usize>,
    win: Vec<usize>,
    /// Number of window elements.
    wsz: usize,
    /// Multi-index of each window element, row-major, rank entries each.
    widx: Vec<usize>,
    /// Per dim: tabs[d][o * win[d] + w] = operand position, or PAD.
    tabs: Vec<Vec<usize>>,
}

impl Windows {
    fn new(shape: &[usize], window: &[usize], strides_: &[usize], padding: &[(i64, i64)]) -> Result<Windows, String> {
        let rank = shape.len();
        if window.len() != rank {
            return Err(format!("window has {} entries but the operand has rank {rank}", window.len()));
        }
        let st = if strides_.is_empty() { vec![1; rank] } else { strides_.to_vec() };
        if st.len() != rank {
            return Err(format!("strides has {} entries but the operand has rank {rank}", st.len()));
        }
        let pad = if padding.is_empty() { vec![(0, 0); rank] } else { padding.to_vec() };
        if pad.len() != rank {
            return Err(format!("padding has {} entries but the operand has rank {rank}", pad.len()));
        }
        if window.contains(&0) {
            return Err(format!("window entries must be positive, got {window:?}"));
        }
        if st.contains(&0) {
            return Err(format!("strides must be positive, got {st:?}"));
        }
        let mut out_shape = Vec::with_capacity(rank);
        let mut tabs = Vec::with_capacity(rank);
        for d in 0..rank {
            let padded = shape[d] as i64 + pad[d].0 + pad[d].1;
            if padded < window[d] as i64 {
                return Err(format!(
                    "dimension {d} has no window: padded size {padded} is smaller than the window size {}",
                    window[d]
                ));
            }
            let os = ((padded - window[d] as i64) / st[d] as i64 + 1) as usize;
            let mut t = Vec::with_capacity(os * window[d]);
            for o in 0..os {
                for w in 0..window[d] {
                    let p = (o * st[d] + w) as i64 - pad[d].0;
                    t.push(if p >= 0 && (p as usize) < shape[d] { p as usize } else { PAD });
                }
            }
            out_shape.push(os);
            tabs.push(t);
        }
        let wst = strides(window);
        let wsz: usize = window.iter().product();
        let mut widx = Vec::with_capacity(wsz * rank);
        for w in 0..wsz {
            for d in 0..rank {
                widx.push(w / wst[d] % window[d]);
            }
        }
        Ok(Windows { out_st: strides(&out_shape), out_shape, in_st: strides(shape), win: window.to_vec(), wsz, widx, tabs })
    }

    fn n_out(&self) -> usize {
        self.out_shape.iter().product()
    }

    /// Operand positions of output `o`'s window in row-major window order;
    /// padding positions are left out.
    fn positions(&self, o: usize, oidx: &mut [usize], buf: &mut Vec<usize>) {
        let rank = self.win.len();
        for d in 0..rank {
            oidx[d] = o / self.out_st[d] % self.out_shape[d];
        }
        buf.clear();
        'elems: for w in 0..self.wsz {
            let wi = &self.widx[w * rank..(w + 1) * rank];
            let mut lin = 0;
            for d in 0..rank {
                let p = self.tabs[d][oidx[d] * self.win[d] + wi[d]];
                if p == PAD {
                    continue 'elems;
                }
                lin += p * self.in_st[d];
            }
            buf.push(lin);
        }
    }
}

/// Shape of `reduce_window`'s result (and of `select_and_scatter_add`'s
/// source): per dim (size + lo + hi - window) / stride + 1. Empty `strides` or
/// `padding` mean the defaults (1s, zeros). Errors are messages for the user.
pub fn window_output_shape(
    shape: &[usize],
    window: &[usize],
    strides: &[usize],
    padding: &[(i64, i64)],
) -> Result<Vec<usize>, String> {
    Windows::new(shape, window, strides, padding).map(|w| w.out_shape)
}

/// `reduce_window %a {kind, window, strides, padding}` with kind in sum, max,
/// min: each output is the kind's reduction of its window, starting from the
/// kind's identity (which padding holds).
pub fn reduce_window(
    a: &Tensor,
    kind: ReduceKind,
    window: &[usize],
    strides: &[usize],
    padding: &[(i64, i64)],
) -> Result<Tensor, TensorError> {
    let k = kind.check("reduce_window", &ReduceKind::WINDOW)?;
    let d = a.dtype();
    let w = Windows::new(&a.shape, window, strides, padding).map_err(|e| TensorError::Invalid(format!("reduce_window: {e}")))?;
    let n_out = w.n_out();
    let mut oidx = vec![0; a.rank()];
    let mut pos = Vec::new();
    let lanes = match a.data.lanes() {
        Lanes::F(v) => Lanes::F(
            (0..n_out)
                .map(|o| {
                    w.positions(o, &mut oidx, &mut pos);
                    pos.iter().fold(k.f_identity(), |acc, &p| k.f_apply(acc, v[p]))
                })
                .collect(),
        ),
        Lanes::I(v) => Lanes::I(
            (0..n_out)
                .map(|o| {
                    w.positions(o, &mut oidx, &mut pos);
                    pos.iter().fold(k.i_identity(d), |acc, &p| k.i_apply(acc, v[p]))
                })
                .collect(),
        ),
        Lanes::P(v) => Lanes::P(
            (0..n_out)
                .map(|o| {
                    w.positions(o, &mut oidx, &mut pos);
                    pos.iter().fold(k.p_identity(), |acc, &p| k.p_apply(acc, v[p]))
                })
                .collect(),
        ),
    };
    Ok(Tensor::new(w.out_shape.clone(), Buf::from_lanes(d, lanes)))
}

/// `select_and_scatter_add %source, %operand {window, strides, padding}`: a
/// zero tensor of the operand's shape and dtype into which each source element
/// is added at the position of its window's maximum over `operand` (see the
/// module doc for ties, NaN and padding). `source` must have the window output
/// shape and the operand's dtype.
pub fn select_and_scatter_add(
    source: &Tensor,
    operand: &Tensor,
    window: &[usize],
    strides: &[usize],
    padding: &[(i64, i64)],
) -> Result<Tensor, TensorError> {
    const OP: &str = "select_and_scatter_add";
    let d = operand.dtype();
    if source.dtype() != d {
        return invalid(format!("{OP}: source dtype {} differs from operand dtype {d}", source.dtype()));
    }
    let w = Windows::new(&operand.shape, window, strides, padding).map_err(|e| TensorError::Invalid(format!("{OP}: {e}")))?;
    if source.shape != w.out_shape {
        return invalid(format!(
            "{OP}: source shape {:?} is not the window output shape {:?}",
            source.shape, w.out_shape
        ));
    }
    let ops = operand.data.lanes();
    // does operand element x beat the current pick y?
    let beats = |x: usize, y: usize| -> bool {
        match &ops {
            Lanes::F(v) => !v[y].is_nan() && (v[x].is_nan() || v[x] > v[y]),
            Lanes::I(v) => v[x] > v[y],
            Lanes::P(v) => v[x] && !v[y],
        }
    };
    let n = operand.len();
    let mut oidx = vec![0; operand.rank()];
    let mut pos = Vec::new();
    // Selected operand position for each source element (None: all padding).
    let mut picks = Vec::with_capacity(w.n_out());
    for o in 0..w.n_out() {
        w.positions(o, &mut oidx, &mut pos);
        let mut best: Option<usize> = None;
        for &p in &pos {
            if best.is_none() || best.is_some_and(|b| beats(p, b)) {
                best = Some(p);
            }
        }
        picks.push(best);
    }
    let lanes = match source.data.lanes() {
        Lanes::F(s) => {
            let mut acc = vec![0.0f64; n];
            for (o, p) in picks.iter().enumerate() {
                if let Some(p) = p {
                    acc[*p] += s[o];
                }
            }
            Lanes::F(acc)
        }
        Lanes::I(s) => {
            let mut acc = vec![0i128; n];
            for (o, p) in picks.iter().enumerate() {
                if let Some(p) = p {
                    acc[*p] = acc[*p].wrapping_add(s[o]);
                }
            }
            Lanes::I(acc)
        }
        Lanes::P(s) => {
            let mut acc = vec![false; n];
            for (o, p) in picks.iter().enumerate() {
                if let Some(p) = p {
                    acc[*p] |= s[o];
                }
            }
            Lanes::P(acc)
        }
    };
    Ok(Tensor::new(operand.shape.clone(), Buf::from_lanes(d, lanes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pjc_dialects::DType;

    fn t(shape: &[usize], data: Buf) -> Tensor {
        Tensor::new(shape.to_vec(), data)
    }

    #[test]
    fn max_and_sum_1d_with_padding() {
        let a = t(&[5], Buf::F32(vec![1.0, 3.0, 2.0, 5.0, 4.0]));
        // Padded [pad,1,3,2,5,4], window 2 stride 2: [pad,1] [3,2] [5,4].
        let r = reduce_window(&a, ReduceKind::Max, &[2], &[2], &[(1, 0)]).unwrap();
        assert_eq!(r.data, Buf::F32(vec![1.0, 3.0, 5.0]));
        // Padded [0,1,3,2,5,4,0], window 2 stride 2: 3 windows, the last pad unused.
        let r = reduce_window(&a, ReduceKind::Sum, &[2], &[2], &[(1, 1)]).unwrap();
        assert_eq!(r.data, Buf::F32(vec![1.0, 5.0, 9.0]));
        // Window 3, stride 1, no padding: min.
        let r = reduce_window(&a, ReduceKind::Min, &[3], &[], &[]).unwrap();
        assert_eq!(r.data, Buf::F32(vec![1.0, 2.0, 2.0]));
        // Negative padding cuts the first element: [3,2,5,4].
        let r = reduce_window(&a, ReduceKind::Sum, &[2], &[1], &[(-1, 0)]).unwrap();
        assert_eq!(r.data, Buf::F32(vec![5.0, 7.0, 9.0]));
    }

    #[test]
    fn windows_entirely_in_padding_give_the_identity() {
        let a = t(&[2], Buf::F64(vec![-3.0, -7.0]));
        // Padded [pad,pad,-3,-7], window 2: [pad,pad] [pad,-3] [-3,-7].
        let r = reduce_window(&a, ReduceKind::Max, &[2], &[1], &[(2, 0)]).unwrap();
        assert_eq!(r.data, Buf::F64(vec![f64::NEG_INFINITY, -3.0, -3.0]));
        let r = reduce_window(&a, ReduceKind::Min, &[2], &[1], &[(2, 0)]).unwrap();
        assert_eq!(r.data, Buf::F64(vec![f64::INFINITY, -3.0, -7.0]));
        let a = t(&[2], Buf::I16(vec![-3, -7]));
        let r = reduce_window(&a, ReduceKind::Max, &[2], &[1], &[(2, 0)]).unwrap();
        assert_eq!(r.data, Buf::I16(vec![i16::MIN, -3, -3]));
        let a = t(&[2], Buf::U8(vec![200, 100]));
        let r = reduce_window(&a, ReduceKind::Sum, &[2], &[1], &[(0, 0)]).unwrap();
        assert_eq!(r.data, Buf::U8(vec![44])); // 300 wraps
    }

    #[test]
    fn max_pool_2d_and_nan() {
        // 4x4 -> 2x2 max pooling.
        let v: Vec<f32> = vec![1., 2., 3., 4., 8., 7., 6., 5., 9., 0., 1., 2., 3., 4., 5., f32::NAN];
        let a = t(&[4, 4], Buf::F32(v));
        let r = reduce_window(&a, ReduceKind::Max, &[2, 2], &[2, 2], &[]).unwrap();
        assert_eq!(r.shape, vec![2, 2]);
        let Buf::F32(o) = r.data else { panic!() };
        assert_eq!(&o[..3], &[8.0, 6.0, 9.0]);
        assert!(o[3].is_nan());
        // 3x3 sum with padding 1 everywhere on a 2x2 of ones, stride 1: 2x2 of 4s.
        let a = t(&[2, 2], Buf::I32(vec![1; 4]));
        let r = reduce_window(&a, ReduceKind::Sum, &[3, 3], &[1, 1], &[(1, 1), (1, 1)]).unwrap();
        assert_eq!(r.data, Buf::I32(vec![4; 4]));
        // Rank-0 window of nothing: the element itself.
        let s = t(&[], Buf::F32(vec![2.5]));
        assert_eq!(reduce_window(&s, ReduceKind::Sum, &[], &[], &[]).unwrap().data, Buf::F32(vec![2.5]));
    }

    #[test]
    fn bf16_window_sum_rounds_once() {
        let e = 1.0 / 256.0;
        let a = t(&[3], Buf::from_f64(DType::BF16, &[1.0, e, e]));
        let r = reduce_window(&a, ReduceKind::Sum, &[3], &[], &[]).unwrap();
        assert_eq!(r.data, Buf::from_f64(DType::BF16, &[1.0 + 2.0 * e]));
    }

    #[test]
    fn shape_rule_and_errors() {
        assert_eq!(window_output_shape(&[7, 6], &[3, 2], &[2, 2], &[(1, 1), (0, 1)]).unwrap(), vec![4, 3]);
        assert!(window_output_shape(&[7, 6], &[3], &[], &[]).unwrap_err().contains("window has 1 entries"));
        assert!(window_output_shape(&[7], &[8], &[], &[]).unwrap_err().contains("no window"));
        assert!(window_output_shape(&[7], &[0], &[], &[]).is_err());
        assert!(window_output_shape(&[7], &[2], &[0], &[]).is_err());
        assert!(window_output_shape(&[7], &[2], &[1, 1], &[]).is_err());
        let a = t(&[3], Buf::F32(vec![0.0; 3]));
        assert!(reduce_window(&a, ReduceKind::Prod, &[2], &[], &[]).is_err());
    }

    #[test]
    fn scatter_first_max_on_ties() {
        let op = t(&[4], Buf::F32(vec![1.0, 3.0, 3.0, 2.0]));
        // Windows [1,3] -> 1, [3,3] -> 1 (first), [3,2] -> 2.
        let src = t(&[3], Buf::F32(vec![10.0, 20.0, 30.0]));
        let r = select_and_scatter_add(&src, &op, &[2], &[1], &[]).unwrap();
        assert_eq!(r.data, Buf::F32(vec![0.0, 30.0, 30.0, 0.0]));
        // -0.0 and +0.0 tie: the first wins.
        let op = t(&[2], Buf::F64(vec![-0.0, 0.0]));
        let src = t(&[1], Buf::F64(vec![1.0]));
        let r = select_and_scatter_add(&src, &op, &[2], &[], &[]).unwrap();
        assert_eq!(r.data, Buf::F64(vec![1.0, 0.0]));
    }

    #[test]
    fn scatter_never_selects_padding() {
        let op = t(&[2], Buf::I32(vec![-5, -6]));
        // Padded [pad,-5,-6,pad], window 2: picks 0, 0, 1.
        let src = t(&[3], Buf::I32(vec![1, 2, 4]));
        let r = select_and_scatter_add(&src, &op, &[2], &[1], &[(1, 1)]).unwrap();
        assert_eq!(r.data, Buf::I32(vec![3, 4]));
        // A window entirely in padding adds nothing: padded [pad,pad,x0].
        let op = t(&[1], Buf::F32(vec![7.0]));
        let src = t(&[2], Buf::F32(vec![100.0, 1.0]));
        let r = select_and_scatter_add(&src, &op, &[2], &[1], &[(2, 0)]).unwrap();
        assert_eq!(r.data, Buf::F32(vec![1.0]));
    }

    #[test]
    fn scatter_nan_wins_and_2d() {
        let op = t(&[4], Buf::F32(vec![1.0, f32::NAN, f32::NAN, 5.0]));
        let src = t(&[1], Buf::F32(vec![2.0]));
        let r = select_and_scatter_add(&src, &op, &[4], &[], &[]).unwrap();
        assert_eq!(r.data, Buf::F32(vec![0.0, 2.0, 0.0, 0.0]));
        // 2-D overlapping 2x2 windows, stride 1, on a 3x3 operand with max in the centre:
        // every window picks the centre, so it gets the sum of the source.
        let op = t(&[3, 3], Buf::F32(vec![1., 2., 1., 2., 9., 2., 1., 2., 1.]));
        let src = t(&[2, 2], Buf::F32(vec![1.0, 2.0, 3.0, 4.0]));
        let r = select_and_scatter_add(&src, &op, &[2, 2], &[1, 1], &[]).unwrap();
        assert_eq!(r.data, Buf::F32(vec![0., 0., 0., 0., 10., 0., 0., 0., 0.]));
        // Row-major window order on a tie inside a 2x2 window: (0,1) before (1,0).
        let op = t(&[2, 2], Buf::I8(vec![0, 5, 5, 1]));
        let src = t(&[1, 1], Buf::I8(vec![3]));
        let r = select_and_scatter_add(&src, &op, &[2, 2], &[], &[]).unwrap();
        assert_eq!(r.data, Buf::I8(vec![0, 3, 0, 0]));
        // bf16 source accumulated once: windows [p,0,1] [0,1,0] [1,0,p] all pick
        // the middle, which gets 1 + 2^-8 + 2^-8 rounded once.
        let e = 1.0 / 256.0;
        let op = t(&[3], Buf::from_f64(DType::BF16, &[0.0, 1.0, 0.0]));
        let src = t(&[3], Buf::from_f64(DType::BF16, &[1.0, e, e]));
        let r = select_and_scatter_add(&src, &op, &[3], &[1], &[(1, 1)]).unwrap();
        assert_eq!(r.data, Buf::from_f64(DType::BF16, &[0.0, 1.0 + 2.0 * e, 0.0]));
        // Errors: wrong source shape or dtype.
        assert!(select_and_scatter_add(&t(&[2], Buf::BF16(vec![half::bf16::ZERO; 2])), &op, &[3], &[1], &[(1, 1)]).is_err());
        assert!(select_and_scatter_add(&t(&[3], Buf::F32(vec![0.0; 3])), &op, &[3], &[1], &[(1, 1)]).is_err());
    }
}
