//! `dot_general` library steps through the `gemm` crate (f32/f64, f32/f64
//! accumulation), for the shapes that are a (batched) strided matrix product:
//! batch dimensions leading and in order on both sides, at most one free and
//! exactly one contracting dimension per operand, result dtype = operand dtype.
//! Everything else returns `None` and runs the reference kernel.

use pjc_ir::{DType, InstData, Opcode, TensorType};
use pjc_tensor::{Buf, Tensor};

fn strides(shape: &[usize]) -> Vec<usize> {
    pjc_tensor::strides(shape)
}

/// The product as `(batch, m, k, n, lhs (batch stride, row stride, col stride),
/// rhs (batch stride, row stride, col stride))`, when it is one.
#[allow(clippy::type_complexity)]
pub fn matmul_view(
    a: &[usize],
    b: &[usize],
    lb: &[usize],
    rb: &[usize],
    lc: &[usize],
    rc: &[usize],
) -> Option<(usize, usize, usize, usize, [isize; 3], [isize; 3])> {
    let nb = lb.len();
    if rb.len() != nb || lc.len() != 1 || rc.len() != 1 {
        return None;
    }
    if lb.iter().enumerate().any(|(i, &d)| d != i) || rb.iter().enumerate().any(|(i, &d)| d != i) {
        return None;
    }
    let lfree: Vec<usize> = (nb..a.len()).filter(|&d| d != lc[0]).collect();
    let rfree: Vec<usize> = (nb..b.len()).filter(|&d| d != rc[0]).collect();
    if lfree.len() > 1 || rfree.len() > 1 {
        return None;
    }
    let (sa, sb) = (strides(a), strides(b));
    let batch: usize = a[..nb].iter().product();
    let bsa = if nb == 0 {
        0
    } else {
        a[nb..].iter().product::<usize>()
    };
    let bsb = if nb == 0 {
        0
    } else {
        b[nb..].iter().product::<usize>()
    };
    let (m, lrs) = match lfree.first() {
        Some(&d) => (a[d], sa[d]),
        None => (1, 0),
    };
    let (n, rcs) = match rfree.first() {
        Some(&d) => (b[d], sb[d]),
        None => (1, 0),
    };
    let k = a[lc[0]];
    if b[rc[0]] != k {
        return None;
    }
    Some((
        batch,
        m,
        k,
        n,
        [bsa as isize, lrs as isize, sa[lc[0]] as isize],
        [bsb as isize, sb[rc[0]] as isize, rcs as isize],
    ))
}

/// `dot_general` with the gemm crate, or `None` when the step is not a plain
/// (batched) f32/f64 matrix product.
pub fn try_dot(
    inst: &InstData,
    ins: &[Tensor],
    out: &TensorType,
    threads: usize,
) -> Option<Tensor> {
    if inst.op != Opcode::DotGeneral || ins.len() != 2 {
        return None;
    }
    let (a, b) = (&ins[0], &ins[1]);
    let d = a.dtype();
    if !matches!(d, DType::F32 | DType::F64) || b.dtype() != d || out.dtype != d {
        return None;
    }
    let types: Vec<TensorType> = ins
        .iter()
        .map(|t| TensorType::new(t.dtype(), t.shape.iter().map(|&x| x as u64).collect()))
        .collect();
    let refs: Vec<&TensorType> = types.iter().collect();
    let us = |n: &str| -> Vec<usize> {
        pjc_ir::attrs::resolved_attr(inst, n, &refs)
            .and_then(|a| a.as_ints())
            .unwrap_or_default()
            .iter()
            .map(|&x| x as usize)
            .collect()
    };
    let (batch, m, k, n, sa, sb) = matmul_view(
        &a.shape,
        &b.shape,
        &us("lhs_batch"),
        &us("rhs_batch"),
        &us("lhs_contract"),
        &us("rhs_contract"),
    )?;
    let shape: Vec<usize> = out.shape.iter().map(|&x| x as usize).collect();
    if shape.iter().product::<usize>() != batch * m * n {
        return None;
    }
    let par = if threads > 1 && m * n * k >= 1 << 15 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    macro_rules! run {
        ($x:expr, $y:expr, $v:ident, $t:ty) => {{
            let mut dst: Vec<$t> = vec![0.0; batch * m * n];
            for bi in 0..batch {
                unsafe {
                    gemm::gemm(
                        m,
                        n,
                        k,
                        dst.as_mut_ptr().add(bi * m * n),
                        1,
                        n as isize,
                        false,
                        $x.as_ptr().offset(bi as isize * sa[0]),
                        sa[2],
                        sa[1],
                        $y.as_ptr().offset(bi as isize * sb[0]),
                        sb[2],
                        sb[1],
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        par,
                    );
                }
            }
            Buf::$v(dst)
        }};
    }
    let data = match (&a.data, &b.data) {
        (Buf::F32(x), Buf::F32(y)) => run!(x, y, F32, f32),
        (Buf::F64(x), Buf::F64(y)) => run!(x, y, F64, f64),
        _ => return None,
    };
    Some(Tensor::new(shape, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views() {
        // [2,3] x [3,4]
        let v = matmul_view(&[2, 3], &[3, 4], &[], &[], &[1], &[0]).unwrap();
        assert_eq!(v, (1, 2, 3, 4, [0, 3, 1], [0, 4, 1]));
        // lhs transposed: [3,2] contract 0
        let v = matmul_view(&[3, 2], &[3, 4], &[], &[], &[0], &[0]).unwrap();
        assert_eq!(v, (1, 2, 3, 4, [0, 1, 2], [0, 4, 1]));
        // batched
        let v = matmul_view(&[5, 2, 3], &[5, 3, 4], &[0], &[0], &[2], &[1]).unwrap();
        assert_eq!(v, (5, 2, 3, 4, [6, 3, 1], [12, 4, 1]));
        // two contracting dims: not a plain product
        assert!(matmul_view(&[2, 3, 4], &[3, 4], &[], &[], &[1, 2], &[0, 1]).is_none());
    }
}
