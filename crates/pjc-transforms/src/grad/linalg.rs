//! Transposes of contractions and windows: `dot_general` and `convolution`
//! (as JAX's `_dot_general_transpose_lhs/rhs` and
//! `_conv_general_dilated_transpose_lhs/rhs`), `reduce_window` and
//! `select_and_scatter_add`.

use super::emit::{ident, pairs, us, Gen, R};
use pjc_ir::infer::parse_conv_labels;
use pjc_ir::{AttrValue, DType, InstData, Opcode, TensorType, Value};

fn argsort(v: &[usize]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by_key(|&i| v[i]);
    idx
}

/// The operand `v` in the cotangent's dtype (contractions may produce a wider
/// dtype than their operands: the transposed contraction runs in the wider one).
fn widen(g: &mut Gen, v: Value, d: DType) -> R<Value> {
    g.convert(v, d, &format!("{}.wide", g.vname(v)))
}

pub(super) fn dot_general(g: &mut Gen, inst: &InstData, ct: Value, want: &[bool]) -> R<Vec<Option<Value>>> {
    let (x, y) = (inst.operands[0], inst.operands[1]);
    let lb = g.a_usizes(inst, "lhs_batch")?;
    let rb = g.a_usizes(inst, "rhs_batch")?;
    let lc = g.a_usizes(inst, "lhs_contract")?;
    let rc = g.a_usizes(inst, "rhs_contract")?;
    let mut out = vec![None, None];
    if want[0] {
        out[0] = Some(dot_transpose_lhs(g, ct, x, y, &lc, &rc, &lb, &rb, false)?);
    }
    if want[1] {
        out[1] = Some(dot_transpose_lhs(g, ct, y, x, &rc, &lc, &rb, &lb, true)?);
    }
    Ok(out)
}

/// The cotangent of `x` in `dot_general(x, y)` (or of `y` with the roles
/// swapped, `swap`): contract the cotangent with `y` over y's free dims, then
/// transpose into x's dimension order.
#[allow(clippy::too_many_arguments)]
fn dot_transpose_lhs(
    g: &mut Gen,
    ct: Value,
    x: Value,
    y: Value,
    xc: &[usize],
    yc: &[usize],
    xb: &[usize],
    yb: &[usize],
    swap: bool,
) -> R<Value> {
    let xt = g.ty(x);
    let yt = g.ty(y);
    let ct_t = g.ty(ct);
    let remaining = |rank: usize, a: &[usize], b: &[usize]| -> Vec<usize> {
        (0..rank).filter(|d| !a.contains(d) && !b.contains(d)).collect()
    };
    let x_kept = remaining(xt.rank(), xc, xb);
    let y_kept = remaining(yt.rank(), yc, yb);
    let nb = xb.len();
    let ans_y: Vec<usize> = if swap {
        (nb..nb + y_kept.len()).collect()
    } else {
        (nb + x_kept.len()..nb + x_kept.len() + y_kept.len()).collect()
    };
    let ans_batch: Vec<usize> = (0..nb).collect();
    let yw = widen(g, y, ct_t.dtype)?;
    let r = g.emit(
        Opcode::DotGeneral,
        &[ct, yw],
        vec![
            ("lhs_batch", us(&ans_batch)),
            ("rhs_batch", us(yb)),
            ("lhs_contract", us(&ans_y)),
            ("rhs_contract", us(&y_kept)),
        ],
        None,
        &g.tmp("dot"),
    )?;
    let by_y = argsort(yc);
    let mut order: Vec<usize> = xb.to_vec();
    order.extend_from_slice(&x_kept);
    order.extend(by_y.iter().map(|&i| xc[i]));
    let name = g.ctn(x);
    let t = g.transpose(r, &argsort(&order), &name)?;
    g.convert(t, xt.dtype, &name)
}

fn dilate(d: u64, k: i64) -> i64 {
    if d == 0 {
        0
    } else {
        1 + k * (d as i64 - 1)
    }
}

/// Padding of the transposed (input-gradient) convolution: JAX's
/// `_conv_general_vjp_lhs_padding`.
fn vjp_lhs_padding(
    in_sp: &[u64],
    win: &[u64],
    strides: &[i64],
    out_sp: &[u64],
    padding: &[(i64, i64)],
    lhs_dil: &[i64],
    rhs_dil: &[i64],
) -> Vec<(i64, i64)> {
    (0..in_sp.len())
        .map(|i| {
            let lhs_d = dilate(in_sp[i], lhs_dil[i]);
            let rhs_d = dilate(win[i], rhs_dil[i]);
            let out_d = dilate(out_sp[i], strides[i]);
            let before = rhs_d - padding[i].0 - 1;
            let after = lhs_d + rhs_d - 1 - out_d - before;
            (before, after)
        })
        .collect()
}

