//! The pure arithmetic of the CUDA backend, kept apart from the driver calls
//! so that a machine without a GPU can test it: launch shapes of the
//! generated kernels, the strided 2-D copies that pack chunks of a
//! non-leading dimension for NCCL (the device-side twin of `pack.rs`), and
//! the mapping of a row-major (batched) matrix product onto column-major
//! cuBLAS arguments.

/// Threads per block of an elementwise kernel (any size works for them).
pub const ELEMENTWISE_BLOCK: u32 = 256;

/// `(grid, block)` to launch a generated kernel over `points` output points
/// (`None`: nothing to do). `max_blocks` caps the grid; both kernel kinds
/// stride over the rest (see `pjc_codegen::ptx`).
///
/// - Elementwise (`required_block` None): 256 threads per block and enough
///   blocks for `ceil(points / vector_width)` threads.
/// - Reductions (`required_block` Some(b)): blocks of `b`, one block per
///   output point up to the cap.
pub fn launch_geometry(points: u64, vector_width: u32, required_block: Option<u32>, max_blocks: u32) -> Option<(u32, u32)> {
    if points == 0 {
        return None;
    }
    let cap = u64::from(max_blocks.max(1));
    match required_block {
        Some(block) => Some((points.min(cap) as u32, block)),
        None => {
            let threads = points.div_ceil(u64::from(vector_width.max(1)));
            let blocks = threads.div_ceil(u64::from(ELEMENTWISE_BLOCK));
            Some((blocks.min(cap) as u32, ELEMENTWISE_BLOCK))
        }
    }
}

/// The grid cap for a device with `sm_count` multiprocessors: enough blocks to
/// fill every SM several times over, beyond which grid-striding is as fast.
pub fn max_blocks(sm_count: u32) -> u32 {
    (sm_count.max(1) * 32).min(65_535)
}

/// One strided copy (`cuMemcpy2DAsync`): `height` rows of `width` bytes, row
/// r from `src + src_off + r * src_pitch` to `dst + dst_off + r * dst_pitch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Copy2D {
    pub src_off: usize,
    pub src_pitch: usize,
    pub dst_off: usize,
    pub dst_pitch: usize,
    pub width: usize,
    pub height: usize,
}

/// (elements before `dim`, size of `dim`, elements after `dim`).
fn split3(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    (shape[..dim].iter().product(), shape[dim], shape[dim + 1..].iter().product())
}

/// The copies that do `pack::pack_chunks(src, shape, dim, n, esize)`: a
/// row-major array seen as `[outer, n, row]` becomes `[n, outer, row]` (one
/// copy per chunk). `None` when packing is the identity (the chunks are
/// already contiguous) or there is nothing to move.
pub fn pack_plan(shape: &[usize], dim: usize, n: usize, esize: usize) -> Option<Vec<Copy2D>> {
    let (outer, d, inner) = split3(shape, dim);
    if outer == 1 || n == 1 || outer * d * inner == 0 {
        return None;
    }
    let row = d / n * inner * esize;
    Some(
        (0..n)
            .map(|j| Copy2D { src_off: j * row, src_pitch: n * row, dst_off: j * outer * row, dst_pitch: row, width: row, height: outer })
            .collect(),
    )
}

/// The copies that do `pack::concat_chunks(packed, chunk_shape, dim, n,
/// esize)`: `[n, outer, row]` back to `[outer, n, row]`. `None` when it is the
/// identity or there is nothing to move.
pub fn concat_plan(chunk_shape: &[usize], dim: usize, n: usize, esize: usize) -> Option<Vec<Copy2D>> {
    let (outer, c, inner) = split3(chunk_shape, dim);
    if outer == 1 || n == 1 || outer * c * inner == 0 {
        return None;
    }
    let row = c * inner * esize;
    Some(
        (0..n)
            .map(|j| Copy2D { src_off: j * outer * row, src_pitch: row, dst_off: j * row, dst_pitch: n * row, width: row, height: outer })
            .collect(),
    )
}

/// Applies copies on host bytes (what the device does; for tests).
#[cfg(test)]
pub fn apply(plan: &[Copy2D], src: &[u8], dst: &mut [u8]) {
    for c in plan {
        for r in 0..c.height {
            let (s, d) = (c.src_off + r * c.src_pitch, c.dst_off + r * c.dst_pitch);
            dst[d..d + c.width].copy_from_slice(&src[s..s + c.width]);
        }
    }
}

/// A cuBLAS operand: transposed or not, and its leading dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    pub trans: bool,
    pub ld: usize,
}

