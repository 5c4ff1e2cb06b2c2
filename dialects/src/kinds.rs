//! The closed sets behind enum-valued attributes and op families that several
//! stages share: reduction kinds (`reduce`, `reduce_window`, the collectives, the
//! kernel IR's reduction loops) and the collective ops themselves. Each stage
//! matches on these enums instead of comparing spellings, so a kind or a
//! collective added here is a compile error wherever it is not yet handled.

use crate::dtype::DType;

/// How a reduction combines values (spec sections 7, 8 and 11).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum ReduceKind {
    Sum,
    Prod,
    Max,
    Min,
    And,
    Or,
}

impl ReduceKind {
    /// Every kind, as `reduce` accepts them.
    pub const ALL: [ReduceKind; 6] =
        [ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min, ReduceKind::And, ReduceKind::Or];
    /// The kinds `all_reduce` and `reduce_scatter` accept.
    pub const COLLECTIVE: [ReduceKind; 4] = [ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min];
    /// The kinds `reduce_window` accepts.
    pub const WINDOW: [ReduceKind; 3] = [ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min];

    /// The spelling in PIR text.
    pub const fn name(self) -> &'static str {
        match self {
            ReduceKind::Sum => "sum",
            ReduceKind::Prod => "prod",
            ReduceKind::Max => "max",
            ReduceKind::Min => "min",
            ReduceKind::And => "and",
            ReduceKind::Or => "or",
        }
    }

    /// The kind spelled `s`.
    pub fn from_name(s: &str) -> Option<ReduceKind> {
        ReduceKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// The collective kind that combines partial results of a reduction of
    /// this kind over `dtype`, if one does: on `pred`, sum/or are `max` and
    /// prod/and are `min`; bitwise and/or of integers have no collective.
    pub fn collective_for(self, dtype: DType) -> Option<ReduceKind> {
        use ReduceKind::*;
        let pred = dtype.is_pred();
        match self {
            Sum | Or if pred => Some(Max),
            Prod | And if pred => Some(Min),
            Sum | Prod | Max | Min => Some(self),
            And | Or => None,
        }
    }
}

impl std::fmt::Display for ReduceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The spellings of `kinds`, for attribute schemas (`AttrKind::Enum`).
pub(crate) const fn names<const N: usize>(kinds: [ReduceKind; N]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = kinds[i].name();
        i += 1;
    }
    out
}

/// The collective ops of spec section 8. `OpDef::collective` says which op is
/// which; `Opcode::collective` and [`CollectiveKind::opcode`] convert.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum CollectiveKind {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    CollectivePermute,
}

impl CollectiveKind {
    pub const ALL: [CollectiveKind; 5] = [
        CollectiveKind::AllReduce,
        CollectiveKind::AllGather,
        CollectiveKind::ReduceScatter,
        CollectiveKind::AllToAll,
        CollectiveKind::CollectivePermute,
    ];

    /// Whether it combines values with a `kind` attribute.
    pub fn reduces(self) -> bool {
        match self {
            CollectiveKind::AllReduce | CollectiveKind::ReduceScatter => true,
            CollectiveKind::AllGather | CollectiveKind::AllToAll | CollectiveKind::CollectivePermute => false,
        }
    }

    /// The op's PIR spelling.
    pub fn name(self) -> &'static str {
        self.opcode().name()
    }
}

impl std::fmt::Display for CollectiveKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in ReduceKind::ALL {
            assert_eq!(ReduceKind::from_name(k.name()), Some(k));
        }
        assert_eq!(ReduceKind::from_name("mean"), None);
    }

    #[test]
    fn collective_kinds_of_reductions() {
        assert_eq!(ReduceKind::Sum.collective_for(DType::F32), Some(ReduceKind::Sum));
        assert_eq!(ReduceKind::Or.collective_for(DType::Pred), Some(ReduceKind::Max));
        assert_eq!(ReduceKind::And.collective_for(DType::Pred), Some(ReduceKind::Min));
        assert_eq!(ReduceKind::Prod.collective_for(DType::Pred), Some(ReduceKind::Min));
        assert_eq!(ReduceKind::And.collective_for(DType::I32), None);
        for k in ReduceKind::ALL {
            if let Some(c) = k.collective_for(DType::I8) {
                assert!(ReduceKind::COLLECTIVE.contains(&c));
            }
        }
    }
}

/// How `scatter` combines an update with what is at its position (section 7).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum ScatterKind {
    /// Replace; of duplicate indices the update last in row-major index order wins.
    Set,
    Add,
    Mul,
    Max,
    Min,
}

impl ScatterKind {
    pub const ALL: [ScatterKind; 5] = [ScatterKind::Set, ScatterKind::Add, ScatterKind::Mul, ScatterKind::Max, ScatterKind::Min];

    /// The spelling in PIR text.
    pub const fn name(self) -> &'static str {
        match self {
            ScatterKind::Set => "set",
            ScatterKind::Add => "add",
            ScatterKind::Mul => "mul",
            ScatterKind::Max => "max",
            ScatterKind::Min => "min",
        }
    }

    pub fn from_name(s: &str) -> Option<ScatterKind> {
        ScatterKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// The reduction that combines like this kind (none for `set`).
    pub fn reduce_kind(self) -> Option<ReduceKind> {
        match self {
            ScatterKind::Set => None,
            ScatterKind::Add => Some(ReduceKind::Sum),
            ScatterKind::Mul => Some(ReduceKind::Prod),
            ScatterKind::Max => Some(ReduceKind::Max),
            ScatterKind::Min => Some(ReduceKind::Min),
        }
    }
}

impl std::fmt::Display for ScatterKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