/// Padding of the kernel-gradient convolution: JAX's `_conv_general_vjp_rhs_padding`.
fn vjp_rhs_padding(
    in_sp: &[u64],
    win: &[u64],
    strides: &[i64],
    out_sp: &[u64],
    padding: &[(i64, i64)],
    lhs_dil: &[i64],
    rhs_dil: &[i64],
) -> Vec<(i64, i64)> {
    (0..in_sp.len())
        .map(|i| {
            let lhs_d = dilate(in_sp[i], lhs_dil[i]);
            let rhs_d = dilate(win[i], rhs_dil[i]);
            let out_d = dilate(out_sp[i], strides[i]);
            let lo = padding[i].0;
            let hi = (out_d - lhs_d) + (rhs_d - lo - 1);
            (lo, hi)
        })
        .collect()
}

/// Label string of one part: `a` at position pa, `b` at pb, spatial digit k at sp[k].
fn labels(rank: usize, a: (usize, char), b: (usize, char), sp: &[usize]) -> String {
    let mut l = vec!['?'; rank];
    l[a.0] = a.1;
    l[b.0] = b.1;
    for (k, &p) in sp.iter().enumerate() {
        l[p] = char::from_digit(k as u32, 10).unwrap_or('?');
    }
    l.into_iter().collect()
}

/// Splits dimension `src` of `v` into (G, size/G), G major, and merges the G
/// part into dimension `dst` as its major part (JAX's `_reshape_axis_out_of`
/// followed by `_reshape_axis_into`).
fn move_group(g: &mut Gen, v: Value, src: usize, groups: u64, dst: usize, name: &str) -> R<Value> {
    let t = g.ty(v);
    let mut split = t.shape.clone();
    split[src] /= groups;
    split.insert(src, groups);
    let s = g.reshape(v, &split, &format!("{name}.split"))?;
    // Axes of `s` without the group axis (index src) are the original dims, in
    // order; put the group axis right before original dim `dst`.
    let mut perm: Vec<usize> = (0..split.len()).filter(|&a| a != src).collect();
    perm.insert(dst, src);
    let tr = g.transpose(s, &perm, &format!("{name}.moved"))?;
    let mut merged = t.shape.clone();
    merged[src] /= groups;
    merged[dst] *= groups;
    g.reshape(tr, &merged, name)
}

