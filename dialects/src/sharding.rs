//! Sharding rules as data (Shardy's `OpShardingRule`, MLIR's sharding
//! interface): for every op, how the dimensions of its operands and results
//! are made of *factors*. A factor is
//! - pass-through: sharding it on one tensor shards it the same way on the others;
//! - reduction: it appears only in operands (a contraction); sharding it gives
//!   partial results that need a reduction;
//! - need-replication: it cannot be split without changing the op's meaning
//!   (e.g. a sliced or concatenated dimension);
//! - permutation: splitting it needs data exchange between neighbours (spatial
//!   dims of windows: halo exchange; reversed dims).
//!
//! Most ops declare their factors here, in one of two forms that
//! `pjc-sharding` instantiates for an instruction from its attributes and
//! types: an [`Einsum`] (`dot_general`:
//! `([b…@lhs_batch, k…@lhs_contract, i…], [b…@rhs_batch, k…@rhs_contract, j…]) -> ([b…, i…, j…]) reduction={k}`)
//! or a [`PerDim`] rule (tensors of one rank related dimension by dimension,
//! with a per-dimension test saying which dims pass through). Propagation, the
//! partitioner and `pjc explain`'s notation all come from that one
//! instantiation. Four ops whose factors need real computation keep a
//! hand-written rule ([`Custom`]): reshape, convolution, gather and scatter_add.

/// What a factor is (Shardy's factor types).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum FactorKind {
    /// Sharding it on one tensor shards it the same way on all tensors it appears in.
    Pass,
    /// Appears only in operands; sharding it leaves partial results to reduce.
    Reduction,
    /// Cannot be split: such dims stay replicated unless annotated.
    NeedReplication,
    /// Splitting needs neighbour exchange (halo, reversal); still propagated.
    Permutation,
}

impl FactorKind {
    /// The Shardy keyword listing factors of this kind (none for pass-through).
    pub fn keyword(self) -> Option<&'static str> {
        match self {
            FactorKind::Pass => None,
            FactorKind::Reduction => Some("reduction"),
            FactorKind::NeedReplication => Some("need_replication"),
            FactorKind::Permutation => Some("permutation"),
        }
    }
}

/// How the partitioner completes partial results when reduction factors are split.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Combine {
    /// Summed (contractions).
    Sum,
    /// With the collective that matches the op's `kind` attribute on its dtype
    /// (`ReduceKind::collective_for`); where there is none (`and`/`or` over
    /// integers), no collective completes them and the reduction factors stay
    /// unsplit (as scatter_add's, whose hand rule has no completion).
    Kind,
}

/// The reduction factors of a rule: how to complete them, and what they are
/// called in the partitioner's explanations.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Reduction {
    pub combine: Combine,
    /// "contracting dimension", "reduced dimension", ...
    pub what: &'static str,
}

/// One group of an [`Einsum`]: a letter standing for zero or more factors
/// (one per dimension it covers), all of one kind.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Group {
    pub letter: char,
    pub kind: FactorKind,
}

/// Where the dims an attribute names sit in a tensor.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Place {
    /// The dims an integer-list attribute lists, in list order (pairs such as
    /// dot's batch dims, a permutation).
    List(&'static str),
    /// The dims a dimension-set attribute lists, in ascending order (reduce's dims).
    Set(&'static str),
    /// The one dim an integer attribute names.
    One(&'static str),
}

impl Place {
    pub fn attr(self) -> &'static str {
        match self {
            Place::List(a) | Place::Set(a) | Place::One(a) => a,
        }
    }
}

/// The dimensions of one tensor of an [`Einsum`], as groups.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Dims {
    /// Every dim, in order, is one factor of the group (rank-polymorphic).
    All(char),
    /// The groups' factors one after another (dot's result: batch, lhs free, rhs free).
    Seq(&'static [char]),
    /// The dims each attribute places belong to its group; the other dims, in
    /// order, to `rest` (if any).
    Placed { at: &'static [(char, Place)], rest: Option<char> },
}

/// An einsum-like rule: the dims of every tensor as groups of factors placed
/// by attributes. Element `e` of a group is one factor, shared by every tensor
/// that has that element; its size is that of its largest dim, and a dim of
/// another size (a broadcast's stretched 1) does not take part.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Einsum {
    pub operands: &'static [Dims],
    pub results: &'static [Dims],
    /// The groups, in factor order.
    pub groups: &'static [Group],
    pub reduction: Option<Reduction>,
    /// Propagation priority (see [`ShardingRule::priority`]).
    pub priority: u8,
}

/// Which tensor of an op: an operand by index, or the (single) result.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Tensor {
    Operand(usize),
    Result,
}

