//! The problem auto-sharding solves: the entry function with its calls
//! inlined, as *nodes* (an entry parameter, or one instruction) whose
//! *strategies* are which mesh axes split which of the node's factors (its
//! factor rule from the op table, `pjc_sharding::rules::factor_rule`), the
//! *edges* from each value's producer to each of its consumers, and the cost
//! model that prices a strategy and a pair of strategies. A leaf module:
//! `solve.rs` and `lib.rs` read it.
//!
//! The cost model, in seconds:
//! - compute of a node: the roofline of its per-device work — the product of
//!   its factor sizes (the iteration space; ×2 for `dot_general` and
//!   `convolution`, a multiply and an add) over the devices its split factors
//!   divide it by, against the device's GFLOP/s, or its per-device operand
//!   and result bytes against the memory bandwidth, whichever is longer;
//! - completion of split reduction factors: an all-reduce of each result's
//!   per-device bytes over the axes of each split reduction factor;
//! - resharding on an edge, axis by axis: the producer's value split on
//!   dimension d and the consumer needing it whole is an all-gather; split on
//!   another dimension, an all-to-all; needing a split the producer does not
//!   have is a local slice (free);
//! - a collective over axis A costs `messages × latency(A) + bytes /
//!   bandwidth(A)` with the ring formulas of `pjc_dialects::ring` (per-axis
//!   alpha–beta link parameters).
//!
//! Memory per device is every value's per-device bytes while it is live
//! (from its definition to its last use; parameters and results for the
//! whole step), plus the partitioner's temporaries: an operand a collective
//! reshards (a gathered weight, an all-to-all's result) is a buffer of the
//! consumer's split live where the consumer reads it. The solver bounds and
//! prices it at sampled program points.

use pjc_dialects::{CollectiveKind, FactorKind, Opcode, ShardingRule};
use pjc_ir::{DimSharding, Function, Inst, Mesh, Sharding, TensorType, Value, ValueDef};
use pjc_sharding::rules::{factor_rule, FactorRule};
use std::collections::HashMap;

/// The link of one mesh axis (alpha–beta): bandwidth and per-message latency.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Link {
    /// GB/s (10^9 bytes per second) each device sends at.
    pub gbps: f64,
    /// Microseconds per message.
    pub latency_us: f64,
}

/// The machine the cost model prices against.
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    pub gflops: f64,
    pub gbps: f64,
    /// The link of each mesh axis (by name); axes not listed use `link`.
    pub axis_links: Vec<(String, Link)>,
    pub link: Link,
}

impl Machine {
    pub fn link_of(&self, axis: &str) -> Link {
        self.axis_links
            .iter()
            .find(|(a, _)| a == axis)
            .map(|(_, l)| *l)
            .unwrap_or(self.link)
    }
}

/// What a node is.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum NodeKind {
    /// Entry parameter `i`.
    Param(usize),
    Inst(Inst),
    /// Entry result `k` with a written sharding: where its value must arrive.
    Result(usize),
}

/// One decision: a parameter or an instruction of the inlined entry.
#[derive(Clone, Debug)]
pub struct Node {
    pub kind: NodeKind,
    /// Its factor rule (a parameter: one pass-through factor per dimension,
    /// tensors [param, param]).
    pub rule: FactorRule,
    /// (value, tensor index in `rule`) of what it defines.
    pub outputs: Vec<(Value, usize)>,
    /// 2 for products, 1 for other instructions, 0 for parameters.
    pub flops_per_point: f64,
    /// Factors auto-sharding may split (pass-through, or reductions the
    /// partitioner completes), each the major unsplit factor of its dims.
    pub splittable: Vec<bool>,
    /// Whether an op auto-sharding does not model (calls of spmd funcs,
    /// control flow, collectives): kept unsplit, its operands whole.
    pub opaque: bool,
}

/// A consumer's need of a value: tensor `tensor` of node `consumer` is the
/// value defined as tensor `ptensor` of node `producer`.
#[derive(Copy, Clone, Debug)]
pub struct Edge {
    pub producer: usize,
    pub ptensor: usize,
    pub consumer: usize,
    pub tensor: usize,
}

