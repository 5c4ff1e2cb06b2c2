//! Typed access to an instruction's attributes, with the op table's defaults
//! applied: the one place that resolves an omitted attribute (verified IR
//! omits every attribute equal to its default, so every reader needs this).
//! A required attribute that is missing, or a value of the wrong shape, is an
//! [`AttrError`] naming the op and the attribute — never a guessed value.

use crate::{AttrValue, InstData, TensorType};
use pjc_dialects::{AttrDef, AttrDefault, AttrError, Opcode, ReduceKind, ScatterKind};
use std::borrow::Cow;

/// The attributes of one instruction, defaults included.
#[derive(Copy, Clone)]
pub struct Attrs<'a> {
    inst: &'a InstData,
    /// The length of window-shaped defaults (`Ones`, `Zeros`, `ZeroPairs`).
    window_rank: usize,
}

type R<T> = Result<T, AttrError>;

impl<'a> Attrs<'a> {
    /// The attributes of `inst`, whose operands have these types.
    pub fn new(inst: &'a InstData, operands: &[&TensorType]) -> Attrs<'a> {
        Attrs { inst, window_rank: window_rank(inst.op, operands) }
    }

    /// The attributes of `inst`, whose operands have these ranks.
    pub fn with_ranks(inst: &'a InstData, ranks: &[usize]) -> Attrs<'a> {
        Attrs { inst, window_rank: window_rank_of(inst.op, ranks) }
    }

    fn error(&self, name: &str, what: &str) -> AttrError {
        AttrError(format!("'{}' attribute '{name}' {what}", self.inst.op))
    }

    /// The value as written, or the declared default.
    pub fn get(&self, name: &str) -> R<Cow<'a, AttrValue>> {
        if let Some(v) = self.inst.attr(name) {
            return Ok(Cow::Borrowed(v));
        }
        let def = self.inst.op.def().attrs.iter().find(|a| a.name == name);
        let def = def.ok_or_else(|| self.error(name, "is not declared"))?;
        default_value(def, self.window_rank).map(Cow::Owned).ok_or_else(|| self.error(name, "is missing"))
    }

    pub fn int(&self, name: &str) -> R<i64> {
        self.get(name)?.as_int().ok_or_else(|| self.error(name, "is not an integer"))
    }

    /// A non-negative integer (a dimension, an axis index, a count).
    pub fn index(&self, name: &str) -> R<usize> {
        usize::try_from(self.int(name)?).map_err(|_| self.error(name, "is negative"))
    }

    pub fn ints(&self, name: &str) -> R<Vec<i64>> {
        self.get(name)?.as_ints().ok_or_else(|| self.error(name, "is not a list of integers"))
    }

    /// A list of non-negative integers (dimensions, sizes, strides).
    pub fn indices(&self, name: &str) -> R<Vec<usize>> {
        self.ints(name)?.into_iter().map(|i| usize::try_from(i).map_err(|_| self.error(name, "has a negative entry"))).collect()
    }

    /// A list of `[lo, hi]` pairs (padding).
    pub fn pairs(&self, name: &str) -> R<Vec<(i64, i64)>> {
        self.get(name)?.as_pairs().ok_or_else(|| self.error(name, "is not a list of pairs"))
    }

    pub fn bool(&self, name: &str) -> R<bool> {
        match *self.get(name)? {
            AttrValue::Bool(b) => Ok(b),
            _ => Err(self.error(name, "is not true or false")),
        }
    }

    /// `scatter`'s combining kind (`scatter_add` is `add`).
    pub fn scatter_kind(&self) -> R<ScatterKind> {
        if self.inst.op == Opcode::ScatterAdd {
            return Ok(ScatterKind::Add);
        }
        let k = self.ident("kind")?;
        ScatterKind::from_name(&k).ok_or_else(|| self.error("kind", &format!("names no scatter kind: '{k}'")))
    }

    pub fn ident(&self, name: &str) -> R<String> {
        self.get(name)?.as_ident().map(str::to_string).ok_or_else(|| self.error(name, "is not an identifier"))
    }

    pub fn string(&self, name: &str) -> R<String> {
        self.get(name)?.as_str().map(str::to_string).ok_or_else(|| self.error(name, "is not a string"))
    }

    /// A list of identifiers (mesh axes).
    pub fn idents(&self, name: &str) -> R<Vec<String>> {
        self.get(name)?.as_idents().ok_or_else(|| self.error(name, "is not a list of identifiers"))
    }

    /// The reduction kind of `reduce`, `reduce_window`, `all_reduce` and `reduce_scatter`.
    pub fn reduce_kind(&self) -> R<ReduceKind> {
        let k = self.ident("kind")?;
        ReduceKind::from_name(&k).ok_or_else(|| self.error("kind", &format!("names no reduction kind: '{k}'")))
    }
}

/// The length of the window-shaped default lists (`Ones`, `Zeros`, `ZeroPairs`).
pub fn window_rank(op: Opcode, operands: &[&TensorType]) -> usize {
    let ranks: Vec<usize> = operands.iter().map(|t| t.rank()).collect();
    window_rank_of(op, &ranks)
}

/// [`window_rank`] from the operands' ranks alone.
pub fn window_rank_of(op: Opcode, ranks: &[usize]) -> usize {
    match op {
        Opcode::Convolution => ranks.first().map_or(0, |r| r.saturating_sub(2)),
        Opcode::SelectAndScatterAdd => ranks.get(1).copied().unwrap_or(0),
        _ => ranks.first().copied().unwrap_or(0),
    }
}

/// The value an omitted attribute takes, or `None` when it is required.
pub fn default_value(def: &AttrDef, window_rank: usize) -> Option<AttrValue> {
    let n = window_rank;
    Some(match def.default {
        AttrDefault::Required => return None,
        AttrDefault::Int(i) => AttrValue::Int(i),
        AttrDefault::Enum(s) => AttrValue::Ident(s.to_string()),
        AttrDefault::Bool(b) => AttrValue::Bool(b),
        AttrDefault::EmptyList => AttrValue::List(vec![]),
        AttrDefault::Ones => AttrValue::int_list(&vec![1; n]),
        AttrDefault::Zeros => AttrValue::int_list(&vec![0; n]),
        AttrDefault::ZeroPairs => AttrValue::List(vec![AttrValue::int_list(&[0, 0]); n]),
    })
}

/// An attribute's value, its default when omitted, or `None` when a required
/// attribute is missing.
pub fn resolved_attr(inst: &InstData, name: &str, operands: &[&TensorType]) -> Option<AttrValue> {
    Attrs::new(inst, operands).get(name).ok().map(|v| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, Opcode};

    #[test]
    fn defaults_follow_the_window_rank() {
        let mut inst = InstData::new(Opcode::ReduceWindow);
        inst.set_attr("kind", AttrValue::Ident("max".into()));
        inst.set_attr("window", AttrValue::int_list(&[2, 2]));
        let t = TensorType::new(DType::F32, vec![4, 4]);
        let a = Attrs::new(&inst, &[&t]);
        assert_eq!(a.indices("strides").unwrap(), vec![1, 1]);
        assert_eq!(a.pairs("padding").unwrap(), vec![(0, 0), (0, 0)]);
        assert_eq!(a.reduce_kind().unwrap(), ReduceKind::Max);
        assert_eq!(Attrs::with_ranks(&inst, &[2]).pairs("padding").unwrap(), vec![(0, 0), (0, 0)]);
    }

    #[test]
    fn missing_and_mistyped_attributes_are_errors() {
        let mut inst = InstData::new(Opcode::Transpose);
        let a = Attrs::with_ranks(&inst, &[2]);
        assert_eq!(a.ints("perm").unwrap_err().0, "'transpose' attribute 'perm' is missing");
        assert!(a.ints("window").is_err());
        inst.set_attr("perm", AttrValue::Int(3));
        assert_eq!(Attrs::with_ranks(&inst, &[2]).ints("perm").unwrap_err().0, "'transpose' attribute 'perm' is not a list of integers");
        inst.set_attr("perm", AttrValue::int_list(&[1, -1]));
        assert!(Attrs::with_ranks(&inst, &[2]).indices("perm").is_err());
    }
}
