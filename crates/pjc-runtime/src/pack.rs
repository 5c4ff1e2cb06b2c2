//! Byte-level data movement for collectives and sharding: cutting a row-major
//! array into equal chunks along any dimension and laying them out one after
//! the other (what MPI's all-to-all and gather calls send), the inverse
//! (concatenating received chunks along a dimension), and copying rectangular
//! blocks in and out of a row-major array (a device's shard of a global
//! array). Elements are opaque `esize`-byte units, so one code path serves
//! every dtype (pred is one byte).

/// (elements before `dim`, size of `dim`, elements after `dim`).
fn split3(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    let outer = shape[..dim].iter().product();
    let inner = shape[dim + 1..].iter().product();
    (outer, shape[dim], inner)
}

/// Cuts dimension `dim` of the row-major array `src` (shape `shape`) into `n`
/// equal chunks and returns them back to back: chunk `j` is the row-major
/// array `src[.., j*c..(j+1)*c, ..]` with `c = shape[dim] / n`.
///
/// When `dim` is the leading non-trivial dimension this is the identity
/// (the chunks are already contiguous).
pub fn pack_chunks(src: &[u8], shape: &[usize], dim: usize, n: usize, esize: usize) -> Vec<u8> {
    let (outer, d, inner) = split3(shape, dim);
    debug_assert_eq!(d % n, 0);
    debug_assert_eq!(src.len(), outer * d * inner * esize);
    if outer == 1 || n == 1 {
        return src.to_vec();
    }
    let c = d / n;
    let row = c * inner * esize;
    let mut out = vec![0u8; src.len()];
    for j in 0..n {
        for o in 0..outer {
            let s = (o * d + j * c) * inner * esize;
            let t = (j * outer + o) * row;
            out[t..t + row].copy_from_slice(&src[s..s + row]);
        }
    }
    out
}

/// The inverse of [`pack_chunks`]: `packed` holds `n` row-major chunks of
/// shape `chunk_shape` back to back; returns their concatenation along `dim`
/// (chunk `j` at `[.., j*c..(j+1)*c, ..]`).
pub fn concat_chunks(packed: &[u8], chunk_shape: &[usize], dim: usize, n: usize, esize: usize) -> Vec<u8> {
    let (outer, c, inner) = split3(chunk_shape, dim);
    debug_assert_eq!(packed.len(), n * outer * c * inner * esize);
    if outer == 1 || n == 1 {
        return packed.to_vec();
    }
    let row = c * inner * esize;
    let mut out = vec![0u8; packed.len()];
    for j in 0..n {
        for o in 0..outer {
            let t = (o * n * c + j * c) * inner * esize;
            let s = (j * outer + o) * row;
            out[t..t + row].copy_from_slice(&packed[s..s + row]);
        }
    }
    out
}

