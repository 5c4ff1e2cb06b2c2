//! A cost model of a plan: what one run of it (one training step) costs a
//! device, estimated from the plan alone, so that `pjc explain` can print a
//! communication/compute ratio before anything runs.
//!
//! - A loop kernel does `points × ops` operations, where `points` is its
//!   iteration space (output points times reduction points) and `ops` the
//!   arithmetic nodes of its body (unary, binary, compare, select, convert;
//!   loads, constants, coordinates and index arithmetic are free) plus one
//!   combine per point for a reduction. It moves its outputs' bytes and, per
//!   input, the bytes of its loads (`points × loads × element size`), at most
//!   the input's size (a broadcast reads its operand once, from cache).
//! - `dot_general` does 2·M·N·K·batch operations (2 × result elements ×
//!   contracted size); `convolution` 2 × result elements × kernel taps ×
//!   input features per group (the kernel's elements over its output
//!   features). Every library step moves its operands' and results' bytes;
//!   the other library ops (scatter, sort, top_k) count bytes only.
//! - Each compute step takes its roofline time against the device's peaks,
//!   `max(ops / peak ops, bytes / memory bandwidth)`; the steps' times add up.
//! - A collective sends the ring formula's bytes per device
//!   ([`pjc_ir::CollectiveKind::ring_bytes`]) over a group of the mesh axes it
//!   names, in the ring's messages; it takes `messages × latency + bytes /
//!   link bandwidth`.
//! - A `scan` counts its step block `length` times; a `switch` its most
//!   expensive branch; a `while` its condition and body once, since the trip
//!   count is not known before the run: [`Cost::lower_bound`] says so.
//!
//! Nothing here is measured: the peaks are [`Machine`]'s figures (defaults
//! per device class, or the user's). The runtime's trace summary measures the
//! same ratio.

use crate::kernel::{Kernel, Node};
use crate::plan::{Buffer, Control, Step};
use pjc_ir::{Attrs, Mesh, Opcode, TensorType};

// The peaks the model divides by (one device and its link) live with the
// ring formulas, where the partitioner's all-reduce combiner reads them too.
pub use pjc_dialects::ring::Machine;

/// Operations and bytes of one compute step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Work {
    pub flops: f64,
    pub bytes: f64,
}

/// What a plan, or part of one, costs one device. Counts are `f64`: a scan
/// multiplies them by its length, and an estimate needs no exact integers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cost {
    /// Operations of kernels and library steps (floating-point or not).
    pub flops: f64,
    /// Bytes kernels and library steps read and write in device memory.
    pub bytes: f64,
    /// Their roofline time, seconds.
    pub compute_s: f64,
    /// Bytes this device sends in collectives (ring formulas).
    pub collective_bytes: f64,
    /// Collective calls.
    pub collectives: f64,
    /// The collectives' time, seconds.
    pub collective_s: f64,
    /// Some `while` loop was counted as one trip: the true cost is at least this.
    pub lower_bound: bool,
}

impl Cost {
    fn add(&mut self, o: &Cost) {
        self.flops += o.flops;
        self.bytes += o.bytes;
        self.compute_s += o.compute_s;
        self.collective_bytes += o.collective_bytes;
        self.collectives += o.collectives;
        self.collective_s += o.collective_s;
        self.lower_bound |= o.lower_bound;
    }

    fn times(&self, k: f64) -> Cost {
        Cost {
            flops: self.flops * k,
            bytes: self.bytes * k,
            compute_s: self.compute_s * k,
            collective_bytes: self.collective_bytes * k,
            collectives: self.collectives * k,
            collective_s: self.collective_s * k,
            lower_bound: self.lower_bound,
        }
    }

    fn of_work(w: Work, m: &Machine) -> Cost {
        let t = (w.flops / (m.gflops * 1e9)).max(w.bytes / (m.gbps * 1e9));
        Cost { flops: w.flops, bytes: w.bytes, compute_s: t, ..Cost::default() }
    }

    /// Compute time over collective time: the R of "1:R"; `None` without
    /// collective time.
    pub fn ratio(&self) -> Option<f64> {
        (self.collective_s > 0.0).then(|| self.compute_s / self.collective_s)
    }
}