/// When dimension `d` of a [`PerDim`] rule passes through.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum DimTest {
    Always,
    /// `d` is not the dimension the attribute names (concat's dim).
    NotAt(&'static str),
    /// `d` is not among the dims the attribute lists (reverse's dims).
    NotIn(&'static str),
    /// The two tensors' dim `d` have the same size (slices: unchanged dims).
    SameSize(Tensor, Tensor),
    /// Every listed integer-list attribute is 0 at `d` (pad's low, high, interior).
    Zero(&'static [&'static str]),
    /// The window is trivial at `d`: `window` 1, `strides` 1, `padding` (0, 0).
    TrivialWindow,
    /// `d` is not the last dimension (top_k's).
    NotLast,
}

/// What a [`PerDim`] dimension that does not pass through is.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Otherwise {
    /// One permutation factor shared by every tensor, of the size of the given
    /// operand's dim (windows, reversal).
    Permutation { sized_by: usize },
    /// Need-replication factors: one shared by the listed tensors, and one of
    /// its own for every other tensor.
    NeedReplication { shared: &'static [Tensor] },
}

/// Tensors of one rank related dimension by dimension (elementwise ops,
/// slices, windows, ...); operands of lower rank (scalars: start indices, a
/// padding value, a select predicate) take no part. A dim that passes is one
/// pass-through factor of the result's size shared by every tensor.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct PerDim {
    pub pass: DimTest,
    pub otherwise: Otherwise,
    /// Propagation priority (see [`ShardingRule::priority`]).
    pub priority: u8,
}

/// Ops whose factors are computed by hand (`crates/pjc-sharding/src/rules/`).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Custom {
    /// The common refinement of both shapes (`rules/reshape.rs`).
    Reshape,
    /// Labelled dims, feature groups, windows (`rules/conv.rs`).
    Convolution,
    /// A table axis looked up by an index tensor (`rules/gather.rs`).
    Gather,
    /// Gather read backwards (`rules/gather.rs`).
    ScatterAdd,
}

/// An op's factor rule.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum ShardingRule {
    Einsum(Einsum),
    PerDim(PerDim),
    Custom(Custom),
    /// Call operands/results link to the callee's parameters/results.
    Call,
    /// Collectives and axis_index: only in spmd funcs, where no propagation runs.
    Manual,
    /// grad/vmap: expanded before propagation runs.
    Transform,
    /// while/scan/switch: operands, body parameters, body results and the op's
    /// results of each carried value share one sharding (section 6); scanned
    /// dimension 0 is never split; predicate and index are replicated.
    ControlFlow,
}

use DimTest as T;
use FactorKind::{NeedReplication, Pass};

const fn g(letter: char, kind: FactorKind) -> Group {
    Group { letter, kind }
}

/// Propagation priorities (Shardy's op priority): lower runs first.
const FIRST: u8 = 0;
const NORMAL: u8 = 1;
const LAST: u8 = 2;

const fn per_dim(pass: DimTest, otherwise: Otherwise) -> ShardingRule {
    ShardingRule::PerDim(PerDim { pass, otherwise, priority: NORMAL })
}

/// Each tensor's dims need replication on their own (their sizes differ).
const EACH_ALONE: Otherwise = Otherwise::NeedReplication { shared: &[] };