/// The problem: nodes, edges, and each value's live range.
pub struct Problem {
    pub f: Function,
    pub mesh: Mesh,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    /// The node defining each value and its tensor index there.
    pub def: HashMap<Value, (usize, usize)>,
    /// Each value's live range in instruction positions (inclusive).
    pub live: Vec<(Value, usize, usize)>,
    /// Annotations: for a (node, tensor) the written sharding it must have.
    pub fixed: HashMap<(usize, usize), Sharding>,
    /// Number of instruction positions (the body's length).
    pub positions: usize,
    /// Where each node reads its operands: an instruction's body position;
    /// the end of the step (`positions`) for a result and for a parameter
    /// (its carried value arrives for the next step). A resharded operand is
    /// a temporary live there.
    pub at: Vec<usize>,
}

/// Axes (mesh indices) split over each factor of each node: the assignment.
pub type Assign = Vec<Vec<Vec<usize>>>;

impl Problem {
    /// Builds the problem for `f`, an entry function with its calls inlined.
    pub fn new(f: Function, mesh: Mesh) -> Problem {
        let mut nodes = vec![];
        let mut def = HashMap::new();
        let mut fixed = HashMap::new();
        for (i, &p) in f.params.iter().enumerate() {
            let ty = f.ty(p).clone();
            let rule = FactorRule::identity(&ty);
            let n = nodes.len();
            def.insert(p, (n, 0));
            if let Some(s) = &f.values[p].sharding {
                fixed.insert((n, 0), s.clone());
            }
            nodes.push(node(NodeKind::Param(i), rule, vec![(p, 0)], 0.0, false));
        }
        let mut edges = vec![];
        let mut last_use: HashMap<Value, usize> = HashMap::new();
        let mut born: HashMap<Value, usize> = HashMap::new();
        for (pos, &inst) in f.body.iter().enumerate() {
            let data = &f.insts[inst];
            let opaque = matches!(
                data.op.def().sharding,
                ShardingRule::Call
                    | ShardingRule::ControlFlow
                    | ShardingRule::Manual
                    | ShardingRule::Transform
            );
            let rule = factor_rule(&f, data);
            let k = data.operands.len();
            let n = nodes.len();
            let outputs: Vec<(Value, usize)> = data
                .results
                .iter()
                .enumerate()
                .map(|(r, &v)| (v, k + r))
                .collect();
            for &(v, t) in &outputs {
                def.insert(v, (n, t));
                born.insert(v, pos);
                if let Some(s) = &f.values[v].sharding {
                    fixed.insert((n, t), s.clone());
                }
            }
            for (t, &v) in data.operands.iter().enumerate() {
                let (p, pt) = def[&v];
                edges.push(Edge {
                    producer: p,
                    ptensor: pt,
                    consumer: n,
                    tensor: t,
                });
                last_use.insert(v, pos);
            }
            let per_point = match data.op {
                Opcode::DotGeneral | Opcode::Convolution => 2.0,
                _ => 1.0,
            };
            nodes.push(node(NodeKind::Inst(inst), rule, outputs, per_point, opaque));
        }
        // Results: one the user annotated is a node fixed by the annotation
        // (its `?` dims free); a result named like a parameter (carried state)
        // must arrive as the parameter is split, for the next step; any other
        // takes its value's sharding, free.
        for (k, r) in f.results.iter().enumerate() {
            let v = f.ret[k];
            let (p, pt) = def[&v];
            let carried = (0..f.params.len()).find(|&i| f.param_name(i) == f.result_name(k));
            match (&r.sharding, carried) {
                (Some(s), _) => {
                    let n = nodes.len();
                    fixed.insert((n, 0), s.clone());
                    nodes.push(node(
                        NodeKind::Result(k),
                        FactorRule::identity(&r.ty),
                        vec![],
                        0.0,
                        false,
                    ));
                    edges.push(Edge {
                        producer: p,
                        ptensor: pt,
                        consumer: n,
                        tensor: 0,
                    });
                }
                (None, Some(i)) => edges.push(Edge {
                    producer: p,
                    ptensor: pt,
                    consumer: i,
                    tensor: 0,
                }),
                (None, None) => {}
            }
        }
        let positions = f.body.len();
        let at = nodes
            .iter()
            .map(|n| match n.kind {
                NodeKind::Inst(i) => f.body.iter().position(|&x| x == i).unwrap_or(positions),
                NodeKind::Param(_) | NodeKind::Result(_) => positions,
            })
            .collect();
        // Values the entry returns live to the end; parameters from the start.
        for &v in &f.ret {
            last_use.insert(v, positions);
        }
        let mut live = vec![];
        for &p in &f.params {
            live.push((p, 0, positions));
        }
        for (&v, &b) in &born {
            live.push((v, b, last_use.get(&v).copied().unwrap_or(b)));
        }
        live.sort_by_key(|&(v, b, _)| (b, v));
        Problem {
            f,
            mesh,
            nodes,
            edges,
            def,
            live,
            fixed,
            positions,
            at,
        }
    }

