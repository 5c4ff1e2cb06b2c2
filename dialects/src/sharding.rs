//! Sharding rules as data: for every op, the family of its factor rule (Shardy
//! style). An op's dimensions map to *factors*; a factor is
//! - pass-through: sharding it on one tensor shards it the same way on the others;
//! - reduction: it appears only in operands (a contraction); sharding it gives
//!   partial results that need a reduction;
//! - need-replication: it cannot be split without changing the op's meaning
//!   (e.g. a sliced or concatenated dimension);
//! - permutation: splitting it needs data exchange between neighbours (spatial
//!   dims of windows: halo exchange; reversed dims).
//! The family names how to instantiate the rule from an instruction's attributes
//! and types (`pjc-sharding`'s `rules.rs`); [`ShardingRule::notation`] shows it in
//! Shardy's notation for documentation and `pjc explain`.

/// The factor-rule family of an op.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum ShardingRule {
    /// Same shape in, same shape out, dimension by dimension (scalars join nothing).
    Elementwise,
    /// No operands: every result dimension is a free pass-through factor.
    Source,
    /// Operand dim i is result dim dims[i]; new and stretched (1 → n) dims are result-only.
    Broadcast,
    /// Dimensions are split into the common refinement of both shapes.
    Reshape,
    /// Result dim i is operand dim perm[i].
    Transpose,
    /// Dims whose size changes need replication; unchanged dims pass through.
    Slice,
    /// The concatenated dim needs replication; the others pass through.
    Concat,
    /// Dims whose size changes need replication; start indices are scalars.
    DynamicSlice,
    /// Dims where the update is as big as the operand pass through; the others need
    /// replication (where the update lands depends on run-time indices).
    DynamicUpdateSlice,
    /// Padded dims need replication; unpadded dims pass through.
    Pad,
    /// Reversed dims are permutation factors; the others pass through.
    Reverse,
    /// Reduced dims are reduction factors; kept dims pass through.
    Reduce,
    /// The reduced dim needs replication; kept dims pass through.
    ArgReduce,
    /// Batch and free dims pass through; contracting dims are reductions.
    Dot,
    /// Batch passes through, input feature/kernel input is a reduction, output
    /// feature passes through, spatial dims are permutation factors, kernel spatial
    /// dims need replication.
    Convolution,
    /// Dims with a trivial window pass through; windowed dims are permutation factors.
    Window,
    /// Table dims other than the axis pass through to the result; index dims pass
    /// through to the result's index part; the table axis needs replication.
    Gather,
    /// The gather rule read backwards: base passes to the result; index and update
    /// index-part dims are reductions; the base axis needs replication.
    ScatterAdd,
    /// Collectives and axis_index: only in spmd funcs, where no propagation runs.
    Manual,
    /// Call operands/results link to the callee's parameters/results.
    Call,
    /// grad/vmap: expanded before propagation runs.
    Transform,
}

impl ShardingRule {
    /// The rule in Shardy-like notation, for docs and explanations.
    pub fn notation(self) -> &'static str {
        use ShardingRule::*;
        match self {
            Elementwise => "([i,j],[i,j]) -> ([i,j])",
            Source => "() -> ([i,j])",
            Broadcast => "([j]) -> ([i,j])   (dims=[1])",
            Reshape => "([i,j]) -> ([ij])   (and splits)",
            Transpose => "([i,j]) -> ([j,i])",
            Slice => "([i,j]) -> ([i,k]) need_replication={j,k}",
            Concat => "([i,j],[i,k]) -> ([i,l]) need_replication={j,k,l}",
            DynamicSlice => "([i,j],[],[]) -> ([i,k]) need_replication={j,k}",
            DynamicUpdateSlice => "([i,j],[i,k],[],[]) -> ([i,j]) need_replication={j,k}",
            Pad => "([i,j],[]) -> ([i,k]) need_replication={j,k}",
            Reverse => "([i,j]) -> ([i,j]) permutation={j}",
            Reduce => "([i,j]) -> ([i]) reduction={j}",
            ArgReduce => "([i,j]) -> ([i]) need_replication={j}",
            Dot => "([b,i,k],[b,k,j]) -> ([b,i,j]) reduction={k}",
            Convolution => "([b,s,c],[w,c,o]) -> ([b,s,o]) reduction={c} permutation={s} need_replication={w}",
            Window => "([i,s]) -> ([i,t]) permutation={s,t}",
            Gather => "([a,x,c],[i]) -> ([a,i,c]) need_replication={x}",
            ScatterAdd => "([a,x,c],[i],[a,i,c]) -> ([a,x,c]) reduction={i} need_replication={x}",
            Manual => "(manual: spmd only)",
            Call => "(callee's parameters and results)",
            Transform => "(expanded before propagation)",
        }
    }

    /// Propagation priority (Shardy's op priority): lower runs first.
    /// Elementwise-like ops and reshapes before contractions and reductions;
    /// broadcast last.
    pub fn priority(self) -> u8 {
        use ShardingRule::*;
        match self {
            Elementwise | Reshape | Transpose | Call | Source => 0,
            Broadcast => 2,
            _ => 1,
        }
    }
}