/// Calls `f(offset_in_array, offset_in_block, run_bytes)` for every contiguous
/// run of the block `start..start+size` of a row-major array of `shape`.
fn for_each_run(shape: &[usize], esize: usize, start: &[usize], size: &[usize], mut f: impl FnMut(usize, usize, usize)) {
    let rank = shape.len();
    if size.contains(&0) {
        return;
    }
    // Trailing dimensions taken whole merge into one contiguous run.
    let mut k = rank;
    while k > 0 && start[k - 1] == 0 && size[k - 1] == shape[k - 1] {
        k -= 1;
    }
    // Dimension k-1 (if any) is partial: the run covers size[k-1] of it.
    let tail: usize = shape[k..].iter().product();
    let (outer_dims, run_elems) = if k == 0 { (0, tail) } else { (k - 1, size[k - 1] * tail) };
    let mut strides = vec![1usize; rank];
    for d in (0..rank.saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    let run = run_elems * esize;
    let count: usize = size[..outer_dims].iter().product();
    let mut idx = vec![0usize; outer_dims];
    for r in 0..count {
        let mut off = 0;
        for d in 0..outer_dims {
            off += (start[d] + idx[d]) * strides[d];
        }
        if k > 0 {
            off += start[k - 1] * strides[k - 1];
        }
        f(off * esize, r * run, run);
        for d in (0..outer_dims).rev() {
            idx[d] += 1;
            if idx[d] < size[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// The block `start..start+size` of the row-major array `src` (shape `shape`).
pub fn extract_block(src: &[u8], shape: &[usize], esize: usize, start: &[usize], size: &[usize]) -> Vec<u8> {
    let n: usize = size.iter().product();
    let mut out = vec![0u8; n * esize];
    for_each_run(shape, esize, start, size, |a, b, len| out[b..b + len].copy_from_slice(&src[a..a + len]));
    out
}

/// Writes `block` (row-major, shape `size`) at `start` into the row-major array `dst`.
pub fn insert_block(dst: &mut [u8], shape: &[usize], esize: usize, start: &[usize], size: &[usize], block: &[u8]) {
    for_each_run(shape, esize, start, size, |a, b, len| dst[a..a + len].copy_from_slice(&block[b..b + len]));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row-major array of `shape` whose element at linear index i is i (u16 LE).
    fn iota(shape: &[usize]) -> Vec<u8> {
        let n: usize = shape.iter().product();
        (0..n as u16).flat_map(|i| i.to_le_bytes()).collect()
    }
    fn vals(b: &[u8]) -> Vec<u16> {
        b.chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
    }

    #[test]
    fn pack_non_leading_dim() {
        // [2,4] cut along dim 1 into 2 chunks: [[0,1],[4,5]] then [[2,3],[6,7]].
        let p = pack_chunks(&iota(&[2, 4]), &[2, 4], 1, 2, 2);
        assert_eq!(vals(&p), vec![0, 1, 4, 5, 2, 3, 6, 7]);
        // Leading dim: identity.
        assert_eq!(pack_chunks(&iota(&[4, 2]), &[4, 2], 0, 2, 2), iota(&[4, 2]));
        // Round trip through concat.
        for (shape, dim) in [(vec![2, 6, 3], 1usize), (vec![3, 2, 4], 2), (vec![4, 3], 0), (vec![1, 4, 2], 1)] {
            let n = 2;
            let src = iota(&shape);
            let p = pack_chunks(&src, &shape, dim, n, 2);
            let mut cs = shape.clone();
            cs[dim] /= n;
            assert_eq!(concat_chunks(&p, &cs, dim, n, 2), src, "{shape:?} dim {dim}");
        }
    }

    #[test]
    fn concat_along_dim1() {
        // Two [2,1] chunks [[0],[1]] and [[2],[3]] along dim 1: [[0,2],[1,3]].
        let packed: Vec<u8> = [0u16, 1, 2, 3].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(vals(&concat_chunks(&packed, &[2, 1], 1, 2, 2)), vec![0, 2, 1, 3]);
    }

    #[test]
    fn blocks() {
        let shape = [3, 4, 2];
        let src = iota(&shape);
        let b = extract_block(&src, &shape, 2, &[1, 2, 0], &[2, 2, 2]);
        assert_eq!(vals(&b), vec![12, 13, 14, 15, 20, 21, 22, 23]);
        let b = extract_block(&src, &shape, 2, &[0, 1, 1], &[3, 1, 1]);
        assert_eq!(vals(&b), vec![3, 11, 19]);
        let whole = extract_block(&src, &shape, 2, &[0, 0, 0], &shape);
        assert_eq!(whole, src);
        let mut dst = vec![0u8; src.len()];
        for i in 0..3 {
            for j in 0..2 {
                let (st, sz) = ([i, j * 2, 0], [1, 2, 2]);
                let blk = extract_block(&src, &shape, 2, &st, &sz);
                insert_block(&mut dst, &shape, 2, &st, &sz, &blk);
            }
        }
        assert_eq!(dst, src);
        // Scalars.
        let s = 7u16.to_le_bytes().to_vec();
        assert_eq!(extract_block(&s, &[], 2, &[], &[]), s);
    }
}
