//! A factor rule instance ([`FactorRule`]): which factors each dimension of
//! each operand and result of one instruction is made of, their kinds and
//! sizes, how split reductions complete ([`Completion`]), and the rule in
//! Shardy's notation. `rules.rs` (declared rules) and `rules/` (hand-written
//! ones) build them; propagation, the partitioner and `pjc explain` read them.

use pjc_dialects::FactorKind;
use pjc_ir::{ReduceKind, TensorType};

/// How the partitioner completes the partial results left by split reduction
/// factors.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Completion {
    /// The collective kind (`all_reduce`/`reduce_scatter`).
    pub kind: ReduceKind,
    /// What the reduction factors are, for explanations ("contracting dimension").
    pub what: &'static str,
}

/// A factor rule instance: `dims[t][d]` lists the factors (major to minor) that
/// dimension `d` of tensor `t` (operands first, then results) is made of.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FactorRule {
    pub kinds: Vec<FactorKind>,
    /// The size of each factor.
    pub sizes: Vec<u64>,
    pub dims: Vec<Vec<Vec<usize>>>,
    /// How many of the tensors are operands.
    pub operands: usize,
    /// `None` where split reduction factors cannot be completed by a
    /// collective (they then stay unsplit), or where there are none.
    pub completion: Option<Completion>,
    /// The name of each factor in [`FactorRule::notation`]: for an
    /// [`Einsum`], its group's letter (with the element's index where the
    /// group has several); empty for the other rules, whose factors are
    /// lettered in order from `i`.
    pub names: Vec<String>,
}

impl FactorRule {
    pub(crate) fn with_tensors(operands: usize, types: &[&TensorType]) -> FactorRule {
        FactorRule { dims: types.iter().map(|t| vec![vec![]; t.rank()]).collect(), operands, ..FactorRule::default() }
    }
    pub(crate) fn factor(&mut self, kind: FactorKind, size: u64) -> usize {
        self.kinds.push(kind);
        self.sizes.push(size);
        self.kinds.len() - 1
    }
    /// A new factor of dimension `d` of tensor `t` and of every other (tensor, dim) listed.
    pub(crate) fn link(&mut self, kind: FactorKind, size: u64, at: &[(usize, usize)]) {
        if size <= 1 {
            return; // a size-1 dimension cannot be split
        }
        let f = self.factor(kind, size);
        for &(t, d) in at {
            self.dims[t][d].push(f);
        }
    }

    /// Identity between two tensors of the same shape (calls, returns).
    pub fn identity(t: &TensorType) -> FactorRule {
        let mut r = FactorRule::with_tensors(1, &[t, t]);
        for d in 0..t.rank() {
            r.link(FactorKind::Pass, t.shape[d], &[(0, d), (1, d)]);
        }
        r
    }

    /// The rule in Shardy's notation: each tensor's dims as factor names (`_`
    /// for a dim with no factor, several names for a dim made of several),
    /// the factor sizes, and the factors of each non-pass-through kind —
    /// `([i, k], [k, j]) -> ([i, j]) {i=8, j=6, k=4} reduction={k}`.
    pub fn notation(&self) -> String {
        let named = self.names.len() == self.kinds.len();
        let name = |f: usize| if named { self.names[f].clone() } else { factor_name(f, self.kinds.len()) };
        // Several factors of one dim are written together (`ij`) where every
        // name is one letter, else joined by `*`.
        let short = if named { self.names.iter().all(|n| n.chars().count() == 1) } else { self.kinds.len() <= LETTERS.len() };
        let tensor = |dims: &Vec<Vec<usize>>| {
            let ds: Vec<String> = dims
                .iter()
                .map(|fs| match fs.len() {
                    0 => "_".to_string(),
                    _ if short => fs.iter().map(|&f| name(f)).collect(),
                    _ => fs.iter().map(|&f| name(f)).collect::<Vec<_>>().join("*"),
                })
                .collect();
            format!("[{}]", ds.join(", "))
        };
        let side = |ts: &[Vec<Vec<usize>>]| ts.iter().map(tensor).collect::<Vec<_>>().join(", ");
        let mut out = format!("({}) -> ({})", side(&self.dims[..self.operands]), side(&self.dims[self.operands..]));
        if !self.sizes.is_empty() {
            let sizes: Vec<String> = self.sizes.iter().enumerate().map(|(f, s)| format!("{}={s}", name(f))).collect();
            out.push_str(&format!(" {{{}}}", sizes.join(", ")));
        }
        for kind in [FactorKind::Reduction, FactorKind::NeedReplication, FactorKind::Permutation] {
            let fs: Vec<String> = (0..self.kinds.len()).filter(|&f| self.kinds[f] == kind).map(name).collect();
            if !fs.is_empty() {
                out.push_str(&format!(" {}={{{}}}", kind.keyword().unwrap(), fs.join(", ")));
            }
        }
        out
    }
}

/// Factor names in order (Shardy's start at `i`).
const LETTERS: &str = "ijklmnopqrstuvwxyzabcdefgh";

/// The name of factor `f` of a rule with `count` factors: a letter, or `f<N>`
/// for rules with more factors than letters.
fn factor_name(f: usize, count: usize) -> String {
    match LETTERS.chars().nth(f) {
        Some(c) if count <= LETTERS.len() => c.to_string(),
        _ => format!("f{f}"),
    }
}
