//! Transpose (VJP) rules for the ops of spec section 7 that are neither
//! contractions nor windows: elementwise math, data movement, reductions,
//! gather and scatter, sort and top_k. Each rule gets the cotangent of the
//! result and returns one contribution per operand (`None`: no gradient, or
//! not wanted). The rules follow JAX's (`jax/_src/lax/lax.py`, `slicing.py`)
//! so that gradients agree with `jax.value_and_grad`, including at ties.

use super::emit::{exclusive_prod, us, Gen, R};
use super::{linalg, spmd};
use pjc_ir::{AttrValue, DType, InstData, Opcode, TensorType, Value};

/// Contributions of `inst` to the cotangents of its operands, given the
/// cotangent of its (single) result; only operands with `want` set are computed.
pub(super) fn vjp(g: &mut Gen, inst: &InstData, ct: Value, want: &[bool]) -> R<Vec<Option<Value>>> {
    use Opcode::*;
    let n = inst.operands.len();
    let mut out: Vec<Option<Value>> = vec![None; n];
    let ops = inst.operands.clone();
    let y = inst.results[0];
    let w = |k: usize| want.get(k).copied().unwrap_or(false);
    match inst.op {
        // ---- piecewise constant, integer, pred and creation ops: no gradient ----
        Constant | Iota | Floor | Ceil | Round | RoundEven | Sign | IsFinite | Not | Compare | And | Or | Xor | Shl
        | Shr | Argmax | Argmin | AxisIndex => {}
        BitcastConvert => {
            if w(0) {
                let (a, b) = (g.ty(ops[0]).dtype, g.ty(y).dtype);
                return Err(
                    g.unsupported(inst.op, &format!("reinterpreting the bits of {a} as {b} is not differentiable"))
                );
            }
        }

        // ---- unary elementwise ------------------------------------------------
        Neg => out[0] = Some(g.un(Neg, ct, &g.ctn(ops[0]))?),
        Abs => {
            let x = ops[0];
            let z = g.zeros(&g.ty(x))?;
            let p = g.cmp(x, z, "ge", &g.tmp("nonneg"))?;
            let n = g.un(Neg, ct, &g.tmp("negct"))?;
            out[0] = Some(g.select(p, ct, n, &g.ctn(x))?);
        }
        Exp => out[0] = Some(g.mul(ct, y, &g.ctn(ops[0]))?),
        Log => out[0] = Some(g.bin(Div, ct, ops[0], &g.ctn(ops[0]))?),
        Log1p => {
            let x = ops[0];
            let one = g.ones(&g.ty(x))?;
            let d = g.bin(Add, x, one, &g.tmp("xp1"))?;
            out[0] = Some(g.bin(Div, ct, d, &g.ctn(x))?);
        }
        Expm1 => {
            let one = g.ones(&g.ty(y))?;
            let d = g.bin(Add, y, one, &g.tmp("exp"))?;
            out[0] = Some(g.mul(ct, d, &g.ctn(ops[0]))?);
        }
        Sqrt => {
            let half = g.konst(0.5, &g.ty(y), "half")?;
            let d = g.bin(Div, half, y, &g.tmp("d"))?;
            out[0] = Some(g.mul(ct, d, &g.ctn(ops[0]))?);
        }
        Rsqrt => {
            let x = ops[0];
            let q = g.bin(Div, y, x, &g.tmp("q"))?;
            let c = g.konst(-0.5, &g.ty(y), "mhalf")?;
            let d = g.mul(q, c, &g.tmp("d"))?;
            out[0] = Some(g.mul(ct, d, &g.ctn(x))?);
        }
        Tanh => {
            let one = g.ones(&g.ty(y))?;
            let yy = g.mul(y, y, &g.tmp("sq"))?;
            let d = g.bin(Sub, one, yy, &g.tmp("d"))?;
            out[0] = Some(g.mul(ct, d, &g.ctn(ops[0]))?);
        }
        Logistic => {
            let one = g.ones(&g.ty(y))?;
            let c = g.bin(Sub, one, y, &g.tmp("c"))?;
            let d = g.mul(y, c, &g.tmp("d"))?;
            out[0] = Some(g.mul(ct, d, &g.ctn(ops[0]))?);
        }
        Erf => {
            let x = ops[0];
            let xx = g.mul(x, x, &g.tmp("sq"))?;
            let nxx = g.un(Neg, xx, &g.tmp("nsq"))?;
            let e = g.un(Exp, nxx, &g.tmp("gauss"))?;
            let c = g.konst(std::f64::consts::FRAC_2_SQRT_PI, &g.ty(x), "two_over_sqrt_pi")?;
            let d = g.mul(e, c, &g.tmp("d"))?;
            out[0] = Some(g.mul(ct, d, &g.ctn(x))?);
        }
        Sin => {
            let c = g.un(Cos, ops[0], &g.tmp("cos"))?;
            out[0] = Some(g.mul(ct, c, &g.ctn(ops[0]))?);
        }
        Cos => {
            let s = g.un(Sin, ops[0], &g.tmp("sin"))?;
            let ns = g.un(Neg, s, &g.tmp("nsin"))?;
            out[0] = Some(g.mul(ct, ns, &g.ctn(ops[0]))?);
        }

        // ---- binary elementwise -----------------------------------------------
        Add => {
            out[0] = Some(ct);
            out[1] = Some(ct);
        }
        Sub => {
            out[0] = Some(ct);
            if w(1) {
                out[1] = Some(g.un(Neg, ct, &g.ctn(ops[1]))?);
            }
        }
        Mul => {
            if w(0) {
                out[0] = Some(g.mul(ct, ops[1], &g.ctn(ops[0]))?);
            }
            if w(1) {
                out[1] = Some(g.mul(ops[0], ct, &g.ctn(ops[1]))?);
            }
        }
        Div => {
            let (a, b) = (ops[0], ops[1]);
            if w(0) {
                out[0] = Some(g.bin(Div, ct, b, &g.ctn(a))?);
            }
            if w(1) {
                let na = g.mul(ct, a, &g.tmp("cta"))?;
                let bb = g.mul(b, b, &g.tmp("sq"))?;
                let q = g.bin(Div, na, bb, &g.tmp("q"))?;
                out[1] = Some(g.un(Neg, q, &g.ctn(b))?);
            }
        }
        Rem => {
            let (a, b) = (ops[0], ops[1]);
            out[0] = Some(ct);
            if w(1) {
                // x rem y = x - y * trunc(x / y)
                let q = g.bin(Div, a, b, &g.tmp("q"))?;
                let s = g.un(Sign, q, &g.tmp("qsign"))?;
                let aq = g.un(Abs, q, &g.tmp("qabs"))?;
                let f = g.un(Floor, aq, &g.tmp("qfloor"))?;
                let t = g.mul(s, f, &g.tmp("trunc"))?;
                let nct = g.un(Neg, ct, &g.tmp("negct"))?;
                out[1] = Some(g.mul(nct, t, &g.ctn(b))?);
            }
        }
        Max | Min => {
            // JAX's balanced rule: equal operands share the cotangent equally.
            let (a, b) = (ops[0], ops[1]);
            let t = g.ty(y);
            let ea = g.cmp(a, y, "eq", &g.tmp("lhs_is"))?;
            let eb = g.cmp(b, y, "eq", &g.tmp("rhs_is"))?;
            let one = g.ones(&t)?;
            let half = g.konst(0.5, &t, "half")?;
            let zero = g.zeros(&t)?;
            for (k, (mine, other)) in [(ea, eb), (eb, ea)].into_iter().enumerate() {
                if w(k) {
                    let share = g.select(other, half, one, &g.tmp("share"))?;
                    let wgt = g.select(mine, share, zero, &g.tmp("weight"))?;
                    out[k] = Some(g.mul(ct, wgt, &g.ctn(ops[k]))?);
                }
            }
        }
        Pow => {
            let (a, b) = (ops[0], ops[1]);
            let t = g.ty(y);
            let zero = g.zeros(&t)?;
            let one = g.ones(&t)?;
            if w(0) {
                // d/dx x^y = y * x^(y-1), and 0 where y == 0.
                let bm1 = g.bin(Sub, b, one, &g.tmp("ym1"))?;
                let p = g.bin(Pow, a, bm1, &g.tmp("pow"))?;
                let yp = g.mul(b, p, &g.tmp("dx"))?;
                let y0 = g.cmp(b, zero, "eq", &g.tmp("y0"))?;
                let d = g.select(y0, zero, yp, &g.tmp("jac"))?;
                out[0] = Some(g.mul(ct, d, &g.ctn(a))?);
            }
            if w(1) {
                // d/dy x^y = log(x) * x^y, with log(0) replaced by log(1).
                let x0 = g.cmp(a, zero, "eq", &g.tmp("x0"))?;
                let xs = g.select(x0, one, a, &g.tmp("xsafe"))?;
                let l = g.un(Log, xs, &g.tmp("log"))?;
                let d = g.mul(l, y, &g.tmp("dy"))?;
                out[1] = Some(g.mul(ct, d, &g.ctn(b))?);
            }
        }
        Atan2 => {
            let (a, b) = (ops[0], ops[1]);
            let aa = g.mul(a, a, &g.tmp("y2"))?;
            let bb = g.mul(b, b, &g.tmp("x2"))?;
            let den = g.bin(Add, aa, bb, &g.tmp("den"))?;
            if w(0) {
                let n = g.mul(ct, b, &g.tmp("nx"))?;
                out[0] = Some(g.bin(Div, n, den, &g.ctn(a))?);
            }
            if w(1) {
                let n = g.mul(ct, a, &g.tmp("ny"))?;
                let nn = g.un(Neg, n, &g.tmp("nny"))?;
                out[1] = Some(g.bin(Div, nn, den, &g.ctn(b))?);
            }
        }

        // ---- other elementwise ------------------------------------------------
        Clamp => return clamp(g, inst, ct, want),
        Select => {
            let t = g.ty(y);
            let z = g.zeros(&t)?;
            if w(1) {
                out[1] = Some(g.select(ops[0], ct, z, &g.ctn(ops[1]))?);
            }
            if w(2) {
                out[2] = Some(g.select(ops[0], z, ct, &g.ctn(ops[2]))?);
            }
        }
        Convert => {
            let x = ops[0];
            let (from, to) = (g.ty(x).dtype, g.ty(y).dtype);
            if w(0) && from.is_float() && to.is_float() {
                out[0] = Some(g.convert(ct, from, &g.ctn(x))?);
            }
        }

        // ---- data movement ----------------------------------------------------
        Broadcast => out[0] = Some(broadcast(g, inst, ct)?),
        Reshape => {
            let x = ops[0];
            let s = g.ty(x).shape;
            out[0] = Some(g.reshape(ct, &s, &g.ctn(x))?);
        }
        Transpose => {
            let perm = g.a_usizes(inst, "perm")?;
            let mut inv = vec![0; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                inv[p] = i;
            }
            out[0] = Some(g.transpose(ct, &inv, &g.ctn(ops[0]))?);
        }
        Slice => {
            let x = ops[0];
            let xs = g.ty(x).shape;
            let (start, stride) = (g.a_ints(inst, "start")?, g.a_ints(inst, "stride")?);
            let ys = g.ty(y).shape;
            let high: Vec<i64> =
                (0..xs.len()).map(|d| xs[d] as i64 - (start[d] + (ys[d] as i64 - 1) * stride[d] + 1)).collect();
            let interior: Vec<i64> = stride.iter().map(|s| s - 1).collect();
            let z = g.zeros(&TensorType::scalar(g.ty(x).dtype))?;
            out[0] = Some(g.pad(ct, z, &start, &high, &interior, &g.ctn(x))?);
        }
        Pad => {
            let (x, v) = (ops[0], ops[1]);
            let low = g.a_ints(inst, "low")?;
            let high = g.a_ints(inst, "high")?;
            let interior = g.a_ints(inst, "interior")?;
            let r = low.len();
            let z = g.zeros(&TensorType::scalar(g.ty(x).dtype))?;
            // Undo the edges (negative padding was a crop: pad it back with zeros),
            // then take every (interior+1)-th element.
            let nl: Vec<i64> = low.iter().map(|l| -l).collect();
            let nh: Vec<i64> = high.iter().map(|h| -h).collect();
            let unpadded = g.pad(ct, z, &nl, &nh, &vec![0; r], &g.tmp("unpad"))?;
            let us_shape = g.ty(unpadded).shape;
            let stride: Vec<i64> = interior.iter().map(|i| i + 1).collect();
            let lim: Vec<i64> = us_shape.iter().map(|&s| s as i64).collect();
            let cx = g.slice(unpadded, &vec![0; r], &lim, &stride, &g.ctn(x))?;
            if w(1) {
                let total = g.sum_all(ct, &g.tmp("total"))?;
                let inner = g.sum_all(cx, &g.tmp("inner"))?;
                out[1] = Some(g.bin(Sub, total, inner, &g.ctn(v))?);
            }
            if w(0) {
                out[0] = Some(cx);
            }
        }
        Concat => {
            let dim = g.a_int(inst, "dim")? as usize;
            let ys = g.ty(y).shape;
            let mut at = 0i64;
            for (k, &x) in ops.iter().enumerate() {
                let size = g.ty(x).shape[dim] as i64;
                if w(k) {
                    let mut start = vec![0i64; ys.len()];
                    let mut limit: Vec<i64> = ys.iter().map(|&s| s as i64).collect();
                    start[dim] = at;
                    limit[dim] = at + size;
                    out[k] = Some(g.slice(ct, &start, &limit, &vec![1; ys.len()], &g.ctn(x))?);
                }
                at += size;
            }
        }
        Reverse => {
            let dims = g.a_usizes(inst, "dims")?;
            out[0] = Some(g.reverse(ct, &dims, &g.ctn(ops[0]))?);
        }
        DynamicSlice => {
            // Both ops clamp the start indices the same way.
            let x = ops[0];
            let z = g.zeros(&g.ty(x))?;
            let mut args = vec![z, ct];
            args.extend_from_slice(&ops[1..]);
            out[0] = Some(g.emit(DynamicUpdateSlice, &args, vec![], None, &g.ctn(x))?);
        }
        DynamicUpdateSlice => {
            let (x, u) = (ops[0], ops[1]);
            if w(0) {
                let zu = g.zeros(&g.ty(u))?;
                let mut args = vec![ct, zu];
                args.extend_from_slice(&ops[2..]);
                out[0] = Some(g.emit(DynamicUpdateSlice, &args, vec![], None, &g.ctn(x))?);
            }
            if w(1) {
                let mut args = vec![ct];
                args.extend_from_slice(&ops[2..]);
                let sizes: Vec<usize> = g.ty(u).shape.iter().map(|&s| s as usize).collect();
                out[1] = Some(g.emit(DynamicSlice, &args, vec![("sizes", us(&sizes))], None, &g.ctn(u))?);
            }
        }

        // ---- reductions -------------------------------------------------------
        Reduce => out[0] = Some(reduce(g, inst, ct)?),
        Gather => out[0] = Some(gather(g, inst, ct)?),
        ScatterAdd => {
            out[0] = Some(ct);
            if w(2) {
                out[2] = Some(scatter_updates(g, inst, ct)?);
            }
        }

        DotGeneral => return linalg::dot_general(g, inst, ct, want),
        Convolution => return linalg::convolution(g, inst, ct, want),
        ReduceWindow => out[0] = Some(linalg::reduce_window(g, inst, ct)?),
        SelectAndScatterAdd => {
            if w(0) {
                out[0] = Some(linalg::select_and_gather(g, inst, ct)?);
            }
        }

        AllReduce | AllGather | ReduceScatter | AllToAll | CollectivePermute => {
            out[0] = Some(spmd::collective(g, inst, ct)?);
        }
        Scatter => return scatter(g, inst, ct, want),
        TopK => {
            if w(0) {
                out[0] = Some(top_k(g, inst, ct)?);
            }
        }
        Call | Grad | Vmap | Sort | While | Scan | Switch => {
            return Err(g.internal(format!("'{}' reached the per-op rules", inst.op)))
        }
    }
    for (k, o) in out.iter_mut().enumerate() {
        if !w(k) {
            *o = None;
        }
    }
    Ok(out)
}

