//! Moving a local value from one sharding to another with the cheapest
//! communication pjc knows (XLA's preference order): nothing when they agree;
//! a local slice at the device's position when only new splits are added;
//! `all_to_all` when one axis moves between dimensions; otherwise `all_gather`
//! of the splits that must go, followed by a local slice for the new ones.
//! A value resharded once to a target is reused by later uses in the same
//! function, and the cost of a reshard can be asked before emitting it
//! (`local.rs` compares candidate factor splits by it).

use crate::Partitioner;
use pjc_ir::{AttrValue, CollectiveKind, DType, DimSharding, Number, Opcode, Sharding, TensorType, Value};

/// Axes of each dim (empty = replicated); `?` counts as replicated.
pub(crate) fn dim_axes(s: &Sharding) -> Vec<Vec<String>> {
    s.dims
        .iter()
        .map(|d| match d {
            DimSharding::Axes(a) => a.clone(),
            _ => vec![],
        })
        .collect()
}

pub fn sharding_of(axes: &[Vec<String>]) -> Sharding {
    Sharding {
        dims: axes
            .iter()
            .map(|a| if a.is_empty() { DimSharding::Replicated } else { DimSharding::Axes(a.clone()) })
            .collect(),
    }
}

impl Partitioner<'_> {
    /// Local type of a global type under per-dim axes.
    pub(crate) fn local(&self, global: &TensorType, axes: &[Vec<String>]) -> TensorType {
        let mut t = global.clone();
        for (d, a) in axes.iter().enumerate() {
            t.shape[d] /= self.mesh.group_size(a.iter().map(|x| x.as_str()));
        }
        t
    }

    /// This device's block index along `axes` (first axis major) as an i32 scalar.
    pub(crate) fn position(&mut self, axes: &[String], name: &str) -> Value {
        let mut acc: Option<Value> = None;
        for a in axes {
            let idx = self.b().build_typed(
                Opcode::AxisIndex,
                &[],
                vec![("axis", AttrValue::Ident(a.clone()))],
                TensorType::scalar(DType::I32),
                &format!("{name}.{a}"),
            );
            acc = Some(match acc {
                None => idx,
                Some(prev) => {
                    let size = self.mesh.size(a).unwrap_or(1) as i128;
                    let k = self.b().splat(Number::Int(size), TensorType::scalar(DType::I32), "size");
                    let scaled = self.b().build(Opcode::Mul, &[prev, k], vec![], name);
                    self.b().build(Opcode::Add, &[scaled, idx], vec![], name)
                }
            });
        }
        acc.expect("position of no axes")
    }

    /// Splits dims further, locally: `add[d]` are the axes to append to dim d's
    /// split (minor). No communication.
    fn local_split(&mut self, v: Value, add: &[Vec<String>], base: &str) -> Value {
        let ty = self.ty(v).clone();
        let mut starts = vec![];
        let mut sizes = vec![];
        for (d, a) in add.iter().enumerate() {
            if a.is_empty() {
                starts.push(self.b().splat(Number::Int(0), TensorType::scalar(DType::I32), "zero"));
                sizes.push(ty.shape[d] as i64);
            } else {
                let n = self.mesh.group_size(a.iter().map(|x| x.as_str()));
                let size = ty.shape[d] / n;
                let pos = self.position(a, &format!("{base}.pos"));
                let sz = self.b().splat(Number::Int(size as i128), TensorType::scalar(DType::I32), "block");
                starts.push(self.b().build(Opcode::Mul, &[pos, sz], vec![], &format!("{base}.off")));
                sizes.push(size as i64);
            }
        }
        let mut operands = vec![v];
        operands.extend(starts);
        self.b().build(Opcode::DynamicSlice, &operands, vec![("sizes", AttrValue::int_list(&sizes))], &format!("{base}.slice"))
    }

    /// The steps that move a local value of type `local` from `from` to
    /// `to`, cheapest first (the module doc's order). [`reshard`] emits
    /// them and [`reshard_bytes`] prices them, so what is priced is what
    /// is emitted.
    ///
    /// [`reshard`]: Partitioner::reshard
    /// [`reshard_bytes`]: Partitioner::reshard_bytes
    fn moves(&self, local: &TensorType, from: &[Vec<String>], to: &[Vec<String>]) -> Vec<Move> {
        if from == to {
            return vec![];
        }
        // all_to_all: one axis (minor-most) moves from dim i to the minor end of dim j.
        for i in 0..from.len() {
            for j in 0..from.len() {
                if i == j || from[i].is_empty() {
                    continue;
                }
                let a = from[i].last().unwrap();
                let moved_ok = to[i] == from[i][..from[i].len() - 1]
                    && to[j].len() == from[j].len() + 1
                    && to[j][..from[j].len()] == from[j][..]
                    && to[j].last() == Some(a)
                    && (0..from.len()).all(|k| k == i || k == j || from[k] == to[k]);
                if moved_ok && local.shape[j] % self.mesh.size(a).unwrap_or(1) == 0 {
                    return vec![Move::AllToAll { axis: a.clone(), split_dim: j, concat_dim: i }];
                }
            }
        }
        // Gather what is not a prefix of the target, then split locally.
        let mut out = vec![];
        let mut have: Vec<Vec<String>> = from.to_vec();
        for d in 0..from.len() {
            let keep = from[d].iter().zip(&to[d]).take_while(|(x, y)| x == y).count();
            // An axis kept here must not be needed by another dim of the target.
            let keep = (0..keep)
                .take_while(|&k| !to.iter().enumerate().any(|(e, t)| e != d && t.contains(&from[d][k])))
                .count();
            if keep < from[d].len() {
                out.push(Move::AllGather { axes: from[d][keep..].to_vec(), dim: d });
                have[d].truncate(keep);
            }
        }
        let add: Vec<Vec<String>> = (0..to.len()).map(|d| to[d][have[d].len()..].to_vec()).collect();
        if add.iter().any(|a| !a.is_empty()) {
            out.push(Move::Split(add));
        }
        out
    }

    /// The bytes each device sends (ring formulas, as [`Partitioner::record`]
    /// reports them) to reshard local value `v` of type `local` from `from`
    /// to `to`: 0 when an earlier reshard of `v` to `to` is reused.
    pub(crate) fn reshard_bytes(&self, v: Option<Value>, local: &TensorType, from: &[Vec<String>], to: &[Vec<String>]) -> u64 {
        if v.is_some_and(|v| self.reshards.contains_key(&(v, from.to_vec(), to.to_vec()))) {
            return 0;
        }
        let mut ty = local.clone();
        let mut bytes = 0u64;
        for m in self.moves(local, from, to) {
            match m {
                Move::AllToAll { axis, split_dim, concat_dim } => {
                    let n = self.mesh.size(&axis).unwrap_or(1);
                    let size = ty.bytes();
                    bytes = bytes.saturating_add(CollectiveKind::AllToAll.ring_bytes(size, size, n));
                    ty.shape[split_dim] /= n;
                    ty.shape[concat_dim] *= n;
                }
                Move::AllGather { axes, dim } => {
                    let n = self.mesh.group_size(axes.iter().map(|a| a.as_str()));
                    let before = ty.bytes();
                    ty.shape[dim] *= n;
                    bytes = bytes.saturating_add(CollectiveKind::AllGather.ring_bytes(before, ty.bytes(), n));
                }
                Move::Split(_) => {}
            }
        }
        bytes
    }


    /// Reshards local value `v` (of global type `global`) from `from` to `to`.
    /// `why` says which op needs it, for the collective's reason. A value
    /// resharded to the same target before, in the same function, is reused
    /// (its collectives dominate every later use: a body is straight-line
    /// code), as XLA's CSE merges equal all-gathers: an FSDP weight gathered
    /// for the forward product serves the backward one too.
    pub(crate) fn reshard(
        &mut self,
        v: Value,
        global: &TensorType,
        from: &[Vec<String>],
        to: &[Vec<String>],
        why: &str,
    ) -> Value {
        if from == to {
            return v;
        }
        let key = (v, from.to_vec(), to.to_vec());
        if let Some(&r) = self.reshards.get(&key) {
            return r;
        }
        let base = self.name(v);
        let reason = format!("{why}: {} -> {}", sharding_of(from), sharding_of(to));
        let mut cur = v;
        for m in self.moves(&self.ty(v).clone(), from, to) {
            cur = match m {
                Move::AllToAll { axis, split_dim, concat_dim } => {
                    let r = self.b().build(
                        Opcode::AllToAll,
                        &[cur],
                        vec![
                            ("axes", AttrValue::List(vec![AttrValue::Ident(axis.clone())])),
                            ("split_dim", AttrValue::Int(split_dim as i64)),
                            ("concat_dim", AttrValue::Int(concat_dim as i64)),
                        ],
                        &format!("{base}.a2a"),
                    );
                    self.record(r, vec![axis], reason.clone());
                    r
                }
                Move::AllGather { axes, dim } => {
                    let r = self.b().build(
                        Opcode::AllGather,
                        &[cur],
                        vec![
                            ("axes", AttrValue::List(axes.iter().map(|a| AttrValue::Ident(a.clone())).collect())),
                            ("dim", AttrValue::Int(dim as i64)),
                        ],
                        &format!("{base}.ag"),
                    );
                    self.record(r, axes, reason.clone());
                    r
                }
                Move::Split(add) => self.local_split(cur, &add, &base),
            };
        }
        debug_assert_eq!(self.ty(cur), &self.local(global, to));
        self.reshards.insert(key, cur);
        cur
    }
}

/// One step of a reshard (`Partitioner::moves`).
enum Move {
    /// `axis` moves from dim `concat_dim` to the minor end of dim `split_dim`.
    AllToAll { axis: String, split_dim: usize, concat_dim: usize },
    /// Dim `dim` stops being split over `axes` (its minor ones).
    AllGather { axes: Vec<String>, dim: usize },
    /// Each dim is split further, locally, by the axes given for it.
    Split(Vec<Vec<String>>),
}
