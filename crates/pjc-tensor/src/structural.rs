//! Reference kernels for PIR's data-movement ops (spec section 7): broadcast,
//! reshape, transpose, slice, concat, dynamic_slice, dynamic_update_slice, pad,
//! reverse, gather, and the arithmetic members of the family, scatter and
//! scatter_add.
//!
//! Every movement kernel only computes an index map (`out[i] = src[map[i]]`) and
//! applies it with [`Buf::take`], so one dtype-generic primitive moves the data
//! and each op is a few lines of index arithmetic that can be checked by eye.
//! Ops that mix two sources (pad, dynamic_update_slice, select) gather from the
//! concatenation of both buffers.

use crate::reduce::Kind;
use crate::tensor::{invalid, strides, Buf, Lanes, Tensor, TensorError};
use pjc_dialects::ScatterKind;

/// The buffers one after the other. All parts must have one dtype (callers check).
pub(crate) fn concat_bufs(parts: &[&Buf]) -> Buf {
    macro_rules! cat {
        ($($v:ident),*) => {
            match parts[0] {
                $(Buf::$v(_) => Buf::$v(
                    parts
                        .iter()
                        .flat_map(|p| match p {
                            Buf::$v(v) => v.iter().copied(),
                            _ => panic!("concat_bufs: parts of different dtypes"),
                        })
                        .collect(),
                ),)*
            }
        };
    }
    cat!(F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, Pred)
}

/// Calls `f` with every coordinate of `shape`, in row-major order.
fn for_each_coord(shape: &[usize], mut f: impl FnMut(&[usize])) {
    if shape.contains(&0) {
        return;
    }
    let mut c = vec![0usize; shape.len()];
    loop {
        f(&c);
        let mut d = shape.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            c[d] += 1;
            if c[d] < shape[d] {
                break;
            }
            c[d] = 0;
        }
    }
}

