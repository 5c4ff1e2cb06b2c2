//! `scatter_add` library steps at memory speed for f32, f64 and integers:
//! the result starts as a copy of the base and each kept update row is added
//! in place, in the element type (wrapping for integers), in row-major order
//! of the updates — deterministic, one pass over the updates. (The reference
//! kernel widens base and updates to f64 or i128 lanes and builds an index
//! pair per element.) f16/bf16 and pred take the reference kernel, which
//! accumulates them in f32 as the spec asks.

use pjc_ir::{Attrs, InstData, Opcode, TensorType};
use pjc_tensor::{Buf, Tensor};

/// Rows of `base` (outer × n × inner) receiving `updates` (outer × k × inner)
/// at `idx` along the middle dimension; out-of-range indices are dropped.
fn add_rows<T: Copy>(acc: &mut [T], upd: &[T], idx: &[i128], outer: usize, n: usize, inner: usize, add: impl Fn(T, T) -> T) {
    let k = idx.len();
    for o in 0..outer {
        for (ki, &i) in idx.iter().enumerate() {
            if i < 0 || i >= n as i128 {
                continue;
            }
            let dst = &mut acc[(o * n + i as usize) * inner..][..inner];
            let src = &upd[(o * k + ki) * inner..][..inner];
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = add(*d, s);
            }
        }
    }
}

/// `scatter_add %base, %idx, %updates {axis}` on the fast path, or `None`
/// (the reference kernel then runs, and reports any malformed step).
pub fn try_scatter_add(inst: &InstData, ins: &[Tensor], out: &TensorType) -> Option<Tensor> {
    if inst.op != Opcode::ScatterAdd || ins.len() != 3 {
        return None;
    }
    let (base, idx, upd) = (&ins[0], &ins[1], &ins[2]);
    let axis = Attrs::with_ranks(inst, &[base.rank(), idx.rank(), upd.rank()]).index("axis").ok()?;
    if axis >= base.rank() || base.dtype() != upd.dtype() || out.dtype != base.dtype() || !idx.dtype().is_int() {
        return None;
    }
    let mut want = base.shape[..axis].to_vec();
    want.extend(&idx.shape);
    want.extend(&base.shape[axis + 1..]);
    if upd.shape != want {
        return None;
    }
    let iv: Vec<i128> = match idx.data.lanes() {
        pjc_tensor::Lanes::I(v) => v,
        _ => return None,
    };
    let (outer, n, inner) = (base.shape[..axis].iter().product(), base.shape[axis], base.shape[axis + 1..].iter().product());
    let data = match (&base.data, &upd.data) {
        (Buf::F32(b), Buf::F32(u)) => {
            let mut acc = b.clone();
            add_rows(&mut acc, u, &iv, outer, n, inner, |a, b| a + b);
            Buf::F32(acc)
        }
        (Buf::F64(b), Buf::F64(u)) => {
            let mut acc = b.clone();
            add_rows(&mut acc, u, &iv, outer, n, inner, |a, b| a + b);
            Buf::F64(acc)
        }
        (Buf::I32(b), Buf::I32(u)) => {
            let mut acc = b.clone();
            add_rows(&mut acc, u, &iv, outer, n, inner, i32::wrapping_add);
            Buf::I32(acc)
        }
        (Buf::I64(b), Buf::I64(u)) => {
            let mut acc = b.clone();
            add_rows(&mut acc, u, &iv, outer, n, inner, i64::wrapping_add);
            Buf::I64(acc)
        }
        _ => return None,
    };
    Some(Tensor::new(base.shape.clone(), data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pjc_ir::DType;
    use pjc_ir::AttrValue;
    use pjc_tensor::compare::{close, Tolerance};

    #[test]
    fn scatter_add_matches_the_reference_with_duplicates_and_dropped_indices() {
        let mut seed = 3u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed >> 33
        };
        for d in [DType::F32, DType::F64, DType::I32, DType::I64] {
            for (bshape, ishape, axis) in [(vec![6, 4], vec![9], 0), (vec![3, 5, 2], vec![2, 4], 1), (vec![2, 3], vec![7], 1), (vec![4], vec![0], 0)] {
                // Small integers: exact in every dtype, so sums agree bit for bit.
                let vals = |n: usize, next: &mut dyn FnMut() -> u64| -> Buf {
                    let v: Vec<i128> = (0..n).map(|_| (next() % 9) as i128 - 4).collect();
                    if d.is_float() {
                        Buf::from_f64(d, &v.iter().map(|&x| x as f64).collect::<Vec<_>>())
                    } else {
                        Buf::from_i128(d, &v)
                    }
                };
                let nb: usize = bshape.iter().product();
                let base = Tensor::new(bshape.clone(), vals(nb, &mut next));
                let ni: usize = ishape.iter().product();
                let n = bshape[axis] as i128;
                // In range, duplicated, negative and past the end.
                let iv: Vec<i128> = (0..ni).map(|_| (next() % (n as u64 + 3)) as i128 - 1).collect();
                let idx = Tensor::new(ishape.clone(), Buf::from_i128(DType::I32, &iv));
                let mut ushape = bshape[..axis].to_vec();
                ushape.extend(&ishape);
                ushape.extend(&bshape[axis + 1..]);
                let nu: usize = ushape.iter().product();
                let upd = Tensor::new(ushape, vals(nu, &mut next));
                let want = pjc_tensor::scatter_add(&base, &idx, &upd, axis).unwrap();
                let mut inst = InstData::new(Opcode::ScatterAdd);
                inst.set_attr("axis", AttrValue::Int(axis as i64));
                let out = TensorType::new(d, bshape.iter().map(|&x| x as u64).collect());
                let got = try_scatter_add(&inst, &[base, idx, upd], &out).expect("on the fast path");
                close(&want, &got, Tolerance::EXACT).unwrap_or_else(|e| panic!("{d} {bshape:?} {ishape:?} axis {axis}: {e}"));
            }
        }
        // bf16 stays with the reference (f32 accumulation).
        let t = Tensor::new(vec![2], Buf::from_f64(DType::BF16, &[1.0, 2.0]));
        let i = Tensor::new(vec![1], Buf::from_i128(DType::I32, &[0]));
        let u = Tensor::new(vec![1], Buf::from_f64(DType::BF16, &[1.0]));
        let mut inst = InstData::new(Opcode::ScatterAdd);
        inst.set_attr("axis", AttrValue::Int(0));
        assert!(try_scatter_add(&inst, &[t, i, u], &TensorType::new(DType::BF16, vec![2])).is_none());
    }
}
