//! Gradients inside a `spmd func`, with shard_map semantics (spec section 9).
//!
//! The cotangent of a value has the value's replication type: it may vary
//! along the axes the value varies along (`pjc_ir::replication`). The
//! cotangent of a value invariant along an axis is the total gradient, the
//! same on every device; the cotangent of a varying value is the gradient with
//! respect to this device's copy. An op whose operand is invariant along an
//! axis its result varies along implicitly broadcasts that operand; the
//! transpose of that broadcast is a sum over the axis, so each contribution is
//! `all_reduce`d over the axes its natural type has beyond its operand's
//! ([`to_operand_type`]); a collective's operand is implicitly broadcast to
//! vary along the collective's axes. Collectives transpose as JAX's do with
//! `check_vma`: `all_reduce` sum → nothing (identity), `all_gather` (whose
//! result is invariant here, JAX's `all_gather_invariant`) → this device's
//! block of the cotangent, `reduce_scatter` sum → `all_gather`, `all_to_all` →
//! `all_to_all` with split and concat swapped, `collective_permute` → the
//! opposite shift. Beyond JAX: `all_reduce`/`reduce_scatter` max and min share
//! the cotangent equally among the devices holding the extreme, and prod
//! multiplies it by the product of the other devices' elements.

use super::emit::{exclusive_prod, ident, us, Gen, R};
use pjc_ir::replication::Axes;
use pjc_ir::{AttrValue, DType, InstData, Opcode, TensorType, Value};

/// The cotangent contribution of `inst` for its operand `k`, summed over the
/// axes along which the contribution varies but the operand does not.
pub(super) fn to_operand_type(g: &mut Gen, inst: &InstData, k: usize, c: Value) -> R<Value> {
    if !g.spmd {
        return Ok(c);
    }
    let x = inst.operands[k];
    let empty = Axes::new();
    let vx = g.var.get(&x).unwrap_or(&empty).clone();
    let natural: Axes = if inst.op.is_collective() {
        let axes: Axes = g.a_idents(inst, "axes")?.into_iter().collect();
        vx.union(&axes).cloned().collect()
    } else {
        inst.results.iter().flat_map(|r| g.var.get(r).cloned().unwrap_or_default()).collect()
    };
    let extra: Axes = natural.difference(&vx).cloned().collect();
    if extra.is_empty() {
        return Ok(c);
    }
    g.all_reduce(c, &extra, "sum", &g.ctn(x))
}