/// The cost of one run of `plan` on one device of `mesh`.
pub fn plan_cost(plan: &crate::Plan, mesh: &Mesh, m: &Machine) -> Cost {
    steps_cost(&plan.buffers, &plan.steps, mesh, m)
}

/// The cost of `steps` run once, in order, on `buffers`.
pub fn steps_cost(buffers: &[Buffer], steps: &[Step], mesh: &Mesh, m: &Machine) -> Cost {
    let mut c = Cost::default();
    for s in steps {
        c.add(&step_cost(buffers, s, mesh, m));
    }
    c
}

/// The cost of one step (a control step with its blocks, as described in
/// the module doc).
pub fn step_cost(buffers: &[Buffer], step: &Step, mesh: &Mesh, m: &Machine) -> Cost {
    match step {
        Step::Kernel(k) => Cost::of_work(kernel_work(k, buffers), m),
        Step::Library { inst, inputs, outputs, .. } => {
            let tys = |bs: &[usize]| bs.iter().map(|&b| &buffers[b].ty).collect::<Vec<_>>();
            Cost::of_work(library_work(inst, &tys(inputs), &tys(outputs)), m)
        }
        Step::Collective { inst, input, output, .. } => {
            let Some(kind) = inst.op.collective() else { return Cost::default() };
            let axes = inst.attr("axes").and_then(|a| a.as_idents()).unwrap_or_default();
            let n = mesh.group_size(axes.iter().map(String::as_str));
            let bytes = kind.ring_bytes(buffers[*input].bytes(), buffers[*output].bytes(), n) as f64;
            let t = kind.ring_messages(n) as f64 * m.link_latency_us * 1e-6 + bytes / (m.link_gbps * 1e9);
            Cost { collective_bytes: bytes, collectives: 1.0, collective_s: t, ..Cost::default() }
        }
        Step::Control(Control::Scan { length, step, .. }) => steps_cost(buffers, &step.steps, mesh, m).times(*length as f64),
        Step::Control(Control::While { cond, body, .. }) => {
            let mut c = steps_cost(buffers, &cond.steps, mesh, m);
            c.add(&steps_cost(buffers, &body.steps, mesh, m));
            c.lower_bound = true;
            c
        }
        Step::Control(Control::Switch { branches, .. }) => {
            let costs = branches.iter().map(|b| steps_cost(buffers, &b.steps, mesh, m));
            let mut best = Cost::default();
            for c in costs {
                let lower = best.lower_bound || c.lower_bound;
                if c.compute_s + c.collective_s > best.compute_s + best.collective_s {
                    best = c;
                }
                best.lower_bound = lower;
            }
            best
        }
    }
}

/// A loop kernel's operations and bytes (module doc).
pub fn kernel_work(k: &Kernel, buffers: &[Buffer]) -> Work {
    let reduce_points: f64 = k.reduce.as_ref().map_or(1.0, |r| r.shape.iter().map(|&d| d as f64).product());
    let points = k.shape.iter().map(|&d| d as f64).product::<f64>() * reduce_points;
    let ops = k.nodes.iter().filter(|n| matches!(n, Node::Unary { .. } | Node::Binary { .. } | Node::Compare { .. } | Node::Select { .. } | Node::Convert { .. })).count()
        + usize::from(k.reduce.is_some());
    let mut loads = vec![0usize; k.inputs.len()];
    for n in &k.nodes {
        if let Node::Load { input, .. } = n {
            if let Some(c) = loads.get_mut(*input) {
                *c += 1;
            }
        }
    }
    let read: f64 = k
        .inputs
        .iter()
        .zip(&loads)
        .map(|(a, &l)| (points * l as f64 * a.dtype.size_bytes() as f64).min(buffers[a.buffer].bytes() as f64))
        .sum();
    let written: f64 = k.outputs.iter().map(|a| buffers[a.buffer].bytes() as f64).sum();
    Work { flops: points * ops as f64, bytes: read + written }
}