fn clamp(g: &mut Gen, inst: &InstData, ct: Value, want: &[bool]) -> R<Vec<Option<Value>>> {
    use Opcode::*;
    let (lo, x, hi) = (inst.operands[0], inst.operands[1], inst.operands[2]);
    let t = g.ty(x);
    let lo_b = g.splat_scalar(lo, &t, &g.tmp("lo"))?;
    let hi_b = g.splat_scalar(hi, &t, &g.tmp("hi"))?;
    let z = g.zeros(&t)?;
    let mut out = vec![None; 3];
    // As JAX: lo gets the cotangent where lo > x (and lo < hi), x where
    // lo < x < hi, hi where hi < x.
    if want[0] {
        let a = g.cmp(lo_b, x, "gt", &g.tmp("below"))?;
        let b = g.cmp(lo_b, hi_b, "lt", &g.tmp("ordered"))?;
        let p = g.bin(And, a, b, &g.tmp("at_lo"))?;
        let c = g.select(p, ct, z, &g.tmp("lo_ct"))?;
        out[0] = Some(sum_to(g, c, &g.ty(lo), lo)?);
    }
    if want[1] {
        let a = g.cmp(x, lo_b, "gt", &g.tmp("above_lo"))?;
        let b = g.cmp(x, hi_b, "lt", &g.tmp("below_hi"))?;
        let p = g.bin(And, a, b, &g.tmp("inside"))?;
        out[1] = Some(g.select(p, ct, z, &g.ctn(x))?);
    }
    if want[2] {
        let p = g.cmp(hi_b, x, "lt", &g.tmp("above"))?;
        let c = g.select(p, ct, z, &g.tmp("hi_ct"))?;
        out[2] = Some(sum_to(g, c, &g.ty(hi), hi)?);
    }
    Ok(out)
}

