//! The hand-written rules of `gather` and `scatter_add`: the looked-up table
//! axis is replaced by (gather) or receives (scatter_add) all the dims of the
//! index tensor, so the gathered shape `table[:axis] ++ idx ++ table[axis+1:]`
//! is computed here.
//!
//! gather: table dims other than the axis pass to the result; index dims pass
//! to the result's index part; the table axis needs replication.
//! scatter_add and scatter (every kind): the same read backwards — base
//! passes to the result; index and update index-part dims are reductions
//! that no collective completes, so they stay unsplit (their operands are
//! gathered): partial scatters summed by an all_reduce would add the base
//! once per device, `set` cannot be combined by any reduction (the last
//! duplicate in the *global* index order wins), and even where a completion
//! exists (max/min are idempotent; add/mul with the base on one device of the
//! group) it would all-reduce the whole base, usually more bytes than the
//! gathered indices and updates. The base axis needs replication.

use crate::factor::FactorRule;
use pjc_dialects::FactorKind;
use pjc_ir::{AttrError, Attrs, TensorType};

/// `scatter`: whether the op is scatter_add or scatter (operands base,
/// indices, updates) rather than gather (operands table, indices).
pub(super) fn rule(r: &mut FactorRule, a: &Attrs, ops: &[&TensorType], n: usize, scatter: bool) -> Result<(), AttrError> {
    use FactorKind::*;
    let axis = a.index("axis")?;
    let (table, idx) = (ops[0], ops[1]);
    let ir = idx.rank();
    // The gathered shape: the result for gather, the updates (operand 2) for scatter_add.
    let g = if scatter { 2 } else { n };
    for d in 0..table.rank() {
        if d == axis {
            let mut at = vec![(0, d)];
            if scatter {
                at.push((n, d));
            }
            r.link(NeedReplication, table.shape[d], &at);
        } else {
            let gd = if d < axis { d } else { d - 1 + ir };
            let mut at = vec![(0, d), (g, gd)];
            if scatter {
                at.push((n, d));
            }
            r.link(Pass, table.shape[d], &at);
        }
    }
    for d in 0..ir {
        let kind = if scatter { Reduction } else { Pass };
        r.link(kind, idx.shape[d], &[(1, d), (g, axis + d)]);
    }
    Ok(())
}
