//! Halo exchange for windows split along a spatial dimension: instead of
//! gathering the whole dimension, each device fetches only the `lo` rows before
//! its block (from the previous device) and the `hi` rows after it (from the
//! next) with `collective_permute`, and the op runs with that padding removed.
//! Devices at the ends use the padding value instead of the wrapped-around rows.
//! Applies to unit-stride, undilated windows whose output keeps the input size
//! (`lo + hi = window - 1`), the usual "same" convolution and pooling.

use crate::Partitioner;
use pjc_ir::attrs::resolved_attr;
use pjc_ir::infer::parse_conv_labels;
use pjc_ir::{AttrValue, DType, Function, InstData, Number, Opcode, ReduceKind, TensorType, Value};
use pjc_sharding::rules::{FactorKind, FactorRule};

/// One spatial dimension to exchange halos on.
#[derive(Clone, Debug)]
pub(crate) struct Halo {
    /// The factor linking the input and output spatial dims.
    pub factor: usize,
    /// The split dimension of operand 0.
    pub dim: usize,
    /// Index of this dim in the op's window/padding attribute lists.
    pub attr_index: usize,
    pub lo: u64,
    pub hi: u64,
    pub axes: Vec<String>,
}

/// The halo exchanges that let `inst` run with its spatial dims split as the
/// result's target asks (`targets` = per-dim axes of the result).
pub(crate) fn plan(p: &Partitioner, f: &Function, inst: &InstData, rule: &FactorRule, target: &[Vec<String>]) -> Vec<Halo> {
    let ops: Vec<&TensorType> = inst.operands.iter().map(|&v| f.ty(v)).collect();
    let ints = |n: &str| resolved_attr(inst, n, &ops).and_then(|v| v.as_ints()).unwrap_or_default();
    let pairs = |n: &str| resolved_attr(inst, n, &ops).and_then(|v| v.as_pairs()).unwrap_or_default();
    let Some(&x) = ops.first() else { return vec![] };
    // (input dim, output dim, window, stride, lhs dilation, rhs dilation, padding, attr index)
    let mut dims: Vec<(usize, usize, u64, i64, i64, i64, (i64, i64), usize)> = vec![];
    match inst.op {
        Opcode::Convolution => {
            let Some(labels) = resolved_attr(inst, "dims", &ops).and_then(|v| v.as_str().map(str::to_string)) else { return vec![] };
            let Ok(l) = parse_conv_labels(&labels, x.rank()) else { return vec![] };
            let (st, pad, ld, rd) = (ints("window_strides"), pairs("padding"), ints("lhs_dilation"), ints("rhs_dilation"));
            for s in 0..l.in_spatial.len() {
                let k = ops[1].shape[l.k_spatial[s]];
                dims.push((l.in_spatial[s], l.out_spatial[s], k, st[s], ld[s], rd[s], pad[s], s));
            }
        }
        Opcode::ReduceWindow => {
            let (w, st, pad) = (ints("window"), ints("strides"), pairs("padding"));
            for d in 0..x.rank() {
                dims.push((d, d, w[d] as u64, st[d], 1, 1, pad[d], d));
            }
        }
        _ => return vec![],
    }
    let out = f.ty(inst.results[0]);
    let mut plans = vec![];
    for (din, dout, k, stride, ld, rd, (lo, hi), attr_index) in dims {
        let axes = &target[dout];
        let Some(&factor) = rule.dims[0][din].first() else { continue };
        if axes.is_empty() || rule.kinds[factor] != FactorKind::Permutation || rule.dims[0][din].len() != 1 {
            continue;
        }
        let n = p.mesh.group_size(axes.iter().map(|a| a.as_str()));
        let size = x.shape[din];
        let same = stride == 1 && ld == 1 && rd == 1 && lo >= 0 && hi >= 0 && (lo + hi) as u64 + 1 == k;
        if !same || out.shape[dout] != size || size % n != 0 || (lo as u64) > size / n || (hi as u64) > size / n {
            continue;
        }
        plans.push(Halo { factor, dim: din, attr_index, lo: lo as u64, hi: hi as u64, axes: axes.clone() });
    }
    plans
}

