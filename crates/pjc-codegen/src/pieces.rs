//! Piecewise elementwise kernels: a kernel whose body selects between
//! values by comparing the innermost output coordinate with constants (a
//! `concatenate` along that dimension — the packing of a combined
//! all-reduce is one, of a handful of gradients — or a select on fixed
//! ranges) is compiled as one loop per range between those constants, each
//! with the kernel body simplified for its range ([`specialize`]): the
//! comparisons are constants there, so each loop reads only its own part,
//! and the part's index arithmetic loses its clamps (`max(min(c - s, n - 1),
//! 0)` is `c - s` inside the part) and its flattening divisions
//! (`(i / d) * d + i % d` is `i`), which leaves contiguous loads LLVM
//! vectorizes. Every value is the one the whole body computes at that point:
//! only nodes whose value is fixed on the range are replaced.

use pjc_ir::DType;
use pjc_plan::kernel::{CmpDir, IndexOp, Kernel, Node, NodeId};

/// The most ranges a kernel is split into (more cut points: one loop).
pub const MAX_PIECES: usize = 32;

/// The constants that coordinate `coord` is compared with (`Lt`, `Le`,
/// `Gt`, `Ge` against an integer constant) in the live body of `k`, as the
/// starts of ranges within `[0, len)`, sorted; empty when there are none or
/// more than [`MAX_PIECES`] ranges would result.
pub fn cut_points(k: &Kernel, live: &[bool], coord: usize, len: u64) -> Vec<i128> {
    let is_coord = |n: NodeId| matches!(k.nodes[n], Node::Coord(c) if c == coord);
    let konst = |n: NodeId| match k.nodes[n] {
        Node::ConstInt(x, _) => Some(x),
        _ => None,
    };
    let mut cuts = vec![];
    for (i, node) in k.nodes.iter().enumerate() {
        if !live[i] {
            continue;
        }
        if let Node::Compare { dir, a, b } = *node {
            // c < s, c >= s: the range splits at s; c <= s, c > s: at s + 1.
            let at = match (is_coord(a), konst(b), is_coord(b), konst(a)) {
                (true, Some(s), _, _) => match dir {
                    CmpDir::Lt | CmpDir::Ge => Some(s),
                    CmpDir::Le | CmpDir::Gt => Some(s + 1),
                    _ => None,
                },
                (_, _, true, Some(s)) => match dir {
                    CmpDir::Gt | CmpDir::Le => Some(s),
                    CmpDir::Ge | CmpDir::Lt => Some(s + 1),
                    _ => None,
                },
                _ => None,
            };
            if let Some(s) = at.filter(|&s| s > 0 && s < len as i128) {
                cuts.push(s);
            }
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    if cuts.is_empty() || cuts.len() + 1 > MAX_PIECES {
        return vec![];
    }
    cuts
}

/// `k` with coordinate `coord` known to lie in `[lo, hi)` (`lo < hi`):
/// every integer (index) node gets a range, and nodes whose value that range
/// fixes are replaced — comparisons it decides by constants, selects on a
/// constant by the chosen operand, `min`/`max`/`/`/`%` it makes trivial by
/// their operand, `(i / d) * d + i % d` by `i`. Node numbers are kept (the
/// replaced ones, and what only they used, become dead).
pub fn specialize(k: &Kernel, coord: usize, lo: i128, hi: i128) -> Kernel {
    let rank = k.shape.len();
    let coord_size = |c: usize| -> i128 {
        if c < rank {
            k.shape[c] as i128
        } else {
            k.reduce.as_ref().map_or(1, |r| r.shape.get(c - rank).copied().unwrap_or(1) as i128)
        }
    };
    let mut out = k.clone();
    let mut subst: Vec<NodeId> = (0..k.nodes.len()).collect();
    let mut range: Vec<Option<(i128, i128)>> = vec![None; k.nodes.len()];
    for i in 0..k.nodes.len() {
        let s = |n: NodeId| subst[n];
        let node = match k.nodes[i].clone() {
            Node::Load { input, index } => Node::Load { input, index: s(index) },
            Node::Unary { op, x } => Node::Unary { op, x: s(x) },
            Node::Binary { op, a, b } => Node::Binary { op, a: s(a), b: s(b) },
            Node::Compare { dir, a, b } => Node::Compare { dir, a: s(a), b: s(b) },
            Node::Select { cond, a, b } => Node::Select { cond: s(cond), a: s(a), b: s(b) },
            Node::Convert { x, to } => Node::Convert { x: s(x), to },
            Node::Bitcast { x, from, to } => Node::Bitcast { x: s(x), from, to },
            Node::Index { op, a, b } => Node::Index { op, a: s(a), b: s(b) },
            n => n,
        };
        let konst = |n: NodeId, out: &Kernel| match out.nodes[n] {
            Node::ConstInt(x, _) => Some(x),
            _ => None,
        };
        let mut replaced: Option<NodeId> = None;
        let mut value: Option<i128> = None;
        let mut truth: Option<bool> = None;
        match &node {
            Node::Coord(c) if *c == coord => range[i] = Some((lo, hi - 1)),
            Node::Coord(c) => range[i] = Some((0, coord_size(*c) - 1)),
            Node::ConstInt(x, DType::I64) => range[i] = Some((*x, *x)),
            Node::Index { op, a, b } if identity(*op, konst(*a, &out), konst(*b, &out)).is_some() => {
                replaced = Some(if identity(*op, konst(*a, &out), konst(*b, &out)) == Some(0) { *a } else { *b });
            }
            Node::Index { op, a, b } => {
                let (ra, rb) = (range[*a], range[*b]);
                match op {
                    IndexOp::Add => {
                        if let Some(x) = flattening_identity(&out, *a, *b).or_else(|| flattening_identity(&out, *b, *a)) {
                            replaced = Some(x);
                        } else if let (Some((la, ha)), Some((lb, hb))) = (ra, rb) {
                            range[i] = Some((la.saturating_add(lb), ha.saturating_add(hb)));
                        }
                    }
                    IndexOp::Sub => {
                        if let (Some((la, ha)), Some((lb, hb))) = (ra, rb) {
                            range[i] = Some((la.saturating_sub(hb), ha.saturating_sub(lb)));
                        }
                    }
                    IndexOp::Mul => {
                        if let (Some((la, ha)), Some((lb, hb))) = (ra, rb) {
                            let p = [la.saturating_mul(lb), la.saturating_mul(hb), ha.saturating_mul(lb), ha.saturating_mul(hb)];
                            range[i] = Some((*p.iter().min().unwrap(), *p.iter().max().unwrap()));
                        }
                    }
                    IndexOp::Div => {
                        if let (Some((la, ha)), Some(d)) = (ra, konst(*b, &out).filter(|&d| d > 0)) {
                            if la >= 0 && ha < d {
                                value = Some(0);
                            } else {
                                range[i] = Some((la.div_euclid(d), ha.div_euclid(d)));
                            }
                        }
                    }
                    IndexOp::Rem => {
                        if let Some(d) = konst(*b, &out).filter(|&d| d > 0) {
                            match ra {
                                Some((la, ha)) if la >= 0 && ha < d => replaced = Some(*a),
                                _ => range[i] = Some((0, d - 1)),
                            }
                        }
                    }
                    IndexOp::Min | IndexOp::Max => {
                        if let (Some((la, ha)), Some((lb, hb))) = (ra, rb) {
                            let min = *op == IndexOp::Min;
                            if ha <= lb {
                                replaced = Some(if min { *a } else { *b });
                            } else if hb <= la {
                                replaced = Some(if min { *b } else { *a });
                            } else if min {
                                range[i] = Some((la.min(lb), ha.min(hb)));
                            } else {
                                range[i] = Some((la.max(lb), ha.max(hb)));
                            }
                        }
                    }
                    IndexOp::Lt => {
                        if let (Some((la, ha)), Some((lb, hb))) = (ra, rb) {
                            if ha < lb {
                                value = Some(1);
                            } else if la >= hb {
                                value = Some(0);
                            } else {
                                range[i] = Some((0, 1));
                            }
                        }
                    }
                }
            }
            Node::Compare { dir, a, b } if k.types[*a] == DType::I64 => {
                if let (Some((la, ha)), Some((lb, hb))) = (range[*a], range[*b]) {
                    truth = match dir {
                        CmpDir::Lt if ha < lb => Some(true),
                        CmpDir::Lt if la >= hb => Some(false),
                        CmpDir::Le if ha <= lb => Some(true),
                        CmpDir::Le if la > hb => Some(false),
                        CmpDir::Gt if la > hb => Some(true),
                        CmpDir::Gt if ha <= lb => Some(false),
                        CmpDir::Ge if la >= hb => Some(true),
                        CmpDir::Ge if ha < lb => Some(false),
                        CmpDir::Eq if la == ha && lb == hb && la == lb => Some(true),
                        CmpDir::Eq | CmpDir::Ne if ha < lb || hb < la => Some(*dir == CmpDir::Ne),
                        _ => None,
                    };
                }
            }
            Node::Select { cond, a, b } => {
                if let Node::ConstBool(t) = out.nodes[*cond] {
                    replaced = Some(if t { *a } else { *b });
                }
            }
            _ => {}
        }
        out.nodes[i] = node;
        if let Some(r) = replaced {
            subst[i] = r;
            range[i] = range[r];
        } else if let Some(v) = value {
            out.nodes[i] = Node::ConstInt(v, DType::I64);
            range[i] = Some((v, v));
        } else if let Some(t) = truth {
            out.nodes[i] = Node::ConstBool(t);
        }
    }
    for r in out.results.iter_mut() {
        *r = subst[*r];
    }
    out
}

/// Which operand (0: `a`, 1: `b`) index op `op` returns unchanged, given
/// which operands are constants: `x + 0`, `0 + x`, `x - 0`, `x * 1`, `1 * x`,
/// `x / 1`.
fn identity(op: IndexOp, a: Option<i128>, b: Option<i128>) -> Option<u8> {
    match (op, a, b) {
        (IndexOp::Add | IndexOp::Sub, _, Some(0)) => Some(0),
        (IndexOp::Add, Some(0), _) => Some(1),
        (IndexOp::Mul | IndexOp::Div, _, Some(1)) => Some(0),
        (IndexOp::Mul, Some(1), _) => Some(1),
        _ => None,
    }
}

/// `x` when `mul` is `(x / d) * d` and `rem` is `x % d` for one constant
/// `d > 0` (floor division and a non-negative remainder: the sum is `x`).
fn flattening_identity(k: &Kernel, mul: NodeId, rem: NodeId) -> Option<NodeId> {
    let konst = |n: NodeId| match k.nodes[n] {
        Node::ConstInt(x, _) => Some(x),
        _ => None,
    };
    let Node::Index { op: IndexOp::Rem, a: x, b: d } = k.nodes[rem] else { return None };
    let d = konst(d).filter(|&d| d > 0)?;
    let Node::Index { op: IndexOp::Mul, a: p, b: q } = k.nodes[mul] else { return None };
    let div = match (konst(p), konst(q)) {
        (_, Some(c)) if c == d => p,
        (Some(c), _) if c == d => q,
        _ => return None,
    };
    let Node::Index { op: IndexOp::Div, a: y, b: e } = k.nodes[div] else { return None };
    (y == x && konst(e) == Some(d)).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lower::live_nodes;

    fn plan(src: &str) -> pjc_plan::Plan {
        let m = pjc_front::load(src).unwrap_or_else(|e| panic!("{e:?}"));
        pjc_fusion::plan(&m.funcs[m.func_by_name("main").unwrap()]).unwrap()
    }

    /// A concatenation of three parts splits at their starts, and in each
    /// range only that part's load is live, at an affine index.
    #[test]
    fn concatenations_split_into_parts_with_affine_loads() {
        let p = plan("func @main(%a: f32[3,4], %b: f32[5], %c: f32[2,2]) -> (y: f32[21]) {
  %fa = reshape %a : f32[12]
  %fc = reshape %c : f32[4]
  %y = concat %fa, %b, %fc {dim=0} : f32[21]
  return %y
}");
        let k = p.kernels().next().unwrap();
        let live = live_nodes(k);
        assert_eq!(cut_points(k, &live, 0, 21), vec![12, 17]);
        for (lo, hi, input) in [(0, 12, 0), (12, 17, 1), (17, 21, 2)] {
            let s = specialize(k, 0, lo, hi);
            let live = live_nodes(&s);
            let loads: Vec<(usize, NodeId)> = s.nodes.iter().enumerate().filter(|(i, _)| live[*i]).filter_map(|(_, n)| match n {
                Node::Load { input, index } => Some((*input, *index)),
                _ => None,
            }).collect();
            assert_eq!(loads.len(), 1, "[{lo}, {hi}): {:?}", s.nodes);
            assert_eq!(loads[0].0, input);
            let a = s.affine(loads[0].1).unwrap_or_else(|| panic!("[{lo}, {hi}): the index is not affine: {:?}", s.nodes));
            assert_eq!((a.coeff(0), a.constant), (1, -lo), "[{lo}, {hi})");
            assert!(!s.nodes.iter().enumerate().any(|(i, n)| live[i] && matches!(n, Node::Select { .. })), "[{lo}, {hi})");
        }
    }

    #[test]
    fn kernels_without_coordinate_comparisons_are_not_split() {
        let p = plan("func @main(%a: f32[8], %b: f32[8]) -> (y: f32[8]) {
  %y = add %a, %b
  return %y
}");
        let k = p.kernels().next().unwrap();
        assert!(cut_points(k, &live_nodes(k), 0, 8).is_empty());
    }
}
