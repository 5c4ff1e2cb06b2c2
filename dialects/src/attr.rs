//! Attribute schemas: what each op's `{name=value}` entries may hold.

use crate::kinds::{names, ReduceKind};

/// The shape of an attribute's value, checked by the verifier.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum AttrKind {
    /// Any integer.
    Int,
    /// A dimension index of the op's main operand (checked in range).
    Dim,
    /// A list of distinct dimension indices of the op's main operand.
    DimList,
    /// A list of integers whose meaning the op's type rule checks.
    IntList,
    /// A list of `[lo, hi]` integer pairs (padding).
    PadList,
    /// One identifier out of a fixed set.
    Enum(&'static [&'static str]),
    /// A mesh axis name.
    Axis,
    /// A list of distinct mesh axis names.
    AxisList,
    /// A string (e.g. convolution's dimension labels).
    Str,
    /// A list whose entries are integers or the identifier `none` (vmap).
    DimOrNoneList,
    /// `true` or `false` (sort's `descending`, scan's `reverse`).
    Bool,
}

/// The value an attribute takes when it is omitted.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum AttrDefault {
    /// The attribute must be written.
    Required,
    /// A fixed integer.
    Int(i64),
    /// A fixed identifier.
    Enum(&'static str),
    /// A fixed boolean.
    Bool(bool),
    /// The empty list `[]`.
    EmptyList,
    /// A list of 1s, one per window dimension of the op.
    Ones,
    /// A list of 0s, one per window dimension of the op.
    Zeros,
    /// A list of `[0,0]` pairs, one per window dimension of the op.
    ZeroPairs,
}

/// One attribute of an op's declaration.
#[derive(Copy, Clone, Debug)]
pub struct AttrDef {
    pub name: &'static str,
    pub kind: AttrKind,
    pub default: AttrDefault,
}

pub const fn attr(name: &'static str, kind: AttrKind, default: AttrDefault) -> AttrDef {
    AttrDef { name, kind, default }
}

pub const fn req(name: &'static str, kind: AttrKind) -> AttrDef {
    AttrDef { name, kind, default: AttrDefault::Required }
}

pub const REDUCE_KINDS: &[&str] = &names(ReduceKind::ALL);
pub const COLLECTIVE_KINDS: &[&str] = &names(ReduceKind::COLLECTIVE);
pub const WINDOW_KINDS: &[&str] = &names(ReduceKind::WINDOW);
/// `scatter`'s combining kinds (section 7; `add` is `scatter_add`).
pub const SCATTER_KINDS: &[&str] = &names_of_scatter(crate::kinds::ScatterKind::ALL);
const fn names_of_scatter<const N: usize>(kinds: [crate::kinds::ScatterKind; N]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = kinds[i].name();
        i += 1;
    }
    out
}
pub const COMPARE_DIRS: &[&str] = &["eq", "ne", "lt", "le", "gt", "ge"];

/// An attribute missing or of the wrong shape where a verified instruction
/// has it (typed accessors report this instead of guessing a value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttrError(pub String);

impl std::fmt::Display for AttrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AttrError {}