/// Same shape in, same shape out, dimension by dimension (scalars join nothing).
pub const ELEMENTWISE: ShardingRule = ShardingRule::PerDim(PerDim { pass: T::Always, otherwise: EACH_ALONE, priority: FIRST });
/// No operands: every result dimension is a free pass-through factor.
pub const SOURCE: ShardingRule = ShardingRule::Einsum(Einsum {
    operands: &[],
    results: &[Dims::All('i')],
    groups: &[g('i', Pass)],
    reduction: None,
    priority: FIRST,
});
/// Operand dim k is result dim dims[k]; new and stretched (1 → n) dims are result-only.
pub const BROADCAST: ShardingRule = ShardingRule::Einsum(Einsum {
    operands: &[Dims::All('i')],
    results: &[Dims::Placed { at: &[('i', Place::List("dims"))], rest: Some('j') }],
    groups: &[g('i', Pass), g('j', Pass)],
    reduction: None,
    priority: LAST,
});
/// Result dim k is operand dim perm[k].
pub const TRANSPOSE: ShardingRule = ShardingRule::Einsum(Einsum {
    operands: &[Dims::Placed { at: &[('i', Place::List("perm"))], rest: None }],
    results: &[Dims::All('i')],
    groups: &[g('i', Pass)],
    reduction: None,
    priority: FIRST,
});
/// Dims whose size changes need replication; unchanged dims pass through.
pub const SLICE: ShardingRule = per_dim(T::SameSize(Tensor::Operand(0), Tensor::Result), EACH_ALONE);
/// The concatenated dim needs replication; the others pass through.
pub const CONCAT: ShardingRule = per_dim(T::NotAt("dim"), EACH_ALONE);
/// Dims where the update is as big as the operand pass through; the others
/// need replication (where the update lands depends on run-time indices).
pub const DYNAMIC_UPDATE_SLICE: ShardingRule = per_dim(
    T::SameSize(Tensor::Operand(1), Tensor::Result),
    Otherwise::NeedReplication { shared: &[Tensor::Operand(0), Tensor::Result] },
);
/// Padded dims need replication; unpadded dims pass through.
pub const PAD: ShardingRule = per_dim(T::Zero(&["low", "high", "interior"]), EACH_ALONE);
/// The sorted dim needs replication (each device needs the whole of it); the
/// others pass through (every operand and result has the same shape).
pub const SORT: ShardingRule = per_dim(T::NotAt("dim"), EACH_ALONE);
/// top_k's last dim (n in, k out) needs replication; the others pass through.
pub const TOP_K: ShardingRule = per_dim(T::NotLast, EACH_ALONE);
/// Reversed dims are permutation factors; the others pass through.
pub const REVERSE: ShardingRule = per_dim(T::NotIn("dims"), Otherwise::Permutation { sized_by: 0 });
/// Reduced dims are reduction factors; kept dims pass through.
pub const REDUCE: ShardingRule = ShardingRule::Einsum(Einsum {
    operands: &[Dims::Placed { at: &[('k', Place::Set("dims"))], rest: Some('i') }],
    results: &[Dims::All('i')],
    groups: &[g('i', Pass), g('k', FactorKind::Reduction)],
    reduction: Some(Reduction { combine: Combine::Kind, what: "reduced dimension" }),
    priority: NORMAL,
});
/// The reduced dim needs replication; kept dims pass through.
pub const ARG_REDUCE: ShardingRule = ShardingRule::Einsum(Einsum {
    operands: &[Dims::Placed { at: &[('k', Place::One("dim"))], rest: Some('i') }],
    results: &[Dims::All('i')],
    groups: &[g('i', Pass), g('k', NeedReplication)],
    reduction: None,
    priority: NORMAL,
});
/// Batch and free dims pass through; contracting dims are reductions.
pub const DOT: ShardingRule = ShardingRule::Einsum(Einsum {
    operands: &[
        Dims::Placed { at: &[('b', Place::List("lhs_batch")), ('k', Place::List("lhs_contract"))], rest: Some('i') },
        Dims::Placed { at: &[('b', Place::List("rhs_batch")), ('k', Place::List("rhs_contract"))], rest: Some('j') },
    ],
    results: &[Dims::Seq(&['b', 'i', 'j'])],
    groups: &[g('b', Pass), g('i', Pass), g('j', Pass), g('k', FactorKind::Reduction)],
    reduction: Some(Reduction { combine: Combine::Sum, what: "contracting dimension" }),
    priority: NORMAL,
});
/// reduce_window (operand 0) and select_and_scatter_add (operand 1 is the
/// window's input): dims with a trivial window pass through; windowed dims are
/// permutation factors of the input's size.
pub const fn window(input: usize) -> ShardingRule {
    per_dim(T::TrivialWindow, Otherwise::Permutation { sized_by: input })
}

impl ShardingRule {
    /// Propagation priority (Shardy's op priority): lower runs first.
    /// Elementwise-like ops, reshapes, transposes, calls and sources before
    /// contractions, reductions and the rest; broadcast last.
    pub fn priority(self) -> u8 {
        match self {
            ShardingRule::Einsum(e) => e.priority,
            ShardingRule::PerDim(p) => p.priority,
            ShardingRule::Custom(Custom::Reshape) | ShardingRule::Call | ShardingRule::ControlFlow => FIRST,
            ShardingRule::Custom(_) | ShardingRule::Manual | ShardingRule::Transform => NORMAL,
        }
    }

