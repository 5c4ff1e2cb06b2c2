//! One instruction of spec section 7 on host tensors: reads the attributes
//! (defaults resolved through `pjc_ir::infer::resolved_attr`) and calls the
//! matching `pjc_tensor` kernel.

use pjc_ir::infer::resolved_attr;
use pjc_ir::{AttrValue, Function, InstData, Number, Opcode, TensorType};
use pjc_tensor::{Scalar, Tensor, TensorError};

type R<T> = Result<T, TensorError>;

struct Attrs<'a> {
    inst: &'a InstData,
    types: Vec<&'a TensorType>,
}

impl Attrs<'_> {
    fn get(&self, name: &str) -> R<AttrValue> {
        resolved_attr(self.inst, name, &self.types)
            .ok_or_else(|| TensorError::Invalid(format!("missing attribute '{name}'")))
    }
    fn int(&self, name: &str) -> R<i64> {
        self.get(name)?.as_int().ok_or_else(|| TensorError::Invalid(format!("'{name}' is not an integer")))
    }
    fn ints(&self, name: &str) -> R<Vec<i64>> {
        self.get(name)?.as_ints().ok_or_else(|| TensorError::Invalid(format!("'{name}' is not an integer list")))
    }
    fn usizes(&self, name: &str) -> R<Vec<usize>> {
        Ok(self.ints(name)?.into_iter().map(|i| i as usize).collect())
    }
    fn pairs(&self, name: &str) -> R<Vec<(i64, i64)>> {
        self.get(name)?.as_pairs().ok_or_else(|| TensorError::Invalid(format!("'{name}' is not a list of pairs")))
    }
    fn ident(&self, name: &str) -> R<String> {
        self.get(name)?
            .as_ident()
            .map(str::to_string)
            .ok_or_else(|| TensorError::Invalid(format!("'{name}' is not an identifier")))
    }
}

fn shape_of(t: &TensorType) -> Vec<usize> {
    t.shape.iter().map(|&d| d as usize).collect()
}

/// Reads integer scalar start indices.
fn starts(ops: &[&Tensor]) -> Vec<i128> {
    ops.iter().map(|t| t.index_at(0)).collect()
}

/// Evaluates a single-result, non-call, non-collective instruction.
pub(crate) fn eval_op(f: &Function, inst: &InstData, ops: &[&Tensor]) -> R<Tensor> {
    use Opcode::*;
    let out = &f.values[inst.results[0]].ty;
    let a = Attrs { inst, types: inst.operands.iter().map(|&v| f.ty(v)).collect() };
    let def = inst.op.def();
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
        Iota => Ok(pjc_tensor::iota(out.dtype, &shape_of(out), a.int("dim")? as usize)),
        Compare => pjc_tensor::compare(&a.ident("dir")?, ops[0], ops[1]),
        Select => pjc_tensor::select(ops[0], ops[1], ops[2]),
        Clamp => pjc_tensor::clamp(ops[0], ops[1], ops[2]),
        Convert => pjc_tensor::convert(ops[0], out.dtype),
        BitcastConvert => pjc_tensor::bitcast_convert(ops[0], out.dtype),
        _ if def.elementwise && ops.len() == 1 => pjc_tensor::unary(inst.op, ops[0]),
        _ if def.elementwise && ops.len() == 2 => pjc_tensor::binary(inst.op, ops[0], ops[1]),
        Broadcast => pjc_tensor::broadcast(ops[0], &a.usizes("dims")?, &shape_of(out)),
        Reshape => pjc_tensor::reshape(ops[0], &shape_of(out)),
        Transpose => pjc_tensor::transpose(ops[0], &a.usizes("perm")?),
        Slice => pjc_tensor::slice(ops[0], &a.usizes("start")?, &a.usizes("limit")?, &a.usizes("stride")?),
        Concat => pjc_tensor::concat(ops, a.int("dim")? as usize),
        DynamicSlice => pjc_tensor::dynamic_slice(ops[0], &starts(&ops[1..]), &a.usizes("sizes")?),
        DynamicUpdateSlice => pjc_tensor::dynamic_update_slice(ops[0], ops[1], &starts(&ops[2..])),
        Pad => pjc_tensor::pad(ops[0], ops[1], &a.ints("low")?, &a.ints("high")?, &a.usizes("interior")?),
        Reverse => pjc_tensor::reverse(ops[0], &a.usizes("dims")?),
        Reduce => pjc_tensor::reduce(ops[0], &a.usizes("dims")?, &a.ident("kind")?),
        Argmax => pjc_tensor::argmax(ops[0], a.int("dim")? as usize, out.dtype),
        Argmin => pjc_tensor::argmin(ops[0], a.int("dim")? as usize, out.dtype),
        DotGeneral => pjc_tensor::dot_general(
            ops[0],
            ops[1],
            &a.usizes("lhs_batch")?,
            &a.usizes("rhs_batch")?,
            &a.usizes("lhs_contract")?,
            &a.usizes("rhs_contract")?,
            out.dtype,
        ),
        Convolution => {
            let labels = a.get("dims")?;
            let labels = labels.as_str().unwrap_or_default();
            let dims = pjc_tensor::parse_conv_dims(labels, ops[0].rank()).map_err(TensorError::Invalid)?;
            pjc_tensor::convolution(
                ops[0],
                ops[1],
                &dims,
                &a.usizes("window_strides")?,
                &a.pairs("padding")?,
                &a.usizes("lhs_dilation")?,
                &a.usizes("rhs_dilation")?,
                a.int("feature_group_count")? as usize,
                a.int("batch_group_count")? as usize,
                out.dtype,
            )
        }
        ReduceWindow => pjc_tensor::reduce_window(
            ops[0],
            &a.ident("kind")?,
            &a.usizes("window")?,
            &a.usizes("strides")?,
            &a.pairs("padding")?,
        ),
        SelectAndScatterAdd => pjc_tensor::select_and_scatter_add(
            ops[0],
            ops[1],
            &a.usizes("window")?,
            &a.usizes("strides")?,
            &a.pairs("padding")?,
        ),
        Gather => pjc_tensor::gather(ops[0], ops[1], a.int("axis")? as usize),
        ScatterAdd => pjc_tensor::scatter_add(ops[0], ops[1], ops[2], a.int("axis")? as usize),
        op => Err(TensorError::Invalid(format!("'{op}' cannot be evaluated per instruction"))),
    }
}