    pub fn axis_size(&self, a: usize) -> u64 {
        self.mesh.axes[a].size
    }

    /// Product of the sizes of `axes`.
    pub fn prod(&self, axes: &[usize]) -> u64 {
        axes.iter().map(|&a| self.axis_size(a)).product()
    }

    /// Tensor `t` of node `n` under `assign`: the mesh axes on each dimension
    /// (the axes of its factors, major factor first).
    pub fn tensor_axes(&self, n: usize, t: usize, fa: &[Vec<usize>]) -> Vec<Vec<usize>> {
        self.nodes[n].rule.dims[t]
            .iter()
            .map(|fs| fs.iter().flat_map(|&f| fa[f].iter().copied()).collect())
            .collect()
    }

    /// The type of tensor `t` of node `n`.
    pub fn tensor_type(&self, n: usize, t: usize) -> &TensorType {
        let node = &self.nodes[n];
        match node.kind {
            NodeKind::Param(i) => self.f.ty(self.f.params[i]),
            NodeKind::Result(k) => &self.f.results[k].ty,
            NodeKind::Inst(inst) => {
                let d = &self.f.insts[inst];
                self.f.ty(if t < d.operands.len() {
                    d.operands[t]
                } else {
                    d.results[t - d.operands.len()]
                })
            }
        }
    }

    /// Per-device bytes of tensor `t` of node `n` split by `axes`.
    pub fn local_bytes(&self, n: usize, t: usize, axes: &[Vec<usize>]) -> f64 {
        let div: u64 = axes.iter().map(|a| self.prod(a)).product();
        self.tensor_type(n, t).bytes() as f64 / div.max(1) as f64
    }

    /// Seconds of one collective of `kind` over axis `a` for per-device
    /// operand and result bytes.
    pub fn collective(
        &self,
        m: &Machine,
        kind: CollectiveKind,
        a: usize,
        operand: f64,
        result: f64,
    ) -> f64 {
        let n = self.axis_size(a);
        let link = m.link_of(&self.mesh.axes[a].name);
        let bytes = kind.ring_bytes(operand as u64, result as u64, n) as f64;
        kind.ring_messages(n) as f64 * link.latency_us * 1e-6 + bytes / (link.gbps * 1e9)
    }

    /// The node's own cost (compute and completion collectives) under the
    /// factor assignment `fa`, and the bytes its completions send per device.
    pub fn node_cost(&self, m: &Machine, n: usize, fa: &[Vec<usize>]) -> (f64, f64, f64) {
        let node = &self.nodes[n];
        if node.flops_per_point == 0.0 {
            return (0.0, 0.0, 0.0);
        }
        let iter: f64 = node.rule.sizes.iter().map(|&s| s as f64).product();
        let div: f64 = fa.iter().map(|a| self.prod(a) as f64).product();
        let tensors = node.rule.dims.len();
        let bytes: f64 = (0..tensors)
            .map(|t| self.local_bytes(n, t, &self.tensor_axes(n, t, fa)))
            .sum();
        let compute =
            (node.flops_per_point * iter / div / (m.gflops * 1e9)).max(bytes / (m.gbps * 1e9));
        let (mut comm, mut sent) = (0.0, 0.0);
        for (f, axes) in fa.iter().enumerate() {
            if node.rule.kinds[f] != FactorKind::Reduction || axes.is_empty() {
                continue;
            }
            for &(_, t) in &node.outputs {
                let local = self.local_bytes(n, t, &self.tensor_axes(n, t, fa));
                for &a in axes {
                    comm += self.collective(m, CollectiveKind::AllReduce, a, local, local);
                    sent += CollectiveKind::AllReduce.ring_bytes(
                        local as u64,
                        local as u64,
                        self.axis_size(a),
                    ) as f64;
                }
            }
        }
        (compute, comm, sent)
    }