pub(super) fn convolution(g: &mut Gen, inst: &InstData, ct: Value, want: &[bool]) -> R<Vec<Option<Value>>> {
    let (x, k) = (inst.operands[0], inst.operands[1]);
    let xt = g.ty(x);
    let kt = g.ty(k);
    let ctt = g.ty(ct);
    let rank = xt.rank();
    let dims = match g.attr(inst, "dims")? {
        AttrValue::Str(s) => s,
        _ => return Err(g.internal("convolution dims is not a string")),
    };
    let lab = parse_conv_labels(&dims, rank).map_err(|e| g.internal(e))?;
    let strides = g.a_ints(inst, "window_strides")?;
    let padding = g.a_pairs(inst, "padding")?;
    let lhs_dil = g.a_ints(inst, "lhs_dilation")?;
    let rhs_dil = g.a_ints(inst, "rhs_dilation")?;
    let fgc = g.a_int(inst, "feature_group_count")? as u64;
    let bgc = g.a_int(inst, "batch_group_count")? as u64;
    let in_sp: Vec<u64> = lab.in_spatial.iter().map(|&d| xt.shape[d]).collect();
    let k_sp: Vec<u64> = lab.k_spatial.iter().map(|&d| kt.shape[d]).collect();
    let out_sp: Vec<u64> = lab.out_spatial.iter().map(|&d| ctt.shape[d]).collect();
    let in_labels = labels(rank, (lab.in_batch, 'b'), (lab.in_feature, 'f'), &lab.in_spatial);
    let out_labels = labels(rank, (lab.out_batch, 'b'), (lab.out_feature, 'f'), &lab.out_spatial);
    let mut out = vec![None, None];

    if want[0] {
        // Input gradient: the cotangent convolved with the spatially reversed
        // kernel, its feature roles swapped, strides and lhs dilation swapped.
        let mut kk = widen(g, k, ctt.dtype)?;
        let groups = fgc.max(bgc);
        if groups > 1 {
            kk = move_group(g, kk, lab.k_out, groups, lab.k_in, &g.tmp("kernel_groups"))?;
        }
        let kr = g.reverse(kk, &lab.k_spatial, &g.tmp("kernel_rev"))?;
        let t_kernel = labels(rank, (lab.k_in, 'o'), (lab.k_out, 'i'), &lab.k_spatial);
        let pad = vjp_lhs_padding(&in_sp, &k_sp, &strides, &out_sp, &padding, &lhs_dil, &rhs_dil);
        let name = if bgc > 1 { g.tmp("lhs_groups") } else { g.ctn(x) };
        let c = g.emit(
            Opcode::Convolution,
            &[ct, kr],
            vec![
                ("dims", AttrValue::Str(format!("{out_labels}_{t_kernel}->{in_labels}"))),
                ("window_strides", super::emit::ints(&lhs_dil)),
                ("padding", pairs(&pad)),
                ("lhs_dilation", super::emit::ints(&strides)),
                ("rhs_dilation", super::emit::ints(&rhs_dil)),
                ("feature_group_count", AttrValue::Int(groups as i64)),
            ],
            None,
            &name,
        )?;
        let c = if bgc > 1 { move_group(g, c, lab.in_feature, bgc, lab.in_batch, &g.ctn(x))? } else { c };
        let c = g.convert(c, xt.dtype, &g.ctn(x))?;
        check_type(g, c, &xt, "input")?;
        out[0] = Some(c);
    }
    if want[1] {
        // Kernel gradient: the input (batch and feature swapped) convolved with
        // the cotangent as the kernel.
        let xw = widen(g, x, ctt.dtype)?;
        let (f2, b2) = if bgc > 1 {
            (bgc, 1)
        } else if fgc > 1 {
            (1, fgc)
        } else {
            (1, 1)
        };
        let t_in = labels(rank, (lab.in_feature, 'b'), (lab.in_batch, 'f'), &lab.in_spatial);
        let t_kernel = labels(rank, (lab.out_feature, 'o'), (lab.out_batch, 'i'), &lab.out_spatial);
        let t_out = labels(rank, (lab.k_in, 'b'), (lab.k_out, 'f'), &lab.k_spatial);
        let pad = vjp_rhs_padding(&in_sp, &k_sp, &strides, &out_sp, &padding, &lhs_dil, &rhs_dil);
        let c = g.emit(
            Opcode::Convolution,
            &[xw, ct],
            vec![
                ("dims", AttrValue::Str(format!("{t_in}_{t_kernel}->{t_out}"))),
                ("window_strides", super::emit::ints(&rhs_dil)),
                ("padding", pairs(&pad)),
                ("lhs_dilation", super::emit::ints(&lhs_dil)),
                ("rhs_dilation", super::emit::ints(&strides)),
                ("feature_group_count", AttrValue::Int(f2 as i64)),
                ("batch_group_count", AttrValue::Int(b2 as i64)),
            ],
            None,
            &g.ctn(k),
        )?;
        let c = g.convert(c, kt.dtype, &g.ctn(k))?;
        check_type(g, c, &kt, "kernel")?;
        out[1] = Some(c);
    }
    Ok(out)
}

fn check_type(g: &Gen, v: Value, want: &TensorType, what: &str) -> R<()> {
    let got = g.ty(v);
    if got != *want {
        return Err(g.internal(format!("the {what} gradient of a convolution has type {got}, expected {want}")));
    }
    Ok(())
}

/// `reduce_window` sum: pad the cotangent (edges and stride holes) and sum
/// windows of it; max and min: scatter the cotangent to each window's chosen
/// element with `select_and_scatter_add` (min as the max of the negation).
pub(super) fn reduce_window(g: &mut Gen, inst: &InstData, ct: Value) -> R<Value> {
    let x = inst.operands[0];
    let xt = g.ty(x);
    let yt = g.ty(inst.results[0]);
    let kind = g.a_ident(inst, "kind")?;
    let window = g.a_ints(inst, "window")?;
    let strides = g.a_ints(inst, "strides")?;
    let padding = g.a_pairs(inst, "padding")?;
    let r = xt.rank();
    match kind.as_str() {
        "sum" => {
            let win: Vec<u64> = window.iter().map(|&w| w as u64).collect();
            let pads = vjp_lhs_padding(&xt.shape, &win, &strides, &yt.shape, &padding, &vec![1; r], &vec![1; r]);
            let z = g.zeros(&TensorType::scalar(xt.dtype))?;
            let lo: Vec<i64> = pads.iter().map(|p| p.0).collect();
            let hi: Vec<i64> = pads.iter().map(|p| p.1).collect();
            let interior: Vec<i64> = strides.iter().map(|s| s - 1).collect();
            let padded = g.pad(ct, z, &lo, &hi, &interior, &g.tmp("ct_padded"))?;
            let c = g.emit(
                Opcode::ReduceWindow,
                &[padded],
                vec![("kind", ident("sum")), ("window", super::emit::ints(&window))],
                None,
                &g.ctn(x),
            )?;
            check_type(g, c, &xt, "operand")?;
            Ok(c)
        }
        "max" | "min" => {
            let operand = if kind == "min" { g.un(Opcode::Neg, x, &g.tmp("neg"))? } else { x };
            g.emit(
                Opcode::SelectAndScatterAdd,
                &[ct, operand],
                vec![
                    ("window", super::emit::ints(&window)),
                    ("strides", super::emit::ints(&strides)),
                    ("padding", pairs(&padding)),
                ],
                None,
                &g.ctn(x),
            )
        }
        k => Err(g.unsupported(inst.op, &format!("reduce_window kind '{k}' has no gradient"))),
    }
}