/// How to pass the `rows x cols` matrix X with X(r, c) at `r * rs + c * cs`
/// as `op(X)` of column-major cuBLAS, if its strides allow it.
fn operand(rows: usize, cols: usize, rs: isize, cs: isize) -> Option<Operand> {
    let (rows1, cols1) = (rows.max(1), cols.max(1));
    // Not transposed: column-major with ld = cs needs unit row stride.
    if rs == 1 || rows <= 1 {
        let ld = if cols <= 1 { rows1 } else { usize::try_from(cs).ok()? };
        if ld >= rows1 {
            return Some(Operand { trans: false, ld });
        }
    }
    // Transposed: X^T (cols x rows) column-major with ld = rs.
    if cs == 1 || cols <= 1 {
        let ld = if rows <= 1 { cols1 } else { usize::try_from(rs).ok()? };
        if ld >= cols1 {
            return Some(Operand { trans: true, ld });
        }
    }
    None
}

/// One `cublas<S|D>gemmStridedBatched` call computing the row-major product
/// C[batch, m, n] = A[batch, m, k] B[batch, k, n] as its transpose,
/// C^T = B^T A^T, in column-major terms: cuBLAS's (m, n, k) are ours
/// (n, m, k), its A is our B and its B is our A.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmArgs {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// Our right operand (B).
    pub a: Operand,
    pub stride_a: usize,
    /// Our left operand (A).
    pub b: Operand,
    pub stride_b: usize,
    pub ldc: usize,
    pub stride_c: usize,
    pub batch: usize,
}

