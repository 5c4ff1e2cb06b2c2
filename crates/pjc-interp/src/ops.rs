//! One instruction of spec section 7 on host tensors: reads the attributes
//! (defaults applied by `pjc_ir::Attrs`) and calls the matching `pjc_tensor`
//! kernel. The interpreter and the plan executor's library steps both run
//! instructions through [`eval_inst_results`] (or its one-result form
//! [`eval_inst`]), so there is one dispatch from ops to reference kernels.

use pjc_ir::{Attrs, InstData, Number, Opcode, TensorType};
use pjc_tensor::{Scalar, Tensor, TensorError};

type R<T> = Result<T, TensorError>;

fn shape_of(t: &TensorType) -> Vec<usize> {
    t.shape.iter().map(|&d| d as usize).collect()
}

/// Reads integer scalar start indices.
fn starts(ops: &[&Tensor]) -> Vec<i128> {
    ops.iter().map(|t| t.index_at(0)).collect()
}

/// Evaluates an instruction that is not a call, a transform, control flow, a
/// collective or `axis_index` (those need more than their operands) on
/// operand tensors `ops`: one tensor per result, `outs` being the result
/// types (`sort` and `top_k` have several results).
pub fn eval_inst_results(inst: &InstData, ops: &[&Tensor], outs: &[&TensorType]) -> R<Vec<Tensor>> {
    let ranks: Vec<usize> = ops.iter().map(|t| t.rank()).collect();
    let a = Attrs::with_ranks(inst, &ranks);
    match inst.op {
        Opcode::Sort => pjc_tensor::sort(ops, a.index("dim")?, a.index("num_keys")?, a.bool("descending")?),
        Opcode::TopK => pjc_tensor::top_k(ops[0], a.index("k")?).map(|(v, i)| vec![v, i]),
        _ => {
            let [out] = outs else {
                return Err(TensorError::Invalid(format!("'{}' has one result, {} result types were given", inst.op, outs.len())));
            };
            Ok(vec![eval_one(inst, &a, ops, out)?])
        }
    }
}

/// Evaluates a single-result instruction (see [`eval_inst_results`]); `out`
/// is the result type.
pub fn eval_inst(inst: &InstData, ops: &[&Tensor], out: &TensorType) -> R<Tensor> {
    let mut results = eval_inst_results(inst, ops, &[out])?;
    match results.len() {
        1 => Ok(results.remove(0)),
        n => Err(TensorError::Invalid(format!("'{}' has {n} results, not one", inst.op))),
    }
}

/// One single-result instruction, its attributes read through `a`.
fn eval_one(inst: &InstData, a: &Attrs, ops: &[&Tensor], out: &TensorType) -> R<Tensor> {
    use Opcode::*;
    if let Some(op) = inst.op.unary() {
        return pjc_tensor::unary(op, ops[0]);
    }
    if let Some(op) = inst.op.binary() {
        return pjc_tensor::binary(op, ops[0], ops[1]);
    }
    match inst.op {
        Constant => {
            let lit = inst.literal.as_ref().ok_or_else(|| TensorError::Invalid("constant without literal".into()))?;
            let elems: Vec<Scalar> = lit
                .elems
                .iter()
                .map(|n| match *n {
                    Number::Int(i) => Scalar::Int(i),
                    Number::Float(x) => Scalar::Float(x),
                    Number::Bool(b) => Scalar::Bool(b),
                })
                .collect();
            Ok(Tensor::from_scalars(out.dtype, shape_of(out), &elems))
        }
        Iota => Ok(pjc_tensor::iota(out.dtype, &shape_of(out), a.index("dim")?)),
        Compare => pjc_tensor::compare(&a.ident("dir")?, ops[0], ops[1]),
        Select => pjc_tensor::select(ops[0], ops[1], ops[2]),
        Clamp => pjc_tensor::clamp(ops[0], ops[1], ops[2]),
        Convert => pjc_tensor::convert(ops[0], out.dtype),
        BitcastConvert => pjc_tensor::bitcast_convert(ops[0], out.dtype),
        Broadcast => pjc_tensor::broadcast(ops[0], &a.indices("dims")?, &shape_of(out)),
        Reshape => pjc_tensor::reshape(ops[0], &shape_of(out)),
        Transpose => pjc_tensor::transpose(ops[0], &a.indices("perm")?),
        Slice => pjc_tensor::slice(ops[0], &a.indices("start")?, &a.indices("limit")?, &a.indices("stride")?),
        Concat => pjc_tensor::concat(ops, a.index("dim")?),
        DynamicSlice => pjc_tensor::dynamic_slice(ops[0], &starts(&ops[1..]), &a.indices("sizes")?),
        DynamicUpdateSlice => pjc_tensor::dynamic_update_slice(ops[0], ops[1], &starts(&ops[2..])),
        Pad => pjc_tensor::pad(ops[0], ops[1], &a.ints("low")?, &a.ints("high")?, &a.indices("interior")?),
        Reverse => pjc_tensor::reverse(ops[0], &a.indices("dims")?),
        Reduce => pjc_tensor::reduce(ops[0], &a.indices("dims")?, a.reduce_kind()?),
        Argmax => pjc_tensor::argmax(ops[0], a.index("dim")?, out.dtype),
        Argmin => pjc_tensor::argmin(ops[0], a.index("dim")?, out.dtype),
        DotGeneral => pjc_tensor::dot_general(
            ops[0],
            ops[1],
            &a.indices("lhs_batch")?,
            &a.indices("rhs_batch")?,
            &a.indices("lhs_contract")?,
            &a.indices("rhs_contract")?,
            out.dtype,
        ),
        Convolution => {
            let dims = pjc_tensor::parse_conv_dims(&a.string("dims")?, ops[0].rank()).map_err(TensorError::Invalid)?;
            pjc_tensor::convolution(
                ops[0],
                ops[1],
                &dims,
                &a.indices("window_strides")?,
                &a.pairs("padding")?,
                &a.indices("lhs_dilation")?,
                &a.indices("rhs_dilation")?,
                a.index("feature_group_count")?,
                a.index("batch_group_count")?,
                out.dtype,
            )
        }
        ReduceWindow => {
            pjc_tensor::reduce_window(ops[0], a.reduce_kind()?, &a.indices("window")?, &a.indices("strides")?, &a.pairs("padding")?)
        }
        SelectAndScatterAdd => {
            pjc_tensor::select_and_scatter_add(ops[0], ops[1], &a.indices("window")?, &a.indices("strides")?, &a.pairs("padding")?)
        }
        Gather => pjc_tensor::gather(ops[0], ops[1], a.index("axis")?),
        ScatterAdd | Scatter => pjc_tensor::scatter(ops[0], ops[1], ops[2], a.index("axis")?, a.scatter_kind()?),
        op => Err(TensorError::Invalid(format!("'{op}' cannot be evaluated per instruction"))),
    }
}