/// A library step's operations and bytes (module doc), from its operands'
/// and results' types.
pub fn library_work(inst: &pjc_ir::InstData, inputs: &[&TensorType], outputs: &[&TensorType]) -> Work {
    let bytes = inputs.iter().chain(outputs).map(|t| t.bytes() as f64).sum();
    let elems = |t: &TensorType| t.shape.iter().map(|&d| d as f64).product::<f64>();
    let attrs = Attrs::new(inst, inputs);
    let flops = match (inst.op, inputs, outputs) {
        (Opcode::DotGeneral, [lhs, _], [out]) => {
            let k: f64 = attrs.indices("lhs_contract").unwrap_or_default().iter().map(|&d| lhs.shape.get(d).map_or(1.0, |&s| s as f64)).product();
            2.0 * elems(out) * k
        }
        (Opcode::Convolution, [lhs, kernel], [out]) => {
            let dims = attrs.string("dims").ok().and_then(|s| pjc_tensor::parse_conv_dims(&s, lhs.rank()).ok());
            match dims.and_then(|d| kernel.shape.get(d.kernel_output_feature).copied()) {
                Some(cout) if cout > 0 => 2.0 * elems(out) * (elems(kernel) / cout as f64),
                _ => 0.0,
            }
        }
        _ => 0.0,
    };
    Work { flops, bytes }
}

/// `s` seconds in the unit that reads best — `1.23 s`, `12.3 ms`, `4.56 us`
/// — with three significant digits, for reports of estimates and
/// measurements alike.
pub fn duration_text(s: f64) -> String {
    if s >= 1.0 {
        format!("{} s", sig3(s))
    } else if s >= 1e-3 {
        format!("{} ms", sig3(s * 1e3))
    } else {
        format!("{} us", sig3(s * 1e6))
    }
}

/// `x` with an SI prefix (k, M, G, T) before `unit`: `16.5 MFLOP`, `610 kB`.
pub fn si_text(x: f64, unit: &str) -> String {
    let (v, p) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")].into_iter().find(|&(f, _)| x >= f).map_or((x, ""), |(f, p)| (x / f, p));
    format!("{} {p}{unit}", sig3(v))
}