/// `c` summed down to a scalar when `target` is one (a scalar clamp bound).
fn sum_to(g: &mut Gen, c: Value, target: &TensorType, x: Value) -> R<Value> {
    if target.is_scalar() && !g.ty(c).is_scalar() {
        g.sum_all(c, &g.ctn(x))
    } else {
        Ok(c)
    }
}

/// Broadcast's transpose: sum over the new dimensions and over the ones
/// stretched from size 1, then put the kept dimensions back in operand order.
fn broadcast(g: &mut Gen, inst: &InstData, ct: Value) -> R<Value> {
    let x = inst.operands[0];
    let xt = g.ty(x);
    let yt = g.ty(inst.results[0]);
    let dims = g.a_usizes(inst, "dims")?;
    let stretched = |i: usize| xt.shape[i] != yt.shape[dims[i]];
    let mut sum_dims: Vec<usize> = (0..yt.rank()).filter(|d| !dims.contains(d)).collect();
    sum_dims.extend((0..xt.rank()).filter(|&i| stretched(i)).map(|i| dims[i]));
    sum_dims.sort_unstable();
    let reduced = g.reduce(ct, &sum_dims, "sum", &g.tmp("sum"))?;
    // The reduced array's dims are the kept operand dims, ordered by dims[i].
    let mut kept: Vec<usize> = (0..xt.rank()).filter(|&i| !stretched(i)).collect();
    kept.sort_by_key(|&i| dims[i]);
    // Transpose into operand order.
    let mut by_operand = kept.clone();
    by_operand.sort_unstable();
    let perm: Vec<usize> = by_operand.iter().map(|i| kept.iter().position(|k| k == i).unwrap_or(0)).collect();
    let name = g.ctn(x);
    let tr = g.transpose(reduced, &perm, &name)?;
    g.reshape(tr, &xt.shape, &name)
}

