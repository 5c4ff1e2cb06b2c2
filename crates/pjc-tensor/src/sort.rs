//! `sort` and `top_k` (spec sections 7 and 11, version 2).
//!
//! Both are data movement decided by one comparison: each line along the
//! sorted dimension gets a permutation from a stable sort of its positions
//! ([`line_orders`]), and the elements move through [`Buf::take`], so values
//! travel bit for bit (NaN payloads and -0.0 kept). The order is
//! [`sort_order`] for floats (bf16/f16 by value), exact for integers, and
//! false < true for pred; several keys compare lexicographically;
//! `descending` reverses the comparison, and the sort stays stable either way.

use std::cmp::Ordering;

use crate::tensor::{invalid, Buf, Lanes, Tensor, TensorError};

/// The float order of `sort` and `top_k`: numeric, with -0.0 equal to +0.0,
/// and NaN (of any sign or payload) greater than +inf and equal to every
/// other NaN.
pub fn sort_order(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).expect("neither is NaN"),
    }
}

/// Elements `i` and `j` of one key, in the sort order of its dtype.
fn lane_order(key: &Lanes, i: usize, j: usize) -> Ordering {
    match key {
        Lanes::F(v) => sort_order(v[i], v[j]),
        Lanes::I(v) => v[i].cmp(&v[j]),
        Lanes::P(v) => v[i].cmp(&v[j]),
    }
}

/// `shape` around `dim` as (outer, size of `dim`, inner) element counts.
fn around(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    (shape[..dim].iter().product(), shape[dim], shape[dim + 1..].iter().product())
}

/// The sorted order of every line along `dim` of arrays of `shape` whose
/// elements are `keys` (compared lexicographically): for line `l` (the other
/// coordinates in row-major order), `out[l * n + r]` is the position along
/// `dim` of the element of rank `r`. Stable: equal elements keep their order.
fn line_orders(keys: &[Lanes], shape: &[usize], dim: usize, descending: bool) -> Vec<usize> {
    let (outer, n, inner) = around(shape, dim);
    let mut out = Vec::with_capacity(outer * n * inner);
    let mut line: Vec<usize> = Vec::with_capacity(n);
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| (o * n + j) * inner + i;
            line.clear();
            line.extend(0..n);
            line.sort_by(|&x, &y| {
                let c = keys.iter().map(|k| lane_order(k, at(x), at(y))).find(|c| c.is_ne()).unwrap_or(Ordering::Equal);
                if descending {
                    c.reverse()
                } else {
                    c
                }
            });
            out.extend_from_slice(&line);
        }
    }
    out
}

/// `sort`: the operands (one shape, any dtypes) reordered together along `dim`
/// by the first `num_keys` of them, ascending unless `descending`, stable.
pub fn sort(ops: &[&Tensor], dim: usize, num_keys: usize, descending: bool) -> Result<Vec<Tensor>, TensorError> {
    let Some(first) = ops.first() else {
        return invalid("sort: no operands");
    };
    if dim >= first.rank() {
        return invalid(format!("sort: dim {dim} out of range for rank {}", first.rank()));
    }
    if let Some(t) = ops.iter().find(|t| t.shape != first.shape) {
        return invalid(format!("sort: operands of shapes {:?} and {:?}", first.shape, t.shape));
    }
    if num_keys == 0 || num_keys > ops.len() {
        return invalid(format!("sort: num_keys={num_keys} for {} operands", ops.len()));
    }
    let keys: Vec<Lanes> = ops[..num_keys].iter().map(|t| t.data.lanes()).collect();
    let order = line_orders(&keys, &first.shape, dim, descending);
    let (outer, n, inner) = around(&first.shape, dim);
    let mut map = vec![0; first.len()];
    for o in 0..outer {
        for i in 0..inner {
            let line = &order[(o * inner + i) * n..][..n];
            for (r, &j) in line.iter().enumerate() {
                map[(o * n + r) * inner + i] = (o * n + j) * inner + i;
            }
        }
    }
    Ok(ops.iter().map(|t| Tensor::new(t.shape.clone(), t.data.take(&map))).collect())
}