pub(super) fn collective(g: &mut Gen, inst: &InstData, ct: Value) -> R<Value> {
    use Opcode::*;
    let x = inst.operands[0];
    let y = inst.results[0];
    let axes = g.a_idents(inst, "axes")?;
    let axes_attr = AttrValue::List(axes.iter().cloned().map(AttrValue::Ident).collect());
    let kind = || g.a_ident(inst, "kind");
    match inst.op {
        AllReduce => match kind()?.as_str() {
            "sum" => Ok(ct),
            k @ ("max" | "min") => {
                // Ties across devices share the cotangent equally.
                let xt = g.ty(x);
                let eq = g.cmp(x, y, "eq", &g.tmp("is_extreme"))?;
                let mask = g.convert(eq, xt.dtype, &g.tmp("mask"))?;
                let cnt = g.emit(
                    AllReduce,
                    &[mask],
                    vec![("axes", axes_attr), ("kind", ident("sum"))],
                    None,
                    &g.tmp("count"),
                )?;
                let share = g.bin(Div, mask, cnt, &g.tmp(&format!("{k}_share")))?;
                g.mul(ct, share, &g.ctn(x))
            }
            "prod" => {
                let others = product_of_others(g, x, &axes)?;
                g.mul(ct, others, &g.ctn(x))
            }
            k => Err(g.unsupported(inst.op, &format!("all_reduce kind '{k}' has no gradient"))),
        },
        AllGather => {
            // The result is the same on every device: this device's operand
            // gets its own block of the cotangent.
            let dim = g.a_int(inst, "dim")? as usize;
            let xt = g.ty(x);
            let pos = group_position(g, &axes)?;
            let i32t = TensorType::scalar(DType::I32);
            let size = g.konst(xt.shape[dim] as f64, &i32t, "block")?;
            let start = g.mul(pos, size, &g.tmp("start"))?;
            let zero = g.zeros(&i32t)?;
            let mut args = vec![ct];
            args.extend((0..xt.rank()).map(|d| if d == dim { start } else { zero }));
            let sizes: Vec<usize> = xt.shape.iter().map(|&s| s as usize).collect();
            g.emit(DynamicSlice, &args, vec![("sizes", us(&sizes))], None, &g.ctn(x))
        }
        ReduceScatter => {
            // Every device's operand meets the whole (gathered) cotangent.
            let dim = g.a_int(inst, "dim")?;
            let gather = |g: &mut Gen, v: Value, name: &str| {
                g.emit(AllGather, &[v], vec![("axes", axes_attr.clone()), ("dim", AttrValue::Int(dim))], None, name)
            };
            match kind()?.as_str() {
                "sum" => gather(g, ct, &g.ctn(x)),
                "max" | "min" => {
                    let full = gather(g, ct, &g.tmp("ct_full"))?;
                    let yf = gather(g, y, &g.tmp("full"))?;
                    let xt = g.ty(x);
                    let eq = g.cmp(x, yf, "eq", &g.tmp("is_extreme"))?;
                    let mask = g.convert(eq, xt.dtype, &g.tmp("mask"))?;
                    let cnt = g.emit(
                        AllReduce,
                        &[mask],
                        vec![("axes", axes_attr.clone()), ("kind", ident("sum"))],
                        None,
                        &g.tmp("count"),
                    )?;
                    let share = g.bin(Div, mask, cnt, &g.tmp("share"))?;
                    g.mul(full, share, &g.ctn(x))
                }
                "prod" => {
                    let full = gather(g, ct, &g.tmp("ct_full"))?;
                    let others = product_of_others(g, x, &axes)?;
                    g.mul(full, others, &g.ctn(x))
                }
                k => Err(g.unsupported(inst.op, &format!("reduce_scatter kind '{k}' has no gradient"))),
            }
        }
        AllToAll => {
            let sd = g.a_int(inst, "split_dim")?;
            let cd = g.a_int(inst, "concat_dim")?;
            g.emit(
                AllToAll,
                &[ct],
                vec![("axes", axes_attr), ("split_dim", AttrValue::Int(cd)), ("concat_dim", AttrValue::Int(sd))],
                None,
                &g.ctn(x),
            )
        }
        CollectivePermute => {
            let shift = g.a_int(inst, "shift")?;
            g.emit(
                CollectivePermute,
                &[ct],
                vec![("axes", axes_attr), ("shift", AttrValue::Int(-shift))],
                None,
                &g.ctn(x),
            )
        }
        op => Err(g.internal(format!("'{op}' is not a collective"))),
    }
}

/// This device's position in its group over `axes` (first listed = major), as i32[].
fn group_position(g: &mut Gen, axes: &[String]) -> R<Value> {
    let i32t = TensorType::scalar(DType::I32);
    let mut pos: Option<Value> = None;
    for a in axes {
        let idx =
            g.emit(Opcode::AxisIndex, &[], vec![("axis", ident(a))], Some(i32t.clone()), &format!("{a}.index"))?;
        pos = Some(match pos {
            None => idx,
            Some(p) => {
                let n = g.b.mesh.size(a).unwrap_or(1);
                let nc = g.konst(n as f64, &i32t, &format!("{a}.size"))?;
                let s = g.mul(p, nc, &g.tmp("pos"))?;
                g.bin(Opcode::Add, s, idx, &g.tmp("pos"))?
            }
        });
    }
    pos.ok_or_else(|| g.internal("collective without axes"))
}

/// For every element of `x`, the product of the same element on the other
/// devices of the group over `axes` (no division, so zeros are fine): gather
/// the group's copies along a new leading dimension, take exclusive running
/// products both ways, keep this device's row.
fn product_of_others(g: &mut Gen, x: Value, axes: &[String]) -> R<Value> {
    let xt = g.ty(x);
    let mut one_shape = vec![1];
    one_shape.extend_from_slice(&xt.shape);
    let xr = g.reshape(x, &one_shape, &g.tmp("row"))?;
    let axes_attr = AttrValue::List(axes.iter().cloned().map(AttrValue::Ident).collect());
    let all =
        g.emit(Opcode::AllGather, &[xr], vec![("axes", axes_attr), ("dim", AttrValue::Int(0))], None, &g.tmp("rows"))?;
    let before = exclusive_prod(g, all, false)?;
    let after = exclusive_prod(g, all, true)?;
    let others = g.mul(before, after, &g.tmp("others"))?;
    let pos = group_position(g, axes)?;
    let zero = g.zeros(&TensorType::scalar(DType::I32))?;
    let mut args = vec![others, pos];
    args.extend(std::iter::repeat_n(zero, xt.rank()));
    let sizes: Vec<usize> = one_shape.iter().map(|&s| s as usize).collect();
    let mine = g.emit(Opcode::DynamicSlice, &args, vec![("sizes", us(&sizes))], None, &g.tmp("mine"))?;
    g.reshape(mine, &xt.shape, &g.tmp("others_here"))
}