fn reduce(g: &mut Gen, inst: &InstData, ct: Value) -> R<Value> {
    use Opcode::*;
    let x = inst.operands[0];
    let y = inst.results[0];
    let xt = g.ty(x);
    let dims = g.a_usizes(inst, "dims")?;
    let kind = g.a_ident(inst, "kind")?;
    let kept: Vec<usize> = (0..xt.rank()).filter(|d| !dims.contains(d)).collect();
    match kind.as_str() {
        "sum" => g.broadcast(ct, &kept, &xt, &g.ctn(x)),
        "max" | "min" => {
            // Ties share the cotangent equally: ct * (x == y) / count(x == y).
            let yb = g.broadcast(y, &kept, &xt, &g.tmp("b"))?;
            let eq = g.cmp(x, yb, "eq", &g.tmp("is_extreme"))?;
            let mask = g.convert(eq, xt.dtype, &g.tmp("mask"))?;
            let cnt = g.reduce(mask, &dims, "sum", &g.tmp("count"))?;
            let share = g.bin(Div, ct, cnt, &g.tmp("share"))?;
            let sb = g.broadcast(share, &kept, &xt, &g.tmp("share_b"))?;
            g.mul(sb, mask, &g.ctn(x))
        }
        "prod" => reduce_prod(g, x, &dims, &kept, ct),
        k => Err(g.unsupported(Reduce, &format!("reduce kind '{k}' has no gradient"))),
    }
}