/// Most window offsets `select_and_scatter_add`'s transpose unrolls over.
const MAX_WINDOW: i64 = 1024;

/// `select_and_scatter_add` is linear in its source: the source's cotangent is
/// the operand cotangent read back at each window's selected position. The
/// selection (first maximum in row-major window order, NaN wins, padding never
/// chosen) is recomputed by walking the window offsets in order, each one a
/// strided slice of the padded operand.
pub(super) fn select_and_gather(g: &mut Gen, inst: &InstData, ct: Value) -> R<Value> {
    use Opcode::*;
    let (src, operand) = (inst.operands[0], inst.operands[1]);
    let st = g.ty(src);
    let ot = g.ty(operand);
    let window = g.a_ints(inst, "window")?;
    let strides = g.a_ints(inst, "strides")?;
    let padding = g.a_pairs(inst, "padding")?;
    let r = ot.rank();
    let count: i64 = window.iter().product();
    if count > MAX_WINDOW {
        return Err(g.unsupported(
            inst.op,
            &format!("windows of {count} elements are too large to unroll (at most {MAX_WINDOW})"),
        ));
    }
    let lo: Vec<i64> = padding.iter().map(|p| p.0).collect();
    let hi: Vec<i64> = padding.iter().map(|p| p.1).collect();
    let zr = vec![0i64; r];
    let zs = g.zeros(&TensorType::scalar(ot.dtype))?;
    let xp = g.pad(operand, zs, &lo, &hi, &zr, &g.tmp("operand_padded"))?;
    let gp = g.pad(ct, zs, &lo, &hi, &zr, &g.tmp("ct_padded"))?;
    let pt = TensorType::new(pjc_ir::DType::Pred, ot.shape.clone());
    let tru = g.konst(1.0, &pt, "true")?;
    let fls = g.konst(0.0, &TensorType::scalar(pjc_ir::DType::Pred), "false")?;
    let valid = g.pad(tru, fls, &lo, &hi, &zr, &g.tmp("valid"))?;
    let mut best: Option<(Value, Value, Value)> = None; // (value, ct, have)
    let mut off = vec![0i64; r];
    for _ in 0..count {
        let start = off.clone();
        let limit: Vec<i64> = (0..r).map(|d| off[d] + (st.shape[d] as i64 - 1) * strides[d] + 1).collect();
        let xv = g.slice(xp, &start, &limit, &strides, &g.tmp("win_x"))?;
        let gv = g.slice(gp, &start, &limit, &strides, &g.tmp("win_ct"))?;
        let vv = g.slice(valid, &start, &limit, &strides, &g.tmp("win_valid"))?;
        best = Some(match best {
            None => (xv, gv, vv),
            Some((bx, bg, have)) => {
                // take = valid && (!have || beats(x, best)), beats = !isnan(best) && (isnan(x) || x > best)
                let x_nan = g.cmp(xv, xv, "ne", &g.tmp("x_nan"))?;
                let b_num = g.cmp(bx, bx, "eq", &g.tmp("best_num"))?;
                let gt = g.cmp(xv, bx, "gt", &g.tmp("greater"))?;
                let c = g.bin(Or, x_nan, gt, &g.tmp("better"))?;
                let beats = g.bin(And, b_num, c, &g.tmp("beats"))?;
                let none = g.un(Not, have, &g.tmp("none_yet"))?;
                let cand = g.bin(Or, none, beats, &g.tmp("cand"))?;
                let take = g.bin(And, vv, cand, &g.tmp("take"))?;
                let nx = g.select(take, xv, bx, &g.tmp("best"))?;
                let ng = g.select(take, gv, bg, &g.tmp("best_ct"))?;
                let nh = g.bin(Or, have, vv, &g.tmp("have"))?;
                (nx, ng, nh)
            }
        });
        // Next offset in row-major order.
        for d in (0..r).rev() {
            off[d] += 1;
            if off[d] < window[d] {
                break;
            }
            off[d] = 0;
        }
    }
    let (_, bg, have) = best.ok_or_else(|| g.internal("empty window"))?;
    let z = g.zeros(&st)?;
    g.select(have, bg, z, &g.ctn(src))
}