/// The value the padding holds: 0 for convolutions and sums, the identity of
/// max/min windows.
pub(crate) fn pad_value(inst: &InstData, dtype: DType) -> Number {
    let kind = inst.attr("kind").and_then(|k| k.as_ident()).and_then(ReduceKind::from_name);
    match (kind, dtype.is_float()) {
        (Some(ReduceKind::Max), true) => Number::Float(f64::NEG_INFINITY),
        (Some(ReduceKind::Min), true) => Number::Float(f64::INFINITY),
        (Some(ReduceKind::Max), false) => Number::Int(dtype.int_range().map_or(0, |r| r.0)),
        (Some(ReduceKind::Min), false) => Number::Int(dtype.int_range().map_or(0, |r| r.1)),
        (_, true) => Number::Float(0.0),
        _ => Number::Int(0),
    }
}

impl Partitioner<'_> {
    /// `[rows from the previous device, v, rows from the next device]` along `h.dim`.
    pub(crate) fn exchange(&mut self, v: Value, h: &Halo, pad: Number, why: &str) -> Value {
        let ty = self.ty(v).clone();
        let base = self.name(v);
        let local = ty.shape[h.dim];
        let n = self.mesh.group_size(h.axes.iter().map(|a| a.as_str()));
        let axes_attr = AttrValue::List(h.axes.iter().map(|a| AttrValue::Ident(a.clone())).collect());
        let mut parts = vec![];
        // (rows, take from the end?, shift, edge position)
        for (rows, from_end, shift, edge) in [(h.lo, true, 1i64, 0u64), (h.hi, false, -1, n - 1)] {
            if rows == 0 {
                continue;
            }
            let mut start = vec![0i64; ty.rank()];
            let mut limit: Vec<i64> = ty.shape.iter().map(|&d| d as i64).collect();
            if from_end {
                start[h.dim] = (local - rows) as i64;
            } else {
                limit[h.dim] = rows as i64;
            }
            let edge_rows = self.b().build(
                Opcode::Slice,
                &[v],
                vec![("start", AttrValue::int_list(&start)), ("limit", AttrValue::int_list(&limit))],
                &format!("{base}.edge"),
            );
            let got = self.b().build(
                Opcode::CollectivePermute,
                &[edge_rows],
                vec![("axes", axes_attr.clone()), ("shift", AttrValue::Int(shift))],
                &format!("{base}.halo"),
            );
            let side = if from_end { "before" } else { "after" };
            self.record(got, h.axes.clone(), format!("{why}: halo of {rows} row(s) {side} each block of dim {}", h.dim));
            // The first (last) device has no neighbour before (after) it: padding.
            let pos = self.position(&h.axes, &format!("{base}.pos"));
            let e = self.b().splat(Number::Int(edge as i128), TensorType::scalar(DType::I32), "edge");
            let at_edge = self.b().build(Opcode::Compare, &[pos, e], vec![("dir", AttrValue::Ident("eq".into()))], &format!("{base}.at_edge"));
            let got_ty = self.ty(got).clone();
            let fill = self.b().splat(pad, got_ty, "pad");
            parts.push((from_end, self.b().build(Opcode::Select, &[at_edge, fill, got], vec![], &format!("{base}.halo"))));
        }
        let mut seq: Vec<Value> = parts.iter().filter(|p| p.0).map(|p| p.1).collect();
        seq.push(v);
        seq.extend(parts.iter().filter(|p| !p.0).map(|p| p.1));
        if seq.len() == 1 {
            return v;
        }
        self.b().build(Opcode::Concat, &seq, vec![("dim", AttrValue::Int(h.dim as i64))], &format!("{base}.haloed"))
    }
}