/// The gradient of a product: each element gets the product of all the others,
/// computed without division (so zeros are handled) as exclusive prefix times
/// exclusive suffix products along the flattened reduced dimensions.
fn reduce_prod(g: &mut Gen, x: Value, dims: &[usize], kept: &[usize], ct: Value) -> R<Value> {
    let xt = g.ty(x);
    let mut perm: Vec<usize> = dims.to_vec();
    perm.sort_unstable();
    perm.extend_from_slice(kept);
    let xp = g.transpose(x, &perm, &g.tmp("front"))?;
    let xpt = g.ty(xp);
    let n: u64 = dims.iter().map(|&d| xt.shape[d]).product();
    let rest: Vec<u64> = kept.iter().map(|&d| xt.shape[d]).collect();
    let mut flat = vec![n];
    flat.extend_from_slice(&rest);
    let xr = g.reshape(xp, &flat, &g.tmp("flat"))?;
    let before = exclusive_prod(g, xr, false)?;
    let after = exclusive_prod(g, xr, true)?;
    let others = g.mul(before, after, &g.tmp("others"))?;
    let ft = TensorType::new(xt.dtype, flat.clone());
    let cb = g.broadcast(ct, &(1..=rest.len()).collect::<Vec<_>>(), &ft, &g.tmp("ct_b"))?;
    let c = g.mul(others, cb, &g.tmp("ct_flat"))?;
    let cr = g.reshape(c, &xpt.shape, &g.tmp("ct_front"))?;
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    g.transpose(cr, &inv, &g.ctn(x))
}

