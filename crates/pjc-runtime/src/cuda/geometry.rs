//! The pure arithmetic of the CUDA backend, kept apart from the driver calls
//! so that a machine without a GPU can test it: launch shapes of the
//! generated kernels, the strided 2-D copies that pack chunks of a
//! non-leading dimension for NCCL (the device-side twin of `pack.rs`). The
//! mapping of products onto cuBLAS is `pjc_host::device`'s.

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
/// The byte offset of slice `pos` (of `len` bytes) in a whole buffer of
/// `total` bytes, where a scan's window points during iteration `pos`;
/// `None` past the end.
pub fn window_offset(pos: u64, len: usize, total: usize) -> Option<u64> {
    let off = pos.checked_mul(len as u64)?;
    (off.checked_add(len as u64)? <= total as u64).then_some(off)
}

/// Copies `(src, dst, bytes)` that must act as one parallel assignment
/// (every source read before any destination is written: results into
/// their parameters between steps, a loop's carried buffers back to their
/// planned places in the arena): per move, `Some(offset)` when its source
/// overlaps a move's destination (another's, or partly its own), so it is first staged at that
/// offset of a scratch buffer, and the scratch bytes needed (256-aligned
/// pieces). A move onto itself is no copy at all (`None`, skipped by the
/// caller).
pub fn staging(moves: &[(u64, u64, usize)]) -> (Vec<Option<usize>>, usize) {
    let overlaps = |a: u64, an: usize, b: u64, bn: usize| an > 0 && bn > 0 && a < b + bn as u64 && b < a + an as u64;
    let mut total = 0usize;
    let staged = moves
        .iter()
        .map(|&(s, d, n)| {
            if s == d {
                return None;
            }
            // Another move's destination, or its own (a partial overlap).
            let hit = moves.iter().any(|&(s2, d2, n2)| s2 != d2 && overlaps(s, n, d2, n2));
            hit.then(|| {
                let at = total;
                total += n.next_multiple_of(256);
                at
            })
        })
        .collect();
    (staged, total)
}

#[cfg(test)]
pub fn apply(plan: &[Copy2D], src: &[u8], dst: &mut [u8]) {
    for c in plan {
        for r in 0..c.height {
            let (s, d) = (c.src_off + r * c.src_pitch, c.dst_off + r * c.dst_pitch);
            dst[d..d + c.width].copy_from_slice(&src[s..s + c.width]);
        }
    }
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

    #[test]
    fn windows_point_inside_their_whole_buffer() {
        // Slice 2 of 5 slices of 64 bytes.
        assert_eq!(window_offset(2, 64, 320), Some(128));
        assert_eq!(window_offset(4, 64, 320), Some(256));
        assert_eq!(window_offset(5, 64, 320), None);
        assert_eq!(window_offset(u64::MAX, 64, 320), None);
    }

    /// Staged moves act as a parallel assignment on one memory: a swapped
    /// pair moved back, a chain, a move onto itself, disjoint moves.
    #[test]
    fn staged_moves_are_a_parallel_assignment() {
        let cases: &[&[(u64, u64, usize)]] = &[
            &[(0, 64, 64), (64, 0, 64)],
            &[(0, 64, 32), (64, 128, 32), (128, 0, 32)],
            &[(0, 0, 64), (64, 128, 64)],
            &[(0, 256, 16), (32, 300, 16)],
            &[(0, 8, 16), (100, 0, 8)],
        ];
        for &moves in cases {
            let mem: Vec<u8> = (0..512).map(|i| (i * 13 % 251) as u8).collect();
            let mut want = mem.clone();
            for &(s, d, n) in moves {
                want[d as usize..d as usize + n].copy_from_slice(&mem[s as usize..s as usize + n]);
            }
            let (staged, total) = staging(moves);
            let mut got = mem.clone();
            let mut scratch = vec![0u8; total];
            for (&(s, _, n), st) in moves.iter().zip(&staged) {
                if let Some(at) = st {
                    scratch[*at..at + n].copy_from_slice(&got[s as usize..s as usize + n]);
                }
            }
            for (&(s, d, n), st) in moves.iter().zip(&staged) {
                if s == d {
                    continue;
                }
                let from: Vec<u8> = match st {
                    Some(at) => scratch[*at..at + n].to_vec(),
                    None => got[s as usize..s as usize + n].to_vec(),
                };
                got[d as usize..d as usize + n].copy_from_slice(&from);
            }
            assert_eq!(got, want, "{moves:?}");
        }
        assert_eq!(staging(&[(0, 0, 64)]), (vec![None], 0));
        assert_eq!(staging(&[(0, 64, 64), (64, 0, 64)]).1, 512);
    }
}
