//! The replication rule of spec section 5: for every value of a `spmd func`,
//! the set of mesh axes along which it may differ between devices.
//!
//! The verifier uses it to prove that results not split over an axis are the
//! same on every device along it (shard_map's replication check); `grad` uses
//! it to find where a cotangent must be summed over an axis (the transpose of
//! the implicit broadcast of a value invariant along that axis).
//!
//! The rule: a parameter varies along the axes of its `on`; `constant` and
//! `iota` are invariant; `all_reduce` and `all_gather` results are invariant
//! along their `axes`; `axis_index {axis=a}` varies along `a`;
//! `reduce_scatter`, `all_to_all` and `collective_permute` results vary along
//! their `axes`; a `call` of a `spmd func` varies along the axes its callee's
//! result sharding names; any other result varies along the union of its
//! operands' axes.

use crate::module::{FuncKind, Function, InstData, Module};
use crate::types::Sharding;
use crate::{CollectiveKind, Opcode, Value};
use std::collections::{BTreeSet, HashMap};

/// A set of mesh axis names.
pub type Axes = BTreeSet<String>;

/// The axes a sharding names (empty for none).
pub fn sharding_axes(s: Option<&Sharding>) -> Axes {
    s.iter().flat_map(|s| s.axes().map(str::to_string)).collect()
}

/// The axes along which each result of `inst` may vary, given the axes of its
/// operands. `spmd_callee_results` holds the result shardings of the callee
/// when `inst` is a `call` of a `spmd func`.
pub fn result_axes(inst: &InstData, operands: &[&Axes], spmd_callee_results: Option<&[Option<Sharding>]>) -> Vec<Axes> {
    let union: Axes = operands.iter().flat_map(|a| a.iter().cloned()).collect();
    let axes: Axes = inst.attr("axes").and_then(|a| a.as_idents()).unwrap_or_default().into_iter().collect();
    let n = inst.results.len().max(1);
    if let Some(c) = inst.op.collective() {
        return match c {
            CollectiveKind::AllReduce | CollectiveKind::AllGather => vec![union.difference(&axes).cloned().collect()],
            CollectiveKind::ReduceScatter | CollectiveKind::AllToAll | CollectiveKind::CollectivePermute => {
                vec![union.union(&axes).cloned().collect()]
            }
        };
    }
    // An op without operands (constant, iota) varies along no axis: `union` is empty.
    match inst.op {
        Opcode::AxisIndex => {
            vec![inst.attr("axis").and_then(|a| a.as_ident()).map(|a| Axes::from([a.to_string()])).unwrap_or_default()]
        }
        Opcode::Call => match spmd_callee_results {
            Some(rs) => {
                let mut v: Vec<Axes> = rs.iter().map(|s| sharding_axes(s.as_ref())).collect();
                v.resize(n, union.clone());
                v
            }
            None => vec![union; n],
        },
        _ => vec![union; n],
    }
}

/// For every value of `f` (parameters and instruction results), the mesh axes
/// along which it may differ between devices. Meaningful for a `spmd func`; in
/// a `func` only parameters with an `on` get axes.
pub fn varying_axes(f: &Function, m: &Module) -> HashMap<Value, Axes> {
    let mut var: HashMap<Value, Axes> = HashMap::new();
    for &p in &f.params {
        var.insert(p, sharding_axes(f.values[p].sharding.as_ref()));
    }
    let empty = Axes::new();
    for &i in &f.body {
        let inst = &f.insts[i];
        let ops: Vec<&Axes> = inst.operands.iter().map(|v| var.get(v).unwrap_or(&empty)).collect();
        let callee_results: Option<Vec<Option<Sharding>>> = match inst.op {
            Opcode::Call => inst
                .callee()
                .and_then(|c| m.func_by_name(c))
                .map(|id| &m.funcs[id])
                .filter(|g| g.kind == FuncKind::Spmd)
                .map(|g| g.results.iter().map(|r| r.sharding.clone()).collect()),
            _ => None,
        };
        let per_result = result_axes(inst, &ops, callee_results.as_deref());
        for (k, &r) in inst.results.iter().enumerate() {
            var.insert(r, per_result.get(k).cloned().unwrap_or_default());
        }
    }
    var
}