/// An integer scalar constant of the index dtype `d`, saturated into its range.
fn index_const(g: &mut Gen, d: DType, x: i128, name: &str) -> R<Value> {
    let (lo, hi) = d.int_range().unwrap_or((i128::MIN, i128::MAX));
    let x = x.clamp(lo, hi);
    Ok(g.b.splat(pjc_ir::Number::Int(x), TensorType::scalar(d), name))
}

/// Gather's transpose: scatter-add the cotangent into zeros at the indices
/// gather used. Gather clamps, scatter_add drops out-of-range indices, so the
/// indices are clamped first.
fn gather(g: &mut Gen, inst: &InstData, ct: Value) -> R<Value> {
    let (table, idx) = (inst.operands[0], inst.operands[1]);
    let axis = g.a_int(inst, "axis")? as usize;
    let tt = g.ty(table);
    let it = g.ty(idx);
    let lo = index_const(g, it.dtype, 0, "idx_lo")?;
    let hi = index_const(g, it.dtype, tt.shape[axis] as i128 - 1, "idx_hi")?;
    let ci = g.emit(Opcode::Clamp, &[lo, idx, hi], vec![], None, &g.tmp("idx"))?;
    let z = g.zeros(&tt)?;
    g.emit(Opcode::ScatterAdd, &[z, ci, ct], vec![("axis", pjc_ir::AttrValue::Int(axis as i64))], None, &g.ctn(table))
}

