//! The hand-written rule of `reshape`: dims are split into the common
//! refinement of the two shapes (`[i, j] -> [ij]`, `[6,4] -> [3,8]` as
//! `3·2, 4 -> 3, 2·4`), which no declared template expresses.

use crate::factor::FactorRule;
use pjc_dialects::FactorKind;
use pjc_ir::TensorType;

/// Reshape: dims are split into the common refinement of the two shapes; where
/// no refinement exists (e.g. [6,4] -> [4,6]) the dims involved need replication.
pub(super) fn rule(r: &mut FactorRule, a: &TensorType, b: &TensorType, n: usize) {
    use FactorKind::*;
    // Walk both shapes, ignoring size-1 dims, in groups between common boundaries.
    let (sa, sb) = (&a.shape, &b.shape);
    let (mut i, mut j) = (0, 0);
    loop {
        while i < sa.len() && sa[i] == 1 {
            i += 1;
        }
        while j < sb.len() && sb[j] == 1 {
            j += 1;
        }
        if i >= sa.len() || j >= sb.len() {
            break;
        }
        // Grow a group until the products match.
        let (gi, gj) = (i, j);
        let (mut pa, mut pb) = (sa[i], sb[j]);
        i += 1;
        j += 1;
        while pa != pb {
            if pa < pb {
                pa *= sa[i];
                i += 1;
            } else {
                pb *= sb[j];
                j += 1;
            }
        }
        // Boundaries of running products inside the group, from both sides.
        let mut bounds: Vec<u64> = vec![];
        let mut p = 1;
        for &s in &sa[gi..i] {
            p *= s;
            bounds.push(p);
        }
        p = 1;
        for &s in &sb[gj..j] {
            p *= s;
            bounds.push(p);
        }
        bounds.sort_unstable();
        bounds.dedup();
        let mut prev = 1;
        let ok = bounds.iter().all(|&q| {
            let good = q % prev == 0;
            prev = q;
            good
        });
        if !ok {
            for d in gi..i {
                r.link(NeedReplication, sa[d], &[(0, d)]);
            }
            for d in gj..j {
                r.link(NeedReplication, sb[d], &[(n, d)]);
            }
            continue;
        }
        // One factor per refinement step, attached to the dim of each side that contains it.
        let mut prev = 1;
        let (mut da, mut db) = (gi, gj);
        let (mut ea, mut eb) = (sa[gi], sb[gj]); // running product at the end of the current dim
        for &q in &bounds {
            let size = q / prev;
            if size > 1 {
                let f = r.factor(Pass, size);
                r.dims[0][da].push(f);
                r.dims[n][db].push(f);
            }
            prev = q;
            if q == ea && da + 1 < i {
                da += 1;
                while da < i && sa[da] == 1 {
                    da += 1;
                }
                ea *= sa[da.min(i - 1)];
            }
            if q == eb && db + 1 < j {
                db += 1;
                while db < j && sb[db] == 1 {
                    db += 1;
                }
                eb *= sb[db.min(j - 1)];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pjc_ir::DType;

    fn t(s: &[u64]) -> TensorType {
        TensorType::new(DType::F32, s.to_vec())
    }

    #[test]
    fn reshape_merges_and_splits_share_factors() {
        let mut r = FactorRule::with_tensors(1, &[&t(&[4, 6]), &t(&[24])]);
        rule(&mut r, &t(&[4, 6]), &t(&[24]), 1);
        assert_eq!(r.sizes, vec![4, 6]);
        assert_eq!(r.dims, vec![vec![vec![0], vec![1]], vec![vec![0, 1]]]);
        let mut r = FactorRule::with_tensors(1, &[&t(&[2, 6, 4]), &t(&[12, 4])]);
        rule(&mut r, &t(&[2, 6, 4]), &t(&[12, 4]), 1);
        assert_eq!(r.dims, vec![vec![vec![0], vec![1], vec![2]], vec![vec![0, 1], vec![2]]]);
    }

    #[test]
    fn reshape_without_refinement_needs_replication() {
        let mut r = FactorRule::with_tensors(1, &[&t(&[6, 4]), &t(&[4, 6])]);
        rule(&mut r, &t(&[6, 4]), &t(&[4, 6]), 1);
        assert!(r.kinds.iter().all(|k| *k == FactorKind::NeedReplication));
        // [6,4] -> [3,8]: bounds 3,6,24 and... 6/3=2, 24/6=4 but 8 does not end at a shared bound.
        let mut r = FactorRule::with_tensors(1, &[&t(&[6, 4]), &t(&[3, 8])]);
        rule(&mut r, &t(&[6, 4]), &t(&[3, 8]), 1);
        assert_eq!(r.sizes, vec![3, 2, 4]);
        assert_eq!(r.dims, vec![vec![vec![0, 1], vec![2]], vec![vec![0], vec![1, 2]]]);
    }
}