    /// The rule in Shardy-like notation with its letters standing for groups
    /// of dims (`i…`: every dim, in order; `k@dims`: the dims attribute `dims`
    /// lists), for documentation. `pjc explain` prints each instruction's
    /// instantiated rule instead.
    pub fn notation(self) -> String {
        match self {
            ShardingRule::Einsum(e) => einsum_notation(&e),
            ShardingRule::PerDim(p) => per_dim_notation(&p),
            ShardingRule::Custom(c) => match c {
                Custom::Reshape => "([i, j]) -> ([ij]) and splits: the common refinement of both shapes".into(),
                Custom::Convolution => {
                    "([b, s, f], [w, f, o]) -> ([b, s, o]) reduction={f} permutation={s} need_replication={w}".into()
                }
                Custom::Gather => "([a, x, c], [i]) -> ([a, i, c]) need_replication={x}".into(),
                Custom::ScatterAdd => "([a, x, c], [i], [a, i, c]) -> ([a, x, c]) reduction={i} need_replication={x}".into(),
            },
            ShardingRule::Call => "(the callee's parameters and results)".into(),
            ShardingRule::ControlFlow => "(one sharding per carried value through the bodies)".into(),
            ShardingRule::Manual => "(manual: spmd only)".into(),
            ShardingRule::Transform => "(expanded before propagation)".into(),
        }
    }
}

fn dims_notation(d: &Dims) -> String {
    match d {
        Dims::All(c) => format!("[{c}…]"),
        Dims::Seq(cs) => format!("[{}]", cs.iter().map(|c| format!("{c}…")).collect::<Vec<_>>().join(", ")),
        Dims::Placed { at, rest } => {
            let mut parts: Vec<String> = at
                .iter()
                .map(|(c, p)| match p {
                    Place::One(a) => format!("{c}@{a}"),
                    Place::List(a) | Place::Set(a) => format!("{c}…@{a}"),
                })
                .collect();
            if let Some(r) = rest {
                parts.push(format!("{r}…"));
            }
            format!("[{}]", parts.join(", "))
        }
    }
}

fn kinds_notation(groups: &[(String, FactorKind)]) -> String {
    let mut out = String::new();
    for kind in [FactorKind::Reduction, FactorKind::NeedReplication, FactorKind::Permutation] {
        let names: Vec<&str> = groups.iter().filter(|g| g.1 == kind).map(|g| g.0.as_str()).collect();
        if !names.is_empty() {
            out.push_str(&format!(" {}={{{}}}", kind.keyword().unwrap(), names.join(", ")));
        }
    }
    out
}

fn einsum_notation(e: &Einsum) -> String {
    let side = |ds: &[Dims]| ds.iter().map(dims_notation).collect::<Vec<_>>().join(", ");
    let groups: Vec<(String, FactorKind)> = e.groups.iter().map(|g| (g.letter.to_string(), g.kind)).collect();
    format!("({}) -> ({}){}", side(e.operands), side(e.results), kinds_notation(&groups))
}

fn per_dim_notation(p: &PerDim) -> String {
    let test = match p.pass {
        DimTest::Always => return "([d…], [d…]) -> ([d…]) (scalar operands join nothing)".into(),
        DimTest::NotAt(a) => format!("d ≠ {a}"),
        DimTest::NotIn(a) => format!("d ∉ {a}"),
        DimTest::SameSize(a, b) => format!("{} and {} have the same size at d", tensor_name(a), tensor_name(b)),
        DimTest::Zero(attrs) => format!("{} are 0 at d", attrs.join(", ")),
        DimTest::TrivialWindow => "the window is 1 wide, unstrided and unpadded at d".into(),
        DimTest::NotLast => "d is not the last dim".into(),
    };
    let otherwise = match p.otherwise {
        Otherwise::Permutation { sized_by } => format!("permutation (sized by operand {sized_by})"),
        Otherwise::NeedReplication { shared: [] } => "need_replication, one per tensor".into(),
        Otherwise::NeedReplication { shared } => format!(
            "need_replication, shared by {} and one per other tensor",
            shared.iter().map(|&t| tensor_name(t)).collect::<Vec<_>>().join(", ")
        ),
    };
    format!("([d…], …) -> ([d…]) per dim d: pass-through where {test}, else {otherwise}")
}

fn tensor_name(t: Tensor) -> String {
    match t {
        Tensor::Operand(k) => format!("operand {k}"),
        Tensor::Result => "the result".into(),
    }
}