/// Scatter-add's transpose for the updates: gather the cotangent at the
/// indices, zero where the index was out of range (those updates were dropped).
fn scatter_updates(g: &mut Gen, inst: &InstData, ct: Value) -> R<Value> {
    use Opcode::*;
    let (base, idx, upd) = (inst.operands[0], inst.operands[1], inst.operands[2]);
    let axis = g.a_int(inst, "axis")? as usize;
    let n = g.ty(base).shape[axis] as i128;
    let it = g.ty(idx);
    let ut = g.ty(upd);
    let gathered =
        g.emit(Gather, &[ct, idx], vec![("axis", pjc_ir::AttrValue::Int(axis as i64))], None, &g.tmp("gathered"))?;
    let (lo, hi) = it.dtype.int_range().unwrap_or((0, 0));
    let mut valid: Option<Value> = None;
    if lo < 0 {
        let z = index_const(g, it.dtype, 0, "idx_lo")?;
        let zb = g.splat_scalar(z, &it, &g.tmp("lo_b"))?;
        valid = Some(g.cmp(idx, zb, "ge", &g.tmp("nonneg"))?);
    }
    if hi >= n {
        let nn = index_const(g, it.dtype, n, "idx_end")?;
        let nb = g.splat_scalar(nn, &it, &g.tmp("end_b"))?;
        let c = g.cmp(idx, nb, "lt", &g.tmp("below_end"))?;
        valid = Some(match valid {
            Some(v) => g.bin(And, v, c, &g.tmp("in_range"))?,
            None => c,
        });
    }
    let Some(valid) = valid else { return Ok(gathered) };
    let mask = if it.is_scalar() {
        valid
    } else {
        let dims: Vec<usize> = (axis..axis + it.rank()).collect();
        g.broadcast(valid, &dims, &ut.with_dtype(DType::Pred), &g.tmp("in_range_b"))?
    };
    let z = g.zeros(&ut)?;
    g.select(mask, gathered, z, &g.ctn(upd))
}

/// `scatter`: kind `add` as `scatter_add`; kind `set` as JAX's rule: the base
/// gets the cotangent where no update landed, each update the cotangent at its
/// position if it is the one that won there (of duplicates, the last in
/// row-major order of the index array, spec section 11) and 0 if it was
/// overwritten or dropped. The other kinds have no rule.
fn scatter(g: &mut Gen, inst: &InstData, ct: Value, want: &[bool]) -> R<Vec<Option<Value>>> {
    let (base, idx, upd) = (inst.operands[0], inst.operands[1], inst.operands[2]);
    let kind = g.a_ident(inst, "kind")?;
    let axis = AttrValue::Int(g.a_int(inst, "axis")?);
    let mut out = vec![None; 3];
    match kind.as_str() {
        "add" => {
            out[0] = Some(ct);
            if want[2] {
                out[2] = Some(scatter_updates(g, inst, ct)?);
            }
        }
        "set" => {
            if want[0] {
                let z = g.zeros(&g.ty(upd))?;
                let attrs = vec![("axis", axis.clone()), ("kind", super::emit::ident("set"))];
                out[0] = Some(g.emit(Opcode::Scatter, &[ct, idx, z], attrs, None, &g.ctn(base))?);
            }
            if want[2] {
                let landed = scatter_updates(g, inst, ct)?;
                out[2] = Some(winners(g, inst, landed)?);
            }
        }
        k => {
            if want[0] || want[2] {
                return Err(g.unsupported(inst.op, &format!("kind={k} has no gradient rule (kinds set and add have)")));
            }
        }
    }
    Ok(out)
}

/// `c` (shaped like `scatter {kind=set}`'s updates) where the update won its
/// position, 0 elsewhere. As JAX: scatter every update's number (row-major in
/// the index array) with the same `set`, gather the number that won back at
/// each update's index, and compare.
fn winners(g: &mut Gen, inst: &InstData, c: Value) -> R<Value> {
    use Opcode::*;
    let (base, idx, upd) = (inst.operands[0], inst.operands[1], inst.operands[2]);
    let axis = g.a_int(inst, "axis")?;
    let it = g.ty(idx);
    let count = it.num_elements();
    if count == 1 {
        // One index: no two updates meet.
        return Ok(c);
    }
    let d = if count <= i32::MAX as u64 { DType::I32 } else { DType::I64 };
    let ids_t = TensorType::new(d, vec![count]);
    let flat = g.emit(Iota, &[], vec![("dim", AttrValue::Int(0))], Some(ids_t), &g.tmp("id"))?;
    let ids = g.reshape(flat, &it.shape, &g.tmp("id"))?;
    let ut = g.ty(upd);
    let dims: Vec<usize> = (axis as usize..axis as usize + it.rank()).collect();
    let idb = g.broadcast(ids, &dims, &ut.with_dtype(d), &g.tmp("id_b"))?;
    let none = g.konst(-1.0, &g.ty(base).with_dtype(d), "no_update")?;
    let attrs = vec![("axis", AttrValue::Int(axis)), ("kind", super::emit::ident("set"))];
    let won = g.emit(Scatter, &[none, idx, idb], attrs, None, &g.tmp("winner"))?;
    let back = g.emit(Gather, &[won, idx], vec![("axis", AttrValue::Int(axis))], None, &g.tmp("winner_at"))?;
    let wins = g.cmp(back, idb, "eq", &g.tmp("wins"))?;
    let z = g.zeros(&ut)?;
    g.select(wins, c, z, &g.ctn(upd))
}