/// `x` with three significant digits, no exponent, no trailing zeros
/// (`25`, `0.0123`, `1500`).
pub fn sig3(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = 2 - x.abs().log10().floor() as i32;
    let t = format!("{x:.*}", digits.max(0) as usize);
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{BufferArg, Reduction};
    use crate::plan::{Block, BufferKind};
    use pjc_ir::{AttrValue, BinaryOp, DType, InstData, MeshAxis, ReduceKind, Span};

    /// Peaks that make times easy to check by hand: 1 GFLOP/s, 1 GB/s, a
    /// 1 GB/s link with 1 µs per message.
    const UNIT: Machine = Machine { gflops: 1.0, gbps: 1.0, link_gbps: 1.0, link_latency_us: 1.0 };

    fn f32s(name: &str, shape: &[u64]) -> Buffer {
        Buffer { name: name.into(), ty: TensorType::new(DType::F32, shape.to_vec()), kind: BufferKind::Temp }
    }

    fn ints(v: &[i64]) -> AttrValue {
        AttrValue::List(v.iter().map(|&i| AttrValue::Int(i)).collect())
    }

    fn inst(op: Opcode, attrs: Vec<(&str, AttrValue)>) -> InstData {
        let mut i = InstData::new(op);
        i.attrs = attrs.into_iter().map(|(n, value)| pjc_ir::Attr { name: n.into(), value, span: Span::NONE }).collect();
        i
    }

    fn mesh(axes: &[(&str, u64)]) -> Mesh {
        Mesh { axes: axes.iter().map(|&(n, size)| MeshAxis { name: n.into(), size, span: Span::NONE }).collect() }
    }

    /// `out[i] = a[i] + a[i]` over n points (one load, one add), or with a
    /// reduction loop of `r` points.
    fn add_kernel(n: u64, r: Option<u64>) -> Kernel {
        let arg = |b| BufferArg { buffer: b, dtype: DType::F32 };
        Kernel {
            name: "k".into(),
            shape: vec![n],
            reduce: r.map(|r| Reduction { shape: vec![r], kind: ReduceKind::Sum, acc: DType::F32 }),
            inputs: vec![arg(0)],
            outputs: vec![arg(1)],
            nodes: vec![Node::Coord(0), Node::Load { input: 0, index: 0 }, Node::Binary { op: BinaryOp::Add, a: 1, b: 1 }],
            types: vec![DType::I64, DType::F32, DType::F32],
            results: vec![2],
            fuses: vec![],
        }
    }

    fn all_reduce(input: usize, output: usize, axes: &[&str]) -> Step {
        let axes = AttrValue::List(axes.iter().map(|a| AttrValue::Ident(a.to_string())).collect());
        Step::Collective { inst: inst(Opcode::AllReduce, vec![("axes", axes), ("kind", AttrValue::Ident("sum".into()))]), input, output, done: None }
    }

    fn block(steps: Vec<Step>) -> Block {
        Block { name: "b".into(), steps, params: vec![], results: vec![] }
    }

    #[test]
    fn gemm_flops_are_two_m_n_k() {
        // [batch 3, M 8, K 16] x [3, 16, N 4] -> [3, 8, 4]: 2·3·8·4·16 = 3072.
        let lhs = TensorType::new(DType::F32, vec![3, 8, 16]);
        let rhs = TensorType::new(DType::F32, vec![3, 16, 4]);
        let out = TensorType::new(DType::F32, vec![3, 8, 4]);
        let i = inst(Opcode::DotGeneral, vec![("lhs_batch", ints(&[0])), ("rhs_batch", ints(&[0])), ("lhs_contract", ints(&[2])), ("rhs_contract", ints(&[1]))]);
        let w = library_work(&i, &[&lhs, &rhs], &[&out]);
        assert_eq!(w.flops, 3072.0);
        // (384 + 192 + 96) elements of 4 bytes.
        assert_eq!(w.bytes, 2688.0);
        // Roofline: 3072 ops at 1 GFLOP/s beat 2688 bytes at 1 GB/s.
        let c = Cost::of_work(w, &UNIT);
        assert!((c.compute_s - 3072e-9).abs() < 1e-15, "{c:?}");
    }

    #[test]
    fn convolution_flops_count_taps_and_features_per_group() {
        // NHWC input [2, 10, 10, 8], kernel 3x3 with 8/2 = 4 input features
        // per group (2 groups) and 6 output features, output [2, 8, 8, 6]:
        // 2 × 768 output elements × 9 taps × 4 features = 55296.
        let x = TensorType::new(DType::F32, vec![2, 10, 10, 8]);
        let k = TensorType::new(DType::F32, vec![3, 3, 4, 6]);
        let out = TensorType::new(DType::F32, vec![2, 8, 8, 6]);
        let i = inst(Opcode::Convolution, vec![("dims", AttrValue::Str("b01f_01io->b01f".into())), ("feature_group_count", AttrValue::Int(2))]);
        assert_eq!(library_work(&i, &[&x, &k], &[&out]).flops, 55296.0);
    }

    #[test]
    fn kernels_count_points_times_ops_and_bounded_reads() {
        let bufs = vec![f32s("a", &[100]), f32s("o", &[100])];
        // 100 points × 1 add; reads 400 B, writes 400 B.
        assert_eq!(kernel_work(&add_kernel(100, None), &bufs), Work { flops: 100.0, bytes: 800.0 });
        // A reduction over 10 points per output of a 10-element output:
        // 100 points × (add + combine); the input is read whole (400 B), the
        // output written (40 B).
        let bufs = vec![f32s("a", &[100]), f32s("o", &[10])];
        assert_eq!(kernel_work(&add_kernel(10, Some(10)), &bufs), Work { flops: 200.0, bytes: 440.0 });
        // A broadcast: 100 points read a 10-element input: its 40 bytes once.
        let bufs = vec![f32s("a", &[10]), f32s("o", &[100])];
        assert_eq!(kernel_work(&add_kernel(100, None), &bufs).bytes, 440.0);
    }

    #[test]
    fn ring_all_reduce_bytes_and_time() {
        // f32[256] = 1024 B over data=4 of a [data=4, model=2] mesh:
        // 2·3/4·1024 = 1536 B in 6 messages: 6 µs + 1536 ns.
        let bufs = vec![f32s("g", &[256]), f32s("r", &[256])];
        let m = mesh(&[("data", 4), ("model", 2)]);
        let c = step_cost(&bufs, &all_reduce(0, 1, &["data"]), &m, &UNIT);
        assert_eq!((c.collective_bytes, c.collectives), (1536.0, 1.0));
        assert!((c.collective_s - (6e-6 + 1536e-9)).abs() < 1e-15, "{c:?}");
        // Over both axes: 8 devices, 2·7/8·1024 = 1792 B in 14 messages.
        let c = step_cost(&bufs, &all_reduce(0, 1, &["data", "model"]), &m, &UNIT);
        assert_eq!(c.collective_bytes, 1792.0);
        assert!((c.collective_s - (14e-6 + 1792e-9)).abs() < 1e-15);
        // On a single device it costs nothing.
        assert_eq!(step_cost(&bufs, &all_reduce(0, 1, &["data"]), &Mesh::default(), &UNIT), Cost { collectives: 1.0, ..Cost::default() });
    }

    #[test]
    fn scan_multiplies_by_its_length() {
        let bufs = vec![f32s("a", &[100]), f32s("o", &[100]), f32s("g", &[256]), f32s("r", &[256])];
        let m = mesh(&[("data", 4)]);
        let body = vec![Step::Kernel(add_kernel(100, None)), all_reduce(2, 3, &["data"])];
        let once = steps_cost(&bufs, &body, &m, &UNIT);
        let scan = Step::Control(Control::Scan {
            length: 7,
            reverse: false,
            init: vec![],
            state: vec![],
            scanned: vec![],
            stacked: vec![],
            step: block(body),
        });
        let c = step_cost(&bufs, &scan, &m, &UNIT);
        assert_eq!((c.flops, c.bytes, c.collective_bytes, c.collectives), (700.0, 5600.0, 7.0 * 1536.0, 7.0));
        assert!((c.compute_s - 7.0 * once.compute_s).abs() < 1e-15 && (c.collective_s - 7.0 * once.collective_s).abs() < 1e-15);
        assert!(!c.lower_bound);
    }

    #[test]
    fn switch_takes_its_most_expensive_branch_and_while_is_a_lower_bound() {
        let bufs = vec![f32s("a", &[1000]), f32s("o", &[1000])];
        let m = Mesh::default();
        let small = block(vec![Step::Kernel(add_kernel(10, None))]);
        let big = block(vec![Step::Kernel(add_kernel(1000, None))]);
        let switch = Step::Control(Control::Switch { index: 0, operands: vec![], outputs: vec![], branches: vec![small.clone(), big.clone(), small.clone()] });
        assert_eq!(step_cost(&bufs, &switch, &m, &UNIT).flops, 1000.0);
        let w = Step::Control(Control::While { init: vec![], state: vec![], cond: small, body: big });
        let c = step_cost(&bufs, &w, &m, &UNIT);
        // Condition and body once each.
        assert_eq!(c.flops, 1010.0);
        assert!(c.lower_bound);
        // A switch with a while in a branch it does not take as its cost is
        // still a lower bound.
        let cheap_while = Step::Control(Control::While { init: vec![], state: vec![], cond: block(vec![]), body: block(vec![]) });
        let s = Step::Control(Control::Switch { index: 0, operands: vec![], outputs: vec![], branches: vec![block(vec![cheap_while]), block(vec![Step::Kernel(add_kernel(10, None))])] });
        assert!(step_cost(&bufs, &s, &m, &UNIT).lower_bound);
    }

    #[test]
    fn ratio_and_numbers() {
        let c = Cost { compute_s: 0.05, collective_s: 0.01, ..Cost::default() };
        assert!((c.ratio().unwrap() - 5.0).abs() < 1e-12);
        assert_eq!(Cost::default().ratio(), None);
        assert_eq!(duration_text(0.0123), "12.3 ms");
        assert_eq!(duration_text(0.0000123), "12.3 us");
        assert_eq!(duration_text(1.5), "1.5 s");
        assert_eq!(duration_text(0.25), "250 ms");
        assert_eq!(si_text(16_500_000.0, "FLOP"), "16.5 MFLOP");
        assert_eq!(si_text(999.0, "B"), "999 B");
        assert_eq!(si_text(1536.0, "B"), "1.54 kB");
        assert_eq!(sig3(1500.0), "1500");
        assert_eq!(sig3(25.0), "25");
        assert_eq!(sig3(0.0), "0");
    }
}
