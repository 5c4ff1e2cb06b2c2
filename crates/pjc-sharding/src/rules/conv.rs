//! The hand-written rule of `convolution`: its dimensions are named by the
//! `dims` labels, feature and batch groups change which dims may split, and
//! the window decides which spatial dims pass through.
//!
//! Batch passes through, input feature = kernel input feature is a reduction
//! (summed), kernel output feature = output feature passes through, spatial
//! dims are permutation factors (pass-through for a 1-wide, unstrided,
//! unpadded, undilated window), kernel spatial dims need replication; with
//! feature or batch groups the feature/batch dims need replication.

use crate::factor::{Completion, FactorRule};
use pjc_dialects::FactorKind;
use pjc_ir::infer::parse_conv_labels;
use pjc_ir::{AttrError, Attrs, ReduceKind, TensorType};

pub(super) fn rule(r: &mut FactorRule, a: &Attrs, ops: &[&TensorType], out: &TensorType, n: usize) -> Result<(), AttrError> {
    use FactorKind::*;
    let (x, k) = (ops[0], ops[1]);
    let l = parse_conv_labels(&a.string("dims")?, x.rank()).map_err(AttrError)?;
    let (fgc, bgc) = (a.int("feature_group_count")?, a.int("batch_group_count")?);
    let (strides, padding) = (a.ints("window_strides")?, a.pairs("padding")?);
    let (ld, rd) = (a.ints("lhs_dilation")?, a.ints("rhs_dilation")?);
    if bgc == 1 {
        r.link(Pass, x.shape[l.in_batch], &[(0, l.in_batch), (n, l.out_batch)]);
    } else {
        r.link(NeedReplication, x.shape[l.in_batch], &[(0, l.in_batch)]);
        r.link(NeedReplication, out.shape[l.out_batch], &[(n, l.out_batch)]);
    }
    if fgc == 1 && bgc == 1 {
        r.link(Reduction, x.shape[l.in_feature], &[(0, l.in_feature), (1, l.k_in)]);
        r.link(Pass, k.shape[l.k_out], &[(1, l.k_out), (n, l.out_feature)]);
    } else {
        r.link(NeedReplication, x.shape[l.in_feature], &[(0, l.in_feature)]);
        r.link(NeedReplication, k.shape[l.k_in], &[(1, l.k_in)]);
        r.link(NeedReplication, k.shape[l.k_out], &[(1, l.k_out)]);
        r.link(NeedReplication, out.shape[l.out_feature], &[(n, l.out_feature)]);
    }
    for s in 0..l.in_spatial.len() {
        let trivial = k.shape[l.k_spatial[s]] == 1 && strides[s] == 1 && padding[s] == (0, 0) && ld[s] == 1 && rd[s] == 1;
        let kind = if trivial { Pass } else { Permutation };
        r.link(kind, x.shape[l.in_spatial[s]], &[(0, l.in_spatial[s]), (n, l.out_spatial[s])]);
        r.link(NeedReplication, k.shape[l.k_spatial[s]], &[(1, l.k_spatial[s])]);
    }
    r.completion = Some(Completion { kind: ReduceKind::Sum, what: "input feature dimension" });
    Ok(())
}