/// `sort`'s transpose (JAX's: sort an iota along to get the permutation, then
/// move the cotangents back through it). The permutation is the same stable
/// sort of the keys with an iota alongside; sorting each result's cotangent
/// by it puts the element at sorted position j back at position perm[j].
pub(super) fn sort(g: &mut Gen, inst: &InstData, cts: &[Option<Value>], want: &[bool]) -> R<Vec<Option<Value>>> {
    let n = inst.operands.len();
    let mut out = vec![None; n];
    let moved: Vec<(usize, Value)> = (0..n).filter(|&k| want[k]).filter_map(|k| cts[k].map(|c| (k, c))).collect();
    if moved.is_empty() {
        return Ok(out);
    }
    let dim = g.a_int(inst, "dim")?;
    let keys = g.a_int(inst, "num_keys")?;
    let t = g.ty(inst.operands[0]);
    let d = if t.shape[dim as usize] <= i32::MAX as u64 { DType::I32 } else { DType::I64 };
    let iota = g.emit(Opcode::Iota, &[], vec![("dim", AttrValue::Int(dim))], Some(t.with_dtype(d)), &g.tmp("iota"))?;
    let mut args = inst.operands[..keys as usize].to_vec();
    args.push(iota);
    let attrs = vec![
        ("dim", AttrValue::Int(dim)),
        ("num_keys", AttrValue::Int(keys)),
        ("descending", g.attr(inst, "descending")?),
    ];
    let sorted = g.emit_multi(Opcode::Sort, &args, attrs, &g.tmp("perm"))?;
    let perm = *sorted.last().ok_or_else(|| g.internal("sort without results"))?;
    let mut args = vec![perm];
    args.extend(moved.iter().map(|&(_, c)| c));
    let back = g.emit_multi(Opcode::Sort, &args, vec![("dim", AttrValue::Int(dim))], &g.tmp("unsort"))?;
    for (j, &(k, _)) in moved.iter().enumerate() {
        out[k] = Some(back[j + 1]);
    }
    Ok(out)
}

/// `top_k`'s transpose: each value's cotangent goes back to the position its
/// index names (the indices of one row are distinct), by one `scatter_add`
/// over the rows laid end to end: row r's index i is position r·n + i.
fn top_k(g: &mut Gen, inst: &InstData, ct: Value) -> R<Value> {
    use Opcode::*;
    let x = inst.operands[0];
    let xt = g.ty(x);
    let idx = inst.results[1];
    let (n, k) = (xt.shape[xt.rank() - 1], g.ty(idx).shape[xt.rank() - 1]);
    let rows: u64 = xt.shape[..xt.rank() - 1].iter().product();
    let flat_idx = if rows == 1 {
        g.reshape(idx, &[k], &g.tmp("at"))?
    } else {
        let t = TensorType::new(DType::I64, vec![rows, k]);
        let i2 = g.reshape(idx, &[rows, k], &g.tmp("at"))?;
        let i64s = g.convert(i2, DType::I64, &g.tmp("at"))?;
        let row = g.emit(Iota, &[], vec![("dim", AttrValue::Int(0))], Some(t.clone()), &g.tmp("row"))?;
        let nn = g.konst(n as f64, &t, "row_size")?;
        let start = g.mul(row, nn, &g.tmp("row_start"))?;
        let at = g.bin(Add, start, i64s, &g.tmp("at"))?;
        g.reshape(at, &[rows * k], &g.tmp("at"))?
    };
    let c = g.reshape(ct, &[rows * k], &g.tmp("ct_flat"))?;
    let z = g.zeros(&TensorType::new(xt.dtype, vec![rows * n]))?;
    let s = g.emit(ScatterAdd, &[z, flat_idx, c], vec![("axis", AttrValue::Int(0))], None, &g.tmp("ct_rows"))?;
    g.reshape(s, &xt.shape, &g.ctn(x))
}