/// Maps `pjc_host::gemm::matmul_view`'s answer `(batch, m, k, n, lhs strides,
/// rhs strides)` (element strides: batch, row, column) onto cuBLAS, or `None`
/// when a stride pattern or a size does not fit (the caller falls back to the
/// host).
pub fn gemm_args(batch: usize, m: usize, k: usize, n: usize, sa: [isize; 3], sb: [isize; 3]) -> Option<GemmArgs> {
    // op(cuBLAS A) = B^T: n x k, element (j, l) = B(l, j) at l*sb[1] + j*sb[2].
    let a = operand(n, k, sb[2], sb[1])?;
    // op(cuBLAS B) = A^T: k x m, element (l, i) = A(i, l) at i*sa[1] + l*sa[2].
    let b = operand(k, m, sa[2], sa[1])?;
    let g = GemmArgs {
        m: n,
        n: m,
        k,
        a,
        stride_a: usize::try_from(sb[0]).ok()?,
        b,
        stride_b: usize::try_from(sa[0]).ok()?,
        ldc: n.max(1),
        stride_c: m * n,
        batch,
    };
    let fits = |x: usize| x <= i32::MAX as usize;
    let all = [g.m, g.n, g.k, g.a.ld, g.b.ld, g.ldc, g.batch];
    (all.iter().all(|&x| fits(x)) && [g.stride_a, g.stride_b, g.stride_c].iter().all(|&s| s <= i64::MAX as usize)).then_some(g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::{concat_chunks, pack_chunks};

    #[test]
    fn elementwise_and_reduction_launches() {
        assert_eq!(launch_geometry(0, 1, None, 1000), None);
        assert_eq!(launch_geometry(1, 1, None, 1000), Some((1, 256)));
        assert_eq!(launch_geometry(256, 1, None, 1000), Some((1, 256)));
        assert_eq!(launch_geometry(257, 1, None, 1000), Some((2, 256)));
        // Four points per thread: 1024 points need 256 threads.
        assert_eq!(launch_geometry(1024, 4, None, 1000), Some((1, 256)));
        assert_eq!(launch_geometry(1025, 4, None, 1000), Some((2, 256)));
        // Capped: the kernel grid-strides over the rest.
        assert_eq!(launch_geometry(1 << 40, 1, None, 4224), Some((4224, 256)));
        // Reductions: one block per output point, capped.
        assert_eq!(launch_geometry(7, 1, Some(256), 4224), Some((7, 256)));
        assert_eq!(launch_geometry(1 << 20, 1, Some(256), 4224), Some((4224, 256)));
        assert_eq!(max_blocks(132), 4224);
        assert_eq!(max_blocks(0), 32);
    }

    fn iota(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn copy_plans_match_host_packing() {
        let cases: &[(&[usize], usize, usize, usize)] = &[
            (&[2, 4], 1, 2, 2),
            (&[2, 6, 3], 1, 3, 4),
            (&[3, 2, 4], 2, 2, 1),
            (&[4, 3], 0, 2, 8),
            (&[1, 4, 2], 1, 2, 2),
            (&[5, 8], 1, 4, 4),
            (&[2, 3, 0], 1, 3, 4),
        ];
        for &(shape, dim, n, es) in cases {
            let bytes = shape.iter().product::<usize>() * es;
            let src = iota(bytes);
            let want = pack_chunks(&src, shape, dim, n, es);
            let mut got = src.clone();
            if let Some(p) = pack_plan(shape, dim, n, es) {
                got = vec![0; bytes];
                apply(&p, &src, &mut got);
            }
            assert_eq!(got, want, "pack {shape:?} dim {dim} n {n}");

            let mut chunk = shape.to_vec();
            chunk[dim] /= n;
            let want = concat_chunks(&src, &chunk, dim, n, es);
            let mut got = src.clone();
            if let Some(p) = concat_plan(&chunk, dim, n, es) {
                got = vec![0; bytes];
                apply(&p, &src, &mut got);
            }
            assert_eq!(got, want, "concat {chunk:?} dim {dim} n {n}");
        }
        // Leading dims and single chunks need no copies.
        assert_eq!(pack_plan(&[4, 3], 0, 2, 4), None);
        assert_eq!(pack_plan(&[4, 3], 1, 1, 4), None);
        assert_eq!(pack_plan(&[1, 1, 6], 2, 3, 4), None);
    }

    /// Column-major `C = op(A) op(B)` (what cuBLAS computes), batched.
    fn cublas_reference(g: &GemmArgs, a: &[f64], b: &[f64]) -> Vec<f64> {
        let mut c = vec![0.0; g.batch * g.stride_c.max(g.m * g.n)];
        let at = |x: &[f64], o: Operand, base: usize, r: usize, col: usize| {
            if o.trans {
                x[base + col + r * o.ld]
            } else {
                x[base + r + col * o.ld]
            }
        };
        for bi in 0..g.batch {
            for i in 0..g.m {
                for j in 0..g.n {
                    let s: f64 = (0..g.k).map(|l| at(a, g.a, bi * g.stride_a, i, l) * at(b, g.b, bi * g.stride_b, l, j)).sum();
                    c[bi * g.stride_c + i + j * g.ldc] = s;
                }
            }
        }
        c
    }

    #[test]
    fn gemm_mapping_computes_the_row_major_product() {
        use pjc_host::gemm::matmul_view;
        // (lhs shape, rhs shape, lhs batch, rhs batch, lhs contract, rhs contract)
        type Case<'a> = (&'a [usize], &'a [usize], &'a [usize], &'a [usize], &'a [usize], &'a [usize]);
        let cases: &[Case] = &[
            (&[2, 3], &[3, 4], &[], &[], &[1], &[0]),
            (&[3, 2], &[3, 4], &[], &[], &[0], &[0]),
            (&[2, 3], &[4, 3], &[], &[], &[1], &[1]),
            (&[3, 2], &[4, 3], &[], &[], &[0], &[1]),
            (&[5, 2, 3], &[5, 3, 4], &[0], &[0], &[2], &[1]),
            (&[5, 3, 2], &[5, 4, 3], &[0], &[0], &[1], &[2]),
            (&[3], &[3, 4], &[], &[], &[0], &[0]),
            (&[2, 3], &[3], &[], &[], &[1], &[0]),
            (&[3], &[3], &[], &[], &[0], &[0]),
            (&[2, 1, 3], &[2, 3, 1], &[0], &[0], &[2], &[1]),
            (&[4, 3], &[3], &[], &[], &[1], &[0]),
        ];
        for &(a, b, lb, rb, lc, rc) in cases {
            let (batch, m, k, n, sa, sb) = matmul_view(a, b, lb, rb, lc, rc).unwrap();
            let g = gemm_args(batch, m, k, n, sa, sb).unwrap_or_else(|| panic!("{a:?} x {b:?}"));
            let av: Vec<f64> = (0..a.iter().product::<usize>()).map(|i| (i as f64) * 0.5 - 1.0).collect();
            let bv: Vec<f64> = (0..b.iter().product::<usize>()).map(|i| (i as f64) * 0.25 + 2.0).collect();
            // Row-major reference from the view's strides.
            let mut want = vec![0.0; batch * m * n];
            for bi in 0..batch {
                for i in 0..m {
                    for j in 0..n {
                        want[bi * m * n + i * n + j] = (0..k)
                            .map(|l| {
                                let x = av[(bi as isize * sa[0] + i as isize * sa[1] + l as isize * sa[2]) as usize];
                                let y = bv[(bi as isize * sb[0] + l as isize * sb[1] + j as isize * sb[2]) as usize];
                                x * y
                            })
                            .sum();
                    }
                }
            }
            let got = cublas_reference(&g, &bv, &av);
            assert_eq!(&got[..want.len()], &want[..], "{a:?} x {b:?}: {g:?}");
        }
    }
}