/// `top_k`: the `k` largest elements along the last dimension, largest first
/// (the descending sort order: NaN greatest, -0.0 equal to +0.0, ties by lower
/// index), and their positions as i32.
pub fn top_k(a: &Tensor, k: usize) -> Result<(Tensor, Tensor), TensorError> {
    let Some(&n) = a.shape.last() else {
        return invalid("top_k: the operand is a scalar");
    };
    if k == 0 || k > n {
        return invalid(format!("top_k: k={k} for a last dimension of size {n}"));
    }
    let order = line_orders(&[a.data.lanes()], &a.shape, a.rank() - 1, true);
    let rows = a.len() / n;
    let (mut map, mut idx) = (Vec::with_capacity(rows * k), Vec::with_capacity(rows * k));
    for row in 0..rows {
        for &j in &order[row * n..][..k] {
            map.push(row * n + j);
            idx.push(j as i32);
        }
    }
    let mut shape = a.shape.clone();
    *shape.last_mut().expect("rank >= 1") = k;
    Ok((Tensor::new(shape.clone(), a.data.take(&map)), Tensor::new(shape, Buf::I32(idx))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    fn f64s(t: &Tensor) -> Vec<f64> {
        match t.data.lanes() {
            Lanes::F(v) => v,
            l => panic!("not floats: {l:?}"),
        }
    }
    fn bits32(t: &Tensor) -> Vec<u32> {
        match &t.data {
            Buf::F32(v) => v.iter().map(|x| x.to_bits()).collect(),
            b => panic!("not f32: {b:?}"),
        }
    }
    fn i32s(t: &Tensor) -> Vec<i32> {
        match &t.data {
            Buf::I32(v) => v.clone(),
            b => panic!("not i32: {b:?}"),
        }
    }
    fn iota(n: usize) -> Tensor {
        Tensor::new(vec![n], Buf::I32((0..n as i32).collect()))
    }

    #[test]
    fn the_float_order() {
        use Ordering::*;
        let nan = f64::NAN;
        assert_eq!(sort_order(-0.0, 0.0), Equal);
        assert_eq!(sort_order(0.0, -0.0), Equal);
        assert_eq!(sort_order(nan, f64::INFINITY), Greater);
        assert_eq!(sort_order(-nan, f64::INFINITY), Greater);
        assert_eq!(sort_order(f64::INFINITY, -nan), Less);
        assert_eq!(sort_order(nan, -nan), Equal);
        assert_eq!(sort_order(f64::NEG_INFINITY, -1e300), Less);
        assert_eq!(sort_order(1.0, 2.0), Less);
        assert_eq!(sort_order(5e-324, 0.0), Greater);
    }

    #[test]
    fn ascending_floats_keep_bits_and_ties_in_order() {
        // Keys: NaN (two payloads, both signs), ±inf, ±0 in both orders, a tie.
        let neg_nan = f32::from_bits(0xFFC0_0001);
        let nan2 = f32::from_bits(0x7FC0_0002);
        let x = [1.0f32, f32::NAN, -0.0, neg_nan, 0.0, f32::NEG_INFINITY, 1.0, f32::INFINITY, -0.0, nan2, -2.5];
        let a = Tensor::new(vec![x.len()], Buf::F32(x.to_vec()));
        let r = sort(&[&a, &iota(x.len())], 0, 1, false).unwrap();
        // -inf, -2.5, then the zeros in their original order (2, 4, 8), the
        // ones (0, 6), +inf, then the NaNs in their original order (1, 3, 9).
        assert_eq!(i32s(&r[1]), [5, 10, 2, 4, 8, 0, 6, 7, 1, 3, 9]);
        let want: Vec<u32> = i32s(&r[1]).iter().map(|&i| x[i as usize].to_bits()).collect();
        assert_eq!(bits32(&r[0]), want);
        // Descending reverses the comparison, not the result: NaNs first in
        // their original order, equal keys still in original order.
        let r = sort(&[&a, &iota(x.len())], 0, 1, true).unwrap();
        assert_eq!(i32s(&r[1]), [1, 3, 9, 7, 0, 6, 2, 4, 8, 10, 5]);
    }

    #[test]
    fn two_keys_lexicographic_along_an_inner_dim() {
        // [2, 4] sorted along dim 1 by (k0, k1); the payload is a pred.
        let k0 = Tensor::new(vec![2, 4], Buf::U8(vec![2, 1, 2, 1, 0, 0, 0, 0]));
        let k1 = Tensor::new(vec![2, 4], Buf::I64(vec![5, 9, -3, 9, 4, -4, 4, 1]));
        let v = Tensor::new(vec![2, 4], Buf::Pred(vec![true, false, false, true, true, false, false, true]));
        let r = sort(&[&k0, &k1, &v], 1, 2, false).unwrap();
        assert_eq!(r[0].data, Buf::U8(vec![1, 1, 2, 2, 0, 0, 0, 0]));
        assert_eq!(r[1].data, Buf::I64(vec![9, 9, -3, 5, -4, 1, 4, 4]));
        // Row 0: (1,9)@1, (1,9)@3 tie kept in order, (2,-3)@2, (2,5)@0.
        // Row 1: -4@5, 1@7, 4@4, 4@6.
        assert_eq!(r[2].data, Buf::Pred(vec![false, true, false, true, false, true, true, false]));
        // One key: the second operand only travels along; row 1's keys are all
        // equal, so it keeps its order.
        let r = sort(&[&k0, &k1], 1, 1, false).unwrap();
        assert_eq!(r[1].data, Buf::I64(vec![9, 9, 5, -3, 4, -4, 4, 1]));
    }

    #[test]
    fn along_dim_0_of_a_3d_array() {
        // [3, 2, 2]: each (j, k) column sorted independently.
        let v: Vec<i32> = vec![3, -1, 7, 0, 1, -5, 7, 2, 2, 4, -9, 1];
        let a = Tensor::new(vec![3, 2, 2], Buf::I32(v));
        let r = sort(&[&a], 0, 1, false).unwrap();
        assert_eq!(i32s(&r[0]), [1, -5, -9, 0, 2, -1, 7, 1, 3, 4, 7, 2]);
        let r = sort(&[&a], 0, 1, true).unwrap();
        assert_eq!(i32s(&r[0]), [3, 4, 7, 2, 2, -1, 7, 1, 1, -5, -9, 0]);
    }

    #[test]
    fn pred_bf16_f16_and_unsigned_orders() {
        let p = Tensor::new(vec![4], Buf::Pred(vec![true, false, true, false]));
        let r = sort(&[&p, &iota(4)], 0, 1, false).unwrap();
        assert_eq!(r[0].data, Buf::Pred(vec![false, false, true, true]));
        assert_eq!(i32s(&r[1]), [1, 3, 0, 2]);
        let b = Tensor::new(vec![4], Buf::BF16([0.5f32, -0.0, -1e30, f32::NAN].iter().map(|&x| bf16::from_f32(x)).collect()));
        let r = sort(&[&b, &iota(4)], 0, 1, false).unwrap();
        assert_eq!(i32s(&r[1]), [2, 1, 0, 3]);
        let h = Tensor::new(vec![3], Buf::F16([65504.0f32, -65504.0, 6e-8].iter().map(|&x| f16::from_f32(x)).collect()));
        assert_eq!(f64s(&sort(&[&h], 0, 1, true).unwrap()[0]), [65504.0, f16::from_f32(6e-8).to_f64(), -65504.0]);
        let u = Tensor::new(vec![3], Buf::U64(vec![u64::MAX, 0, 1 << 63]));
        assert_eq!(sort(&[&u], 0, 1, false).unwrap()[0].data, Buf::U64(vec![0, 1 << 63, u64::MAX]));
    }

    #[test]
    fn top_k_ties_nan_and_zeros() {
        let x = [2.0f32, -0.0, f32::NAN, 2.0, 0.0, -f32::NAN, 7.0, -0.0];
        let a = Tensor::new(vec![2, 4], Buf::F32(x.to_vec()));
        let (v, i) = top_k(&a, 3).unwrap();
        assert_eq!(v.shape, [2, 3]);
        // Row 0: NaN@2, then the tie 2.0@0 before 2.0@3. Row 1: -NaN@1, 7@2,
        // then +0.0@0 before -0.0@3 only because of the lower index.
        assert_eq!(i32s(&i), [2, 0, 3, 1, 2, 0]);
        let want: Vec<u32> = [2usize, 0, 3, 5, 6, 4].iter().map(|&j| x[j].to_bits()).collect();
        assert_eq!(bits32(&v), want);
        let b = Tensor::new(vec![4], Buf::F32(vec![-0.0, 0.0, -0.0, 1.0]));
        let (v, i) = top_k(&b, 4).unwrap();
        assert_eq!(i32s(&i), [3, 0, 1, 2]);
        assert_eq!(bits32(&v), [1.0f32.to_bits(), 0x8000_0000, 0, 0x8000_0000]);
        let n = Tensor::new(vec![1, 3], Buf::I8(vec![-128, 127, 5]));
        let (v, i) = top_k(&n, 1).unwrap();
        assert_eq!((v.data, i32s(&i)), (Buf::I8(vec![127]), vec![1]));
    }

    #[test]
    fn refusals() {
        let a = Tensor::new(vec![2], Buf::F32(vec![1.0, 2.0]));
        let b = Tensor::new(vec![3], Buf::F32(vec![1.0, 2.0, 3.0]));
        assert!(sort(&[], 0, 1, false).is_err());
        assert!(sort(&[&a], 1, 1, false).is_err());
        assert!(sort(&[&a, &b], 0, 1, false).is_err());
        assert!(sort(&[&a], 0, 2, false).is_err());
        assert!(sort(&[&a], 0, 0, false).is_err());
        assert!(top_k(&a, 3).is_err());
        assert!(top_k(&a, 0).is_err());
        assert!(top_k(&Tensor::new(vec![], Buf::F32(vec![1.0])), 1).is_err());
    }
}