/// The index map of an affine view: element `c` of `shape` (row-major) reads
/// source element `offset + Σ c[i] * steps[i]`.
fn affine_map(shape: &[usize], offset: isize, steps: &[isize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(shape.iter().product());
    for_each_coord(shape, |c| {
        let at = offset + c.iter().zip(steps).map(|(&ci, &s)| ci as isize * s).sum::<isize>();
        out.push(at as usize);
    });
    out
}

fn check_rank(what: &str, a: &Tensor, n: usize) -> Result<(), TensorError> {
    if n != a.rank() {
        return invalid(format!("{what}: {n} entries given for an operand of rank {}", a.rank()));
    }
    Ok(())
}

/// `broadcast`: operand dim i becomes result dim `dims[i]` (size equal, or 1 to
/// stretch); the other result dims repeat the operand.
pub fn broadcast(a: &Tensor, dims: &[usize], shape: &[usize]) -> Result<Tensor, TensorError> {
    check_rank("broadcast dims", a, dims.len())?;
    let ast = strides(&a.shape);
    let mut steps = vec![0isize; shape.len()];
    for (i, &d) in dims.iter().enumerate() {
        if d >= shape.len() || dims[..i].contains(&d) || (a.shape[i] != 1 && a.shape[i] != shape[d]) {
            return invalid(format!(
                "broadcast: operand dim {i} (size {}) cannot go to result dim {d} of {shape:?}",
                a.shape[i]
            ));
        }
        if a.shape[i] != 1 {
            steps[d] += ast[i] as isize;
        }
    }
    Ok(Tensor::new(shape.to_vec(), a.data.take(&affine_map(shape, 0, &steps))))
}

/// `reshape`: the same elements in row-major order, another shape.
pub fn reshape(a: &Tensor, shape: &[usize]) -> Result<Tensor, TensorError> {
    if shape.iter().product::<usize>() != a.len() {
        return invalid(format!("reshape: {:?} and {shape:?} have different element counts", a.shape));
    }
    Ok(Tensor::new(shape.to_vec(), a.data.clone()))
}

/// `transpose`: result dim i is operand dim `perm[i]`.
pub fn transpose(a: &Tensor, perm: &[usize]) -> Result<Tensor, TensorError> {
    check_rank("transpose perm", a, perm.len())?;
    let mut seen = vec![false; perm.len()];
    for &p in perm {
        if p >= perm.len() || std::mem::replace(&mut seen[p], true) {
            return invalid(format!("transpose: {perm:?} is not a permutation"));
        }
    }
    let shape: Vec<usize> = perm.iter().map(|&p| a.shape[p]).collect();
    Ok(Tensor::new(shape, a.data.permuted(&a.shape, perm)))
}


/// `slice`: elements `start[i], start[i] + stride[i], ...` below `limit[i]`.
pub fn slice(a: &Tensor, start: &[usize], limit: &[usize], stride: &[usize]) -> Result<Tensor, TensorError> {
    check_rank("slice start", a, start.len())?;
    check_rank("slice limit", a, limit.len())?;
    check_rank("slice stride", a, stride.len())?;
    let ast = strides(&a.shape);
    let (mut shape, mut steps, mut offset) = (vec![], vec![], 0isize);
    for i in 0..a.rank() {
        if start[i] > limit[i] || limit[i] > a.shape[i] || stride[i] == 0 {
            return invalid(format!(
                "slice: start {}, limit {}, stride {} do not fit dim {i} of size {}",
                start[i], limit[i], stride[i], a.shape[i]
            ));
        }
        shape.push((limit[i] - start[i]).div_ceil(stride[i]));
        steps.push((stride[i] * ast[i]) as isize);
        offset += (start[i] * ast[i]) as isize;
    }
    Ok(Tensor::new(shape.clone(), a.data.take(&affine_map(&shape, offset, &steps))))
}

/// `concat`: the parts joined along `dim` (all other dims equal).
pub fn concat(parts: &[&Tensor], dim: usize) -> Result<Tensor, TensorError> {
    let Some(first) = parts.first() else {
        return invalid("concat: no operands");
    };
    if dim >= first.rank() {
        return invalid(format!("concat: dim {dim} out of range for rank {}", first.rank()));
    }
    for p in parts {
        let same_other_dims =
            p.rank() == first.rank() && (0..first.rank()).all(|i| i == dim || p.shape[i] == first.shape[i]);
        if p.dtype() != first.dtype() || !same_other_dims {
            return invalid(format!(
                "concat: {}{:?} does not fit {}{:?} along dim {dim}",
                p.dtype(),
                p.shape,
                first.dtype(),
                first.shape
            ));
        }
    }
    let outer: usize = first.shape[..dim].iter().product();
    let inner: usize = first.shape[dim + 1..].iter().product();
    let mut base = 0;
    let mut bases = vec![];
    for p in parts {
        bases.push(base);
        base += p.len();
    }
    let mut idx = Vec::with_capacity(base);
    for o in 0..outer {
        for (p, &b) in parts.iter().zip(&bases) {
            let chunk = p.shape[dim] * inner;
            idx.extend((0..chunk).map(|j| b + o * chunk + j));
        }
    }
    let mut shape = first.shape.clone();
    shape[dim] = parts.iter().map(|p| p.shape[dim]).sum();
    let bufs: Vec<&Buf> = parts.iter().map(|p| &p.data).collect();
    Ok(Tensor::new(shape, concat_bufs(&bufs).take(&idx)))
}

/// Equally shaped parts stacked along a new dimension `dim` (part `p` is
/// index `p` there): how loops of calls (`vmap`, `scan`) assemble their
/// results.
pub fn stack(parts: &[&Tensor], dim: usize) -> Result<Tensor, TensorError> {
    let Some(first) = parts.first() else {
        return invalid("stack: no parts");
    };
    if dim > first.rank() {
        return invalid(format!("stack: dim {dim} out of range for parts of rank {}", first.rank()));
    }
    if let Some(p) = parts.iter().find(|p| p.dtype() != first.dtype() || p.shape != first.shape) {
        return invalid(format!("stack: {}{:?} and {}{:?} differ", p.dtype(), p.shape, first.dtype(), first.shape));
    }
    let (outer, inner): (usize, usize) = (first.shape[..dim].iter().product(), first.shape[dim..].iter().product());
    let mut idx = Vec::with_capacity(outer * parts.len() * inner);
    for o in 0..outer {
        for p in 0..parts.len() {
            let at = p * first.len() + o * inner;
            idx.extend(at..at + inner);
        }
    }
    let mut shape = first.shape.clone();
    shape.insert(dim, parts.len());
    let bufs: Vec<&Buf> = parts.iter().map(|p| &p.data).collect();
    Ok(Tensor::new(shape, concat_bufs(&bufs).take(&idx)))
}

/// Index `i` of `a` along `dim`, that dimension removed: one step of a loop
/// over `dim` (`vmap`'s mapped operands, `scan`'s scanned ones).
pub fn index_along(a: &Tensor, dim: usize, i: usize) -> Result<Tensor, TensorError> {
    if dim >= a.rank() || i >= a.shape[dim] {
        return invalid(format!("index_along: index {i} of dim {dim} out of range for {:?}", a.shape));
    }
    let ast = strides(&a.shape);
    let mut shape = a.shape.clone();
    shape.remove(dim);
    let mut steps: Vec<isize> = ast.iter().map(|&s| s as isize).collect();
    steps.remove(dim);
    Ok(Tensor::new(shape.clone(), a.data.take(&affine_map(&shape, (i * ast[dim]) as isize, &steps))))
}

/// Start indices clamped so that a window of `sizes` fits in `shape`.
fn clamp_starts(what: &str, shape: &[usize], starts: &[i128], sizes: &[usize]) -> Result<Vec<usize>, TensorError> {
    if starts.len() != shape.len() || sizes.len() != shape.len() {
        return invalid(format!("{what}: {} start indices for rank {}", starts.len(), shape.len()));
    }
    let mut out = vec![];
    for i in 0..shape.len() {
        if sizes[i] > shape[i] {
            return invalid(format!("{what}: size {} exceeds dim {i} of size {}", sizes[i], shape[i]));
        }
        out.push(starts[i].clamp(0, (shape[i] - sizes[i]) as i128) as usize);
    }
    Ok(out)
}

/// `dynamic_slice`: a `sizes` window at `starts`, each start clamped into
/// `[0, dim - size]`.
pub fn dynamic_slice(a: &Tensor, starts: &[i128], sizes: &[usize]) -> Result<Tensor, TensorError> {
    let s = clamp_starts("dynamic_slice", &a.shape, starts, sizes)?;
    let limit: Vec<usize> = s.iter().zip(sizes).map(|(a, b)| a + b).collect();
    slice(a, &s, &limit, &vec![1; a.rank()])
}

/// `dynamic_update_slice`: `a` with `upd` written at `starts` (clamped like
/// [`dynamic_slice`]).
pub fn dynamic_update_slice(a: &Tensor, upd: &Tensor, starts: &[i128]) -> Result<Tensor, TensorError> {
    if upd.dtype() != a.dtype() || upd.rank() != a.rank() {
        return invalid(format!(
            "dynamic_update_slice: update {}{:?} does not fit {}{:?}",
            upd.dtype(),
            upd.shape,
            a.dtype(),
            a.shape
        ));
    }
    let s = clamp_starts("dynamic_update_slice", &a.shape, starts, &upd.shape)?;
    let ust = strides(&upd.shape);
    let n = a.len();
    let mut idx = Vec::with_capacity(n);
    for_each_coord(&a.shape, |c| {
        let inside = (0..c.len()).all(|i| c[i] >= s[i] && c[i] < s[i] + upd.shape[i]);
        idx.push(if inside { n + (0..c.len()).map(|i| (c[i] - s[i]) * ust[i]).sum::<usize>() } else { idx.len() });
    });
    Ok(Tensor::new(a.shape.clone(), concat_bufs(&[&a.data, &upd.data]).take(&idx)))
}

/// `pad` (StableHLO): operand element `i` lands at `low + i * (interior + 1)`;
/// everything else is the scalar `v`. Negative `low`/`high` crop.
pub fn pad(a: &Tensor, v: &Tensor, low: &[i64], high: &[i64], interior: &[usize]) -> Result<Tensor, TensorError> {
    check_rank("pad low", a, low.len())?;
    check_rank("pad high", a, high.len())?;
    check_rank("pad interior", a, interior.len())?;
    if v.dtype() != a.dtype() || !v.shape.is_empty() {
        return invalid(format!("pad: the padding value {}{:?} is not a {} scalar", v.dtype(), v.shape, a.dtype()));
    }
    let mut shape = vec![];
    for i in 0..a.rank() {
        let n = a.shape[i] as i64;
        let size = low[i] + high[i] + n + (n - 1).max(0) * interior[i] as i64;
        if size < 0 {
            return invalid(format!("pad: dim {i} would have negative size {size}"));
        }
        shape.push(size as usize);
    }
    let ast = strides(&a.shape);
    let n = a.len();
    let mut idx = Vec::with_capacity(shape.iter().product());
    for_each_coord(&shape, |c| {
        let mut at = 0;
        for i in 0..c.len() {
            let rel = c[i] as i64 - low[i];
            let step = interior[i] as i64 + 1;
            if rel < 0 || rel % step != 0 || rel / step >= a.shape[i] as i64 {
                idx.push(n); // the padding value
                return;
            }
            at += (rel / step) as usize * ast[i];
        }
        idx.push(at);
    });
    Ok(Tensor::new(shape, concat_bufs(&[&a.data, &v.data]).take(&idx)))
}

/// `reverse`: the order of elements reversed along each of `dims`.
pub fn reverse(a: &Tensor, dims: &[usize]) -> Result<Tensor, TensorError> {
    let ast = strides(&a.shape);
    let mut steps: Vec<isize> = ast.iter().map(|&s| s as isize).collect();
    let mut offset = 0isize;
    for &d in dims {
        if d >= a.rank() || steps[d] < 0 {
            return invalid(format!("reverse: dims {dims:?} are not distinct dims of rank {}", a.rank()));
        }
        steps[d] = -steps[d];
        offset += (a.shape[d].saturating_sub(1) * ast[d]) as isize;
    }
    Ok(Tensor::new(a.shape.clone(), a.data.take(&affine_map(&a.shape, offset, &steps))))
}

/// Index values of an integer tensor.
fn index_values(what: &str, idx: &Tensor) -> Result<Vec<i128>, TensorError> {
    match idx.data.lanes() {
        Lanes::I(v) => Ok(v),
        _ => invalid(format!("{what}: indices are {}, not an integer dtype", idx.dtype())),
    }
}

/// Shape of `take(table, idx, axis)`: `table.shape[:axis] + idx.shape + table.shape[axis+1:]`.
fn take_shape(what: &str, table: &Tensor, idx: &Tensor, axis: usize) -> Result<Vec<usize>, TensorError> {
    if axis >= table.rank() {
        return invalid(format!("{what}: axis {axis} out of range for rank {}", table.rank()));
    }
    Ok([&table.shape[..axis], &idx.shape[..], &table.shape[axis + 1..]].concat())
}

/// `gather` (numpy `take` along `axis`): out-of-range indices are clamped into
/// `[0, n-1]`; negative indices do not wrap around.
pub fn gather(table: &Tensor, idx: &Tensor, axis: usize) -> Result<Tensor, TensorError> {
    let shape = take_shape("gather", table, idx, axis)?;
    let iv = index_values("gather", idx)?;
    let n = table.shape[axis];
    let outer: usize = table.shape[..axis].iter().product();
    let inner: usize = table.shape[axis + 1..].iter().product();
    if n == 0 && outer * iv.len() * inner > 0 {
        return invalid("gather: indexing into an empty axis");
    }
    let mut map = Vec::with_capacity(outer * iv.len() * inner);
    for o in 0..outer {
        for &k in &iv {
            let k = k.clamp(0, n as i128 - 1) as usize;
            map.extend((0..inner).map(|j| (o * n + k) * inner + j));
        }
    }
    Ok(Tensor::new(shape, table.data.take(&map)))
}

/// `scatter_add`: [`scatter`] with kind `add` (the spec's name for it).
pub fn scatter_add(base: &Tensor, idx: &Tensor, updates: &Tensor, axis: usize) -> Result<Tensor, TensorError> {
    scatter(base, idx, updates, axis, ScatterKind::Add)
}

/// `scatter`: `base` with each slice of `updates` (shaped like the matching
/// [`gather`] result) combined into it at its index along `axis`;
/// out-of-range indices (negative or >= n) are dropped. `set` moves the
/// update in bit for bit, and of duplicate indices the update last in
/// row-major order of the index array wins. `add`, `mul`, `max` and `min`
/// combine the base with every update at that position in that order, as
/// their reductions do (floats in f64 rounded once at the end, so bf16/f16
/// accumulate wider than f32; integers wrap; max/min propagate NaN and order
/// -0.0 below +0.0; on pred add/max are or, mul/min are and).
pub fn scatter(base: &Tensor, idx: &Tensor, updates: &Tensor, axis: usize, kind: ScatterKind) -> Result<Tensor, TensorError> {
    let what = format!("scatter {{kind={kind}}}");
    let shape = take_shape(&what, base, idx, axis)?;
    if updates.shape != shape || updates.dtype() != base.dtype() {
        return invalid(format!(
            "{what}: updates {}{:?} should be {}{shape:?}",
            updates.dtype(),
            updates.shape,
            base.dtype()
        ));
    }
    let iv = index_values(&what, idx)?;
    let n = base.shape[axis];
    let outer: usize = base.shape[..axis].iter().product();
    let inner: usize = base.shape[axis + 1..].iter().product();
    // (destination in base, source in updates) for every kept update element,
    // in row-major order of the updates (so of the index array for one
    // destination).
    let mut pairs = Vec::with_capacity(updates.len());
    for o in 0..outer {
        for (ki, &k) in iv.iter().enumerate() {
            if k < 0 || k >= n as i128 {
                continue;
            }
            let (dst, src) = ((o * n + k as usize) * inner, (o * iv.len() + ki) * inner);
            pairs.extend((0..inner).map(|j| (dst + j, src + j)));
        }
    }
    let Some(k) = kind.reduce_kind() else {
        // set: element t of the result reads base[t] or, past base, an update.
        let mut map: Vec<usize> = (0..base.len()).collect();
        pairs.iter().for_each(|&(t, s)| map[t] = base.len() + s);
        return Ok(Tensor::new(base.shape.clone(), concat_bufs(&[&base.data, &updates.data]).take(&map)));
    };
    let d = base.dtype();
    let data = match (base.data.lanes(), updates.data.lanes()) {
        (Lanes::F(mut acc), Lanes::F(u)) => {
            pairs.iter().for_each(|&(t, s)| acc[t] = k.f_apply(acc[t], u[s]));
            Buf::from_lanes(d, Lanes::F(acc))
        }
        (Lanes::I(mut acc), Lanes::I(u)) => {
            pairs.iter().for_each(|&(t, s)| acc[t] = k.i_apply(acc[t], u[s]));
            Buf::from_lanes(d, Lanes::I(acc))
        }
        (Lanes::P(mut acc), Lanes::P(u)) => {
            pairs.iter().for_each(|&(t, s)| acc[t] = k.p_apply(acc[t], u[s]));
            Buf::Pred(acc)
        }
        _ => unreachable!("operands of one dtype widen to one lane class"),
    };
    Ok(Tensor::new(base.shape.clone(), data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;

    #[test]
    fn transpose_is_the_gather_through_the_permuted_strides() {
        // permute's odometer against the definition: element c of the result is
        // element sum(c[i] * strides[perm[i]]) of the input.
        for (shape, perm) in [
            (vec![4, 3, 5], vec![0, 2, 1]),
            (vec![2, 3, 4, 5], vec![3, 1, 0, 2]),
            (vec![6], vec![0]),
            (vec![1, 7, 1], vec![2, 0, 1]),
            (vec![3, 0, 2], vec![2, 1, 0]),
            (vec![], vec![]),
            // Larger than the tiles, with partial tiles at the edges.
            (vec![37, 21], vec![1, 0]),
            (vec![3, 19, 18, 35], vec![3, 1, 2, 0]),
            (vec![5, 33, 17], vec![0, 2, 1]),
            (vec![2, 17, 3, 40], vec![0, 3, 2, 1]),
        ] {
            let n: usize = shape.iter().product();
            let a = Tensor::new(shape.clone(), Buf::I64((0..n as i64).map(|x| x * 7 - 3).collect()));
            let st = strides(&shape);
            let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
            let steps: Vec<isize> = perm.iter().map(|&p| st[p] as isize).collect();
            let want = Tensor::new(out_shape, a.data.take(&affine_map(&perm.iter().map(|&p| shape[p]).collect::<Vec<_>>(), 0, &steps)));
            assert_eq!(transpose(&a, &perm).unwrap(), want, "{shape:?} {perm:?}");
            let p = Tensor::new(shape.clone(), Buf::Pred((0..n).map(|x| x % 3 == 0).collect()));
            assert_eq!(transpose(&p, &perm).unwrap().data, p.data.take(&affine_map(&want.shape, 0, &steps)), "pred {shape:?} {perm:?}");
        }
    }

    /// A 3-D i32 tensor whose element at (i, j, k) is 100*i + 10*j + k.
    fn cube(s: [usize; 3]) -> Tensor {
        let mut v = vec![];
        for i in 0..s[0] {
            for j in 0..s[1] {
                for k in 0..s[2] {
                    v.push((100 * i + 10 * j + k) as i32);
                }
            }
        }
        Tensor::new(s.to_vec(), Buf::I32(v))
    }
    fn i32s(t: &Tensor) -> Vec<i32> {
        match &t.data {
            Buf::I32(v) => v.clone(),
            b => panic!("not i32: {b:?}"),
        }
    }
    fn scalar_i32(x: i32) -> Tensor {
        Tensor::new(vec![], Buf::I32(vec![x]))
    }

    #[test]
    fn broadcast_stretches_and_inserts() {
        let a = Tensor::new(vec![3], Buf::I32(vec![1, 2, 3]));
        let r = broadcast(&a, &[1], &[2, 3]).unwrap();
        assert_eq!(i32s(&r), [1, 2, 3, 1, 2, 3]);
        let r = broadcast(&a, &[0], &[3, 2]).unwrap();
        assert_eq!(i32s(&r), [1, 1, 2, 2, 3, 3]);
        let c = Tensor::new(vec![1, 3], Buf::I32(vec![7, 8, 9]));
        let r = broadcast(&c, &[0, 2], &[2, 2, 3]).unwrap();
        assert_eq!(i32s(&r), [7, 8, 9, 7, 8, 9, 7, 8, 9, 7, 8, 9]);
        let r = broadcast(&scalar_i32(5), &[], &[2, 1, 3]).unwrap();
        assert_eq!(r.shape, [2, 1, 3]);
        assert_eq!(i32s(&r), [5; 6]);
        assert!(broadcast(&a, &[0], &[4]).is_err());
        assert!(broadcast(&a, &[2], &[3, 3]).is_err());
        assert!(broadcast(&c, &[1, 1], &[3, 3]).is_err());
    }

    #[test]
    fn reshape_and_transpose() {
        let a = cube([2, 3, 5]);
        let r = reshape(&a, &[6, 5]).unwrap();
        assert_eq!(r.data, a.data);
        assert!(reshape(&a, &[7, 5]).is_err());
        let t = transpose(&a, &[2, 0, 1]).unwrap();
        assert_eq!(t.shape, [5, 2, 3]);
        // t[k, i, j] = a[i, j, k]
        for k in 0..5 {
            for i in 0..2 {
                for j in 0..3 {
                    assert_eq!(i32s(&t)[k * 6 + i * 3 + j], (100 * i + 10 * j + k) as i32);
                }
            }
        }
        assert_eq!(i32s(&t)[..4], [0, 10, 20, 100]);
        assert!(transpose(&a, &[0, 0, 1]).is_err());
    }

    #[test]
    fn slice_with_strides() {
        let a = cube([3, 5, 7]);
        let r = slice(&a, &[1, 0, 1], &[3, 5, 7], &[1, 2, 3]).unwrap();
        assert_eq!(r.shape, [2, 3, 2]);
        assert_eq!(i32s(&r), [101, 104, 121, 124, 141, 144, 201, 204, 221, 224, 241, 244]);
        let r = slice(&a, &[2, 4, 6], &[3, 5, 7], &[1, 1, 1]).unwrap();
        assert_eq!(i32s(&r), [246]);
        assert!(slice(&a, &[0, 0, 0], &[4, 5, 7], &[1, 1, 1]).is_err());
        assert!(slice(&a, &[0, 0, 0], &[3, 5, 7], &[1, 0, 1]).is_err());
    }

    #[test]
    fn concat_along_each_dim() {
        let a = cube([1, 2, 3]);
        let b = Tensor::new(vec![1, 1, 3], Buf::I32(vec![-1, -2, -3]));
        let r = concat(&[&a, &b], 1).unwrap();
        assert_eq!(r.shape, [1, 3, 3]);
        assert_eq!(i32s(&r), [0, 1, 2, 10, 11, 12, -1, -2, -3]);
        let c = Tensor::new(vec![1, 2, 1], Buf::I32(vec![-7, -8]));
        let r = concat(&[&a, &c, &c], 2).unwrap();
        assert_eq!(i32s(&r), [0, 1, 2, -7, -7, 10, 11, 12, -8, -8]);
        let r = concat(&[&a, &a, &a], 0).unwrap();
        assert_eq!(r.shape, [3, 2, 3]);
        assert_eq!(i32s(&r)[12..], [0, 1, 2, 10, 11, 12]);
        assert!(concat(&[&a, &b], 0).is_err());
        assert!(concat(&[], 0).is_err());
    }

    #[test]
    fn stack_and_index_along_invert_each_other() {
        let a = cube([2, 3, 4]);
        for dim in 0..3 {
            let parts: Vec<Tensor> = (0..a.shape[dim]).map(|i| index_along(&a, dim, i).unwrap()).collect();
            assert_eq!(parts[1].rank(), 2);
            let refs: Vec<&Tensor> = parts.iter().collect();
            assert_eq!(stack(&refs, dim).unwrap(), a, "dim {dim}");
        }
        // index_along(a, 1, 2)[i, k] = a[i, 2, k]
        assert_eq!(i32s(&index_along(&a, 1, 2).unwrap()), [20, 21, 22, 23, 120, 121, 122, 123]);
        let s = scalar_i32(4);
        let st = stack(&[&s, &scalar_i32(5)], 0).unwrap();
        assert_eq!((st.shape.clone(), i32s(&st)), (vec![2], vec![4, 5]));
        assert_eq!(index_along(&st, 0, 1).unwrap(), scalar_i32(5));
        assert!(index_along(&a, 0, 2).is_err());
        assert!(index_along(&a, 3, 0).is_err());
        assert!(stack(&[&a, &index_along(&a, 0, 0).unwrap()], 0).is_err());
        assert!(stack(&[&a], 4).is_err());
        assert!(stack(&[], 0).is_err());
    }

    #[test]
    fn dynamic_slices_clamp() {
        let a = cube([3, 5, 7]);
        let r = dynamic_slice(&a, &[1, -4, 100], &[2, 2, 3]).unwrap();
        // starts clamp to (1, 0, 4)
        assert_eq!(i32s(&r), [104, 105, 106, 114, 115, 116, 204, 205, 206, 214, 215, 216]);
        let upd = Tensor::new(vec![1, 2, 2], Buf::I32(vec![-1, -2, -3, -4]));
        let r = dynamic_update_slice(&a, &upd, &[i128::MAX, 3, -1]).unwrap();
        // starts clamp to (2, 3, 0)
        let v = i32s(&r);
        assert_eq!(v[2 * 35 + 3 * 7..2 * 35 + 3 * 7 + 3], [-1, -2, 202 + 30]);
        assert_eq!(v[2 * 35 + 4 * 7..2 * 35 + 4 * 7 + 2], [-3, -4]);
        let changed = v.iter().zip(i32s(&a)).filter(|(x, y)| **x != *y).count();
        assert_eq!(changed, 4);
        assert!(dynamic_slice(&a, &[0, 0, 0], &[4, 1, 1]).is_err());
    }

    #[test]
    fn pad_edges_interior_and_negative() {
        let a = Tensor::new(vec![3], Buf::I32(vec![1, 2, 3]));
        let r = pad(&a, &scalar_i32(0), &[2], &[1], &[1]).unwrap();
        assert_eq!(i32s(&r), [0, 0, 1, 0, 2, 0, 3, 0]);
        let r = pad(&a, &scalar_i32(9), &[-1], &[-1], &[2]).unwrap();
        assert_eq!(i32s(&r), [9, 9, 2, 9, 9]);
        let r = pad(&a, &scalar_i32(9), &[-3], &[0], &[0]).unwrap();
        assert_eq!(r.shape, [0]);
        assert!(pad(&a, &scalar_i32(9), &[-3], &[-1], &[0]).is_err());
        // 3-D with odd sizes: pad dim 0 low 1, crop dim 1 high 1, interior on dim 2.
        let c = cube([1, 3, 3]);
        let r = pad(&c, &scalar_i32(-1), &[1, 0, 0], &[0, -1, 1], &[0, 0, 1]).unwrap();
        assert_eq!(r.shape, [2, 2, 6]);
        let v = i32s(&r);
        assert_eq!(v[..12], [-1; 12]);
        assert_eq!(v[12..], [0, -1, 1, -1, 2, -1, 10, -1, 11, -1, 12, -1]);
        assert!(pad(&a, &Tensor::new(vec![1], Buf::I32(vec![0])), &[0], &[0], &[0]).is_err());
    }

    #[test]
    fn reverse_dims() {
        let a = cube([2, 3, 3]);
        let r = reverse(&a, &[0, 2]).unwrap();
        assert_eq!(i32s(&r)[..6], [102, 101, 100, 112, 111, 110]);
        assert_eq!(i32s(&r)[15..], [22, 21, 20]);
        assert_eq!(reverse(&a, &[]).unwrap(), a);
        assert!(reverse(&a, &[1, 1]).is_err());
    }

    #[test]
    fn gather_clamps_indices() {
        let t = cube([3, 5, 2]);
        let idx = Tensor::new(vec![2, 2], Buf::I64(vec![4, -1, 9, 2]));
        let r = gather(&t, &idx, 1).unwrap();
        assert_eq!(r.shape, [3, 2, 2, 2]);
        let v = i32s(&r);
        assert_eq!(v[..8], [40, 41, 0, 1, 40, 41, 20, 21]);
        assert_eq!(v[16..], [240, 241, 200, 201, 240, 241, 220, 221]);
        let idx = Tensor::new(vec![], Buf::U8(vec![1]));
        let r = gather(&t, &idx, 0).unwrap();
        assert_eq!(r.shape, [5, 2]);
        assert_eq!(i32s(&r)[..3], [100, 101, 110]);
        assert!(gather(&t, &Tensor::new(vec![1], Buf::F32(vec![0.0])), 0).is_err());
        assert!(gather(&t, &idx, 3).is_err());
    }

    #[test]
    fn scatter_add_accumulates_and_drops() {
        let base = Tensor::new(vec![2, 3], Buf::I32(vec![0, 0, 0, 100, 100, 100]));
        let idx = Tensor::new(vec![4], Buf::I32(vec![2, 2, -1, 3]));
        let upd = Tensor::new(vec![2, 4], Buf::I32(vec![1, 2, 50, 60, 3, 4, 70, 80]));
        let r = scatter_add(&base, &idx, &upd, 1).unwrap();
        assert_eq!(i32s(&r), [0, 0, 3, 100, 100, 107]);
        // Integers wrap.
        let base = Tensor::new(vec![1], Buf::I8(vec![120]));
        let r = scatter_add(
            &base,
            &Tensor::new(vec![2], Buf::U32(vec![0, 0])),
            &Tensor::new(vec![2], Buf::I8(vec![5, 5])),
            0,
        )
        .unwrap();
        assert_eq!(r.data, Buf::I8(vec![-126]));
        // bf16 accumulates wide and rounds once: 256 + 1 + 1 = 258 exactly; adding
        // one at a time in bf16 would stay at 256.
        let b = |v: &[f32]| Buf::BF16(v.iter().map(|&x| bf16::from_f32(x)).collect());
        let base = Tensor::new(vec![1], b(&[256.0]));
        let r =
            scatter_add(&base, &Tensor::new(vec![2], Buf::I64(vec![0, 0])), &Tensor::new(vec![2], b(&[1.0, 1.0])), 0)
                .unwrap();
        assert_eq!(r.data, b(&[258.0]));
        // pred ORs.
        let base = Tensor::new(vec![2], Buf::Pred(vec![false, false]));
        let r = scatter_add(
            &base,
            &Tensor::new(vec![2], Buf::I32(vec![1, 1])),
            &Tensor::new(vec![2], Buf::Pred(vec![true, false])),
            0,
        )
        .unwrap();
        assert_eq!(r.data, Buf::Pred(vec![false, true]));
        // Wrong updates shape.
        assert!(scatter_add(&base, &Tensor::new(vec![3], Buf::I32(vec![1, 1, 1])), &base, 0).is_err());
    }

    #[test]
    fn scatter_set_last_duplicate_wins_bit_for_bit() {
        // Index 1 three times (positions 0, 2, 3 of the index array), 7 and -1
        // dropped; along axis 1 of a [2, 3] base, so each row picks its own.
        let base = Tensor::new(vec![2, 3], Buf::F32(vec![0.5; 6]));
        let idx = Tensor::new(vec![2, 2], Buf::I32(vec![1, 7, 1, 1]));
        let nan = f32::from_bits(0x7FC0_1234);
        let upd = Tensor::new(vec![2, 2, 2], Buf::F32(vec![1.0, 2.0, 3.0, -0.0, 5.0, 6.0, 7.0, nan]));
        let r = scatter(&base, &idx, &upd, 1, ScatterKind::Set).unwrap();
        let Buf::F32(v) = &r.data else { panic!() };
        let bits: Vec<u32> = v.iter().map(|x| x.to_bits()).collect();
        assert_eq!(bits, [0.5f32, -0.0, 0.5, 0.5, f32::from_bits(0x7FC0_1234), 0.5].map(f32::to_bits));
        // pred set: the later false wins over the earlier true; 3 is dropped.
        let base = Tensor::new(vec![3], Buf::Pred(vec![true, true, true]));
        let r = scatter(
            &base,
            &Tensor::new(vec![3], Buf::I64(vec![0, 3, 0])),
            &Tensor::new(vec![3], Buf::Pred(vec![true, true, false])),
            0,
            ScatterKind::Set,
        )
        .unwrap();
        assert_eq!(r.data, Buf::Pred(vec![false, true, true]));
    }

    #[test]
    fn scatter_mul_max_min() {
        let idx = Tensor::new(vec![3], Buf::U32(vec![0, 0, 2]));
        // Integers: mul wraps, max/min exact.
        let base = Tensor::new(vec![3], Buf::I8(vec![3, 9, -4]));
        let upd = Tensor::new(vec![3], Buf::I8(vec![10, 5, 100]));
        assert_eq!(scatter(&base, &idx, &upd, 0, ScatterKind::Mul).unwrap().data, Buf::I8(vec![-106, 9, 112])); // 150 - 256, -400 + 512
        assert_eq!(scatter(&base, &idx, &upd, 0, ScatterKind::Max).unwrap().data, Buf::I8(vec![10, 9, 100]));
        assert_eq!(scatter(&base, &idx, &upd, 0, ScatterKind::Min).unwrap().data, Buf::I8(vec![3, 9, -4]));
        // Floats: NaN propagates, -0.0 orders below +0.0.
        let base = Tensor::new(vec![3], Buf::F32(vec![-0.0, 1.0, 0.0]));
        let upd = Tensor::new(vec![3], Buf::F32(vec![0.0, f32::NAN, -0.0]));
        let Buf::F32(mx) = scatter(&base, &idx, &upd, 0, ScatterKind::Max).unwrap().data else { panic!() };
        assert!(mx[0].is_nan() && mx[1] == 1.0 && mx[2].to_bits() == 0);
        let Buf::F32(mn) = scatter(&base, &idx, &upd, 0, ScatterKind::Min).unwrap().data else { panic!() };
        assert!(mn[0].is_nan() && mn[2].to_bits() == 0x8000_0000);
        // bf16 products round once at the end: 1.0078125 * 1.0234375 * 1.125
        // is 1.1640625 in bf16, but 1.15625 when each product is rounded.
        let b = |v: &[f32]| Buf::BF16(v.iter().map(|&x| bf16::from_f32(x)).collect());
        let two = Tensor::new(vec![2], Buf::I32(vec![0, 0]));
        let r = scatter(&Tensor::new(vec![1], b(&[1.0078125])), &two, &Tensor::new(vec![2], b(&[1.0234375, 1.125])), 0, ScatterKind::Mul)
            .unwrap();
        assert_eq!(r.data, b(&[1.1640625]));
        // pred: mul/min are and, max is or.
        let base = Tensor::new(vec![2], Buf::Pred(vec![true, false]));
        let pi = Tensor::new(vec![2], Buf::I32(vec![0, 1]));
        let pu = Tensor::new(vec![2], Buf::Pred(vec![false, true]));
        assert_eq!(scatter(&base, &pi, &pu, 0, ScatterKind::Mul).unwrap().data, Buf::Pred(vec![false, false]));
        assert_eq!(scatter(&base, &pi, &pu, 0, ScatterKind::Min).unwrap().data, Buf::Pred(vec![false, false]));
        assert_eq!(scatter(&base, &pi, &pu, 0, ScatterKind::Max).unwrap().data, Buf::Pred(vec![true, true]));
    }

    #[test]
    fn scatter_add_3d_middle_axis() {
        let base = Tensor::new(vec![2, 3, 3], Buf::F32(vec![0.0; 18]));
        let idx = Tensor::new(vec![2], Buf::I64(vec![1, 1]));
        let upd = Tensor::new(vec![2, 2, 3], Buf::F32((1..=12).map(|x| x as f32).collect()));
        let r = scatter_add(&base, &idx, &upd, 1).unwrap();
        let Buf::F32(v) = r.data else { panic!() };
        assert_eq!(v[3..6], [5.0, 7.0, 9.0]);
        assert_eq!(v[12..15], [17.0, 19.0, 21.0]);
        assert_eq!(v.iter().sum::<f32>(), 78.0);
    }
}