    /// Seconds (and bytes sent per device) to move a value from the producer's
    /// split `src` to the split `dst` its consumer needs, axis by axis.
    pub fn reshard_cost(
        &self,
        m: &Machine,
        n: usize,
        t: usize,
        src: &[Vec<usize>],
        dst: &[Vec<usize>],
    ) -> (f64, f64) {
        let local = self.local_bytes(n, t, src);
        let (mut time, mut sent) = (0.0, 0.0);
        let dim_of = |axes: &[Vec<usize>], a: usize| axes.iter().position(|d| d.contains(&a));
        for a in 0..self.mesh.axes.len() {
            let n_a = self.axis_size(a);
            match (dim_of(src, a), dim_of(dst, a)) {
                (Some(x), Some(y)) if x == y => {}
                (Some(_), None) => {
                    time +=
                        self.collective(m, CollectiveKind::AllGather, a, local, local * n_a as f64);
                    sent += CollectiveKind::AllGather.ring_bytes(
                        local as u64,
                        (local * n_a as f64) as u64,
                        n_a,
                    ) as f64;
                }
                (Some(_), Some(_)) => {
                    time += self.collective(m, CollectiveKind::AllToAll, a, local, local);
                    sent +=
                        CollectiveKind::AllToAll.ring_bytes(local as u64, local as u64, n_a) as f64;
                }
                (None, _) => {}
            }
        }
        (time, sent)
    }

    /// Per-device bytes of the temporary a consumer holds when its operand
    /// (tensor `t` of node `c`, needed split `dst`) arrives by a collective
    /// from the producer's split `src`: the operand at the consumer's split,
    /// live where the consumer reads it (`at`); none where no collective
    /// moves it (the same split, or a local slice).
    pub fn reshard_temp(&self, c: usize, t: usize, src: &[Vec<usize>], dst: &[Vec<usize>]) -> f64 {
        let dim_of = |axes: &[Vec<usize>], a: usize| axes.iter().position(|d| d.contains(&a));
        let moved = (0..self.mesh.axes.len())
            .any(|a| matches!((dim_of(src, a), dim_of(dst, a)), (Some(x), y) if y != Some(x)));
        if moved {
            self.local_bytes(c, t, dst)
        } else {
            0.0
        }
    }

    /// The sharding of the mesh-axis lists `axes` (axes in mesh order).
    pub fn sharding(&self, axes: &[Vec<usize>]) -> Sharding {
        Sharding {
            dims: axes
                .iter()
                .map(|d| {
                    if d.is_empty() {
                        DimSharding::Replicated
                    } else {
                        let mut d = d.clone();
                        d.sort_unstable();
                        DimSharding::Axes(
                            d.iter().map(|&a| self.mesh.axes[a].name.clone()).collect(),
                        )
                    }
                })
                .collect(),
        }
    }

    /// Whether the written sharding `s` allows axis `a` on dimension `dim`
    /// (`None`: on no dimension).
    pub fn allows(&self, s: &Sharding, a: usize, dim: Option<usize>) -> bool {
        let name = &self.mesh.axes[a].name;
        let written = s
            .dims
            .iter()
            .position(|d| matches!(d, DimSharding::Axes(x) if x.contains(name)));
        match (written, dim) {
            (Some(w), d) => d == Some(w),
            (None, None) => true,
            (None, Some(d)) => matches!(s.dims.get(d), Some(DimSharding::Open)),
        }
    }

    /// The value a producer node defines as tensor `t`, where it is the entry
    /// parameter or result of an instruction of the body.
    pub fn value_of(&self, n: usize, t: usize) -> Option<Value> {
        self.nodes[n].outputs.iter().find(|o| o.1 == t).map(|o| o.0)
    }

    /// The position of a parameter or instruction result in the body.
    pub fn position(&self, v: Value) -> usize {
        match self.f.values[v].def {
            ValueDef::Param(_) => 0,
            ValueDef::Result(inst, _) => self.f.body.iter().position(|&i| i == inst).unwrap_or(0),
        }
    }
}

fn node(
    kind: NodeKind,
    rule: FactorRule,
    outputs: Vec<(Value, usize)>,
    flops_per_point: f64,
    opaque: bool,
) -> Node {
    let splittable = (0..rule.kinds.len())
        .map(|f| {
            !opaque
                && match rule.kinds[f] {
                    FactorKind::Pass => true,
                    FactorKind::Reduction => rule.completion.is_some(),
                    FactorKind::NeedReplication | FactorKind::Permutation => false,
                }
                // Only the major factor of a dimension made of several is split
                // (the partitioner's `split_axes` fills major factors first).
                && rule.dims.iter().all(|t| t.iter().all(|fs| !fs.contains(&f) || fs[0] == f))
        })
        .collect();
    Node {
        kind,
        rule,
        outputs,
        flops_per_point,
        splittable,
        opaque,
    }
}
