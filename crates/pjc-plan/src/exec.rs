//! A reference executor for plans: runs every step on host tensors, kernels
//! evaluated node by node over all iteration points at once with the
//! interpreter's kernels (so a kernel's semantics are exactly the ops it
//! fused). It checks fusion against the interpreter, is the oracle generated
//! code is compared with, and runs library steps for the runtime. Collectives
//! are the caller's (`Collectives`), since they need the other devices.

use crate::kernel::{IndexOp, Kernel, Node};
use crate::control::{run_control, step_count, Block, Machine};
use crate::plan::{BufferKind, Plan, Step};
use pjc_ir::{DType, InstData};
use pjc_tensor::{Buf, Scalar, Tensor, TensorError};

type R<T> = Result<T, TensorError>;

/// Performs a collective for the executor (a single device: identity-like).
pub trait Collectives {
    fn run(&mut self, inst: &InstData, input: &Tensor, out_ty: &pjc_ir::TensorType) -> R<Tensor>;
    /// This device's index along a mesh axis (for `axis_index`).
    fn axis_index(&self, axis: &str) -> i64;
}

fn shape(t: &pjc_ir::TensorType) -> Vec<usize> {
    t.shape.iter().map(|&d| d as usize).collect()
}

/// The tensor a `constant`'s literal denotes (a scalar literal fills the type).
pub fn literal_tensor(lit: &pjc_ir::Literal, ty: &pjc_ir::TensorType) -> Tensor {
    let elems: Vec<Scalar> = lit
        .elems
        .iter()
        .map(|n| match *n {
            pjc_ir::Number::Int(i) => Scalar::Int(i),
            pjc_ir::Number::Float(x) => Scalar::Float(x),
            pjc_ir::Number::Bool(b) => Scalar::Bool(b),
        })
        .collect();
    Tensor::from_scalars(ty.dtype, shape(ty), &elems)
}

/// Runs `plan` on `args` (one per parameter) and returns the results.
pub fn execute(plan: &Plan, args: &[Tensor], coll: &mut dyn Collectives) -> R<Vec<Tensor>> {
    let mut bufs: Vec<Option<Tensor>> = vec![None; plan.buffers.len()];
    for (i, b) in plan.buffers.iter().enumerate() {
        match &b.kind {
            BufferKind::Param(k) => bufs[i] = Some(args[*k].clone()),
            BufferKind::Constant(lit) => bufs[i] = Some(literal_tensor(lit, &b.ty)),
            BufferKind::Temp | BufferKind::Window { .. } => {}
            BufferKind::AxisIndices(axes) => {
                let v: Vec<Scalar> = axes.iter().map(|a| Scalar::Int(coll.axis_index(a) as i128)).collect();
                bufs[i] = Some(Tensor::from_scalars(DType::I32, vec![axes.len()], &v));
            }
        }
    }
    let mut ex = Executor { plan, bufs, coll };
    ex.run(&plan.steps, 0)?;
    plan.results.iter().map(|&b| ex.get(b)).collect()
}

/// The executor's state: one tensor per buffer once written.
struct Executor<'a> {
    plan: &'a Plan,
    bufs: Vec<Option<Tensor>>,
    coll: &'a mut dyn Collectives,
}

impl Executor<'_> {
    fn get(&self, b: usize) -> R<Tensor> {
        self.bufs[b].clone().ok_or_else(|| TensorError::Invalid(format!("buffer b{b} read before it is written")))
    }

    /// Runs `steps`, the first numbered `first` (control steps need it).
    fn run(&mut self, steps: &[Step], first: usize) -> R<()> {
        let plan = self.plan;
        let mut number = first;
        for step in steps {
            match step {
                Step::Kernel(k) => {
                    // A kernel may view a buffer as another dtype of its width.
                    let ins: Vec<Tensor> = k.inputs.iter().map(|b| viewed(self.get(b.buffer)?, b.dtype)).collect::<R<_>>()?;
                    let types: Vec<pjc_ir::TensorType> =
                        k.outputs.iter().map(|b| pjc_ir::TensorType::new(b.dtype, plan.buffers[b.buffer].ty.shape.clone())).collect();
                    let refs: Vec<&pjc_ir::TensorType> = types.iter().collect();
                    for (b, out) in k.outputs.iter().zip(run_kernel(k, &ins, &refs)?) {
                        self.bufs[b.buffer] = Some(viewed(out, plan.buffers[b.buffer].ty.dtype)?);
                    }
                }
                Step::Library { inst, inputs, outputs, .. } => {
                    let ins: Vec<Tensor> = inputs.iter().map(|&b| self.get(b)).collect::<R<_>>()?;
                    let types: Vec<&pjc_ir::TensorType> = outputs.iter().map(|&b| &plan.buffers[b].ty).collect();
                    for (&b, out) in outputs.iter().zip(library(inst, &ins, &types)?) {
                        self.bufs[b] = Some(out);
                    }
                }
                Step::Collective { inst, input, output, .. } => {
                    let x = self.get(*input)?;
                    self.bufs[*output] = Some(self.coll.run(inst, &x, &plan.buffers[*output].ty)?);
                }
                Step::Control(c) => run_control(&plan.buffers, c, number, self, TensorError::Invalid)?,
            }
            number += step_count(step);
        }
        Ok(())
    }
}

/// Control flow on tensors: windows are copies of their slice (in before the
/// step, out after it).
impl Machine for Executor<'_> {
    type Error = TensorError;
    fn run_block(&mut self, block: &Block, first: usize) -> R<()> {
        self.run(&block.steps, first)
    }
    fn copy(&mut self, dst: usize, src: usize) -> R<()> {
        self.bufs[dst] = Some(self.get(src)?);
        Ok(())
    }
    fn swap(&mut self, a: usize, b: usize) -> R<()> {
        self.bufs.swap(a, b);
        Ok(())
    }
    fn read_scalar(&mut self, b: usize) -> R<Vec<u8>> {
        Ok(pjc_tensor::buf_to_le_bytes(&self.get(b)?.data))
    }
    fn enter_window(&mut self, w: usize, whole: usize, pos: u64, read: bool) -> R<()> {
        if read {
            self.bufs[w] = Some(pjc_tensor::index_along(&self.get(whole)?, 0, pos as usize)?);
        }
        Ok(())
    }
    fn leave_window(&mut self, w: usize, whole: usize, pos: u64, written: bool) -> R<()> {
        if written {
            let slice = self.get(w)?;
            // The whole buffer starts unwritten: its other slices come later.
            let ty = &self.plan.buffers[whole].ty;
            let all = match self.bufs[whole].take() {
                Some(t) => t,
                None => Tensor::new(ty.shape.iter().map(|&d| d as usize).collect(), pjc_tensor::Buf::splat(ty.dtype, Scalar::Int(0), ty.num_elements() as usize)),
            };
            let mut shape = slice.shape.clone();
            shape.insert(0, 1);
            let one = Tensor::new(shape, slice.data);
            let mut starts = vec![0i128; ty.rank()];
            starts[0] = pos as i128;
            self.bufs[whole] = Some(pjc_tensor::dynamic_update_slice(&all, &one, &starts)?);
        }
        Ok(())
    }
}

/// `t` with the same bits as dtype `d` (a kernel's view of a buffer).
fn viewed(t: Tensor, d: DType) -> R<Tensor> {
    if t.dtype() == d {
        Ok(t)
    } else {
        pjc_tensor::bitcast_convert(&t, d)
    }
}

/// A library step with the reference kernels (the runtime substitutes fast
/// ones): the interpreter's own evaluation of the instruction, one tensor
/// per result (of the types `outs`).
pub fn library(inst: &InstData, ins: &[Tensor], outs: &[&pjc_ir::TensorType]) -> R<Vec<Tensor>> {
    let refs: Vec<&Tensor> = ins.iter().collect();
    pjc_interp::eval_inst_results(inst, &refs, outs)
}

fn i64s(v: Vec<i128>) -> Tensor {
    let n = v.len();
    Tensor::new(vec![n], Buf::from_i128(DType::I64, &v))
}

fn ints(t: &Tensor) -> Vec<i128> {
    match t.data.lanes() {
        pjc_tensor::Lanes::I(v) => v,
        _ => panic!("index node is not an integer"),
    }
}

/// Evaluates a kernel over all its points: one tensor per output (of the
/// types `out_tys`).
pub fn run_kernel(k: &Kernel, ins: &[Tensor], out_tys: &[&pjc_ir::TensorType]) -> R<Vec<Tensor>> {
    let mut full: Vec<u64> = k.shape.clone();
    if let Some(r) = &k.reduce {
        full.extend(&r.shape);
    }
    let points: usize = full.iter().product::<u64>() as usize;
    let strides = {
        let mut s = vec![1u64; full.len()];
        for i in (0..full.len().saturating_sub(1)).rev() {
            s[i] = s[i + 1] * full[i + 1];
        }
        s
    };
    let mut vals: Vec<Tensor> = Vec::with_capacity(k.nodes.len());
    let splat = |d: DType, s: Scalar| Tensor::new(vec![points], Buf::splat(d, s, points));
    for (i, node) in k.nodes.iter().enumerate() {
        let ty = k.types[i];
        let v = match node {
            Node::Coord(c) => i64s((0..points as u64).map(|p| ((p / strides[*c]) % full[*c]) as i128).collect()),
            Node::ConstInt(x, d) => splat(*d, Scalar::Int(*x)),
            Node::ConstFloat(x, d) => splat(*d, Scalar::Float(*x)),
            Node::ConstBool(b) => splat(DType::Pred, Scalar::Bool(*b)),
            Node::Load { input, index } => {
                let idx: Vec<usize> = ints(&vals[*index]).iter().map(|&x| x as usize).collect();
                let src = &ins[*input];
                let t = Tensor::new(vec![points], src.data.take(&idx));
                if matches!(t.dtype(), DType::F16 | DType::BF16) {
                    pjc_tensor::convert(&t, DType::F32)?
                } else {
                    t
                }
            }
            Node::Unary { op, x } => pjc_tensor::unary(*op, &vals[*x])?,
            Node::Binary { op, a, b } => pjc_tensor::binary(*op, &vals[*a], &vals[*b])?,
            Node::Compare { dir, a, b } => {
                let d = format!("{dir:?}").to_lowercase();
                pjc_tensor::compare(&d, &vals[*a], &vals[*b])?
            }
            Node::Select { cond, a, b } => pjc_tensor::select(&vals[*cond], &vals[*a], &vals[*b])?,
            Node::Convert { x, to } => {
                let c = pjc_tensor::convert(&vals[*x], *to)?;
                if matches!(to, DType::F16 | DType::BF16) {
                    pjc_tensor::convert(&c, DType::F32)?
                } else {
                    c
                }
            }
            Node::Bitcast { x, from, to } => {
                // f16/bf16 values are held as f32: back to storage, bitcast, and widen again.
                let src = if vals[*x].dtype() != *from { pjc_tensor::convert(&vals[*x], *from)? } else { vals[*x].clone() };
                let b = pjc_tensor::bitcast_convert(&src, *to)?;
                if matches!(to, DType::F16 | DType::BF16) {
                    pjc_tensor::convert(&b, DType::F32)?
                } else {
                    b
                }
            }
            Node::Index { op, a, b } => {
                let (x, y) = (ints(&vals[*a]), ints(&vals[*b]));
                i64s(
                    x.iter()
                        .zip(&y)
                        .map(|(&p, &q)| match op {
                            IndexOp::Add => p + q,
                            IndexOp::Sub => p - q,
                            IndexOp::Mul => p * q,
                            IndexOp::Div => p.div_euclid(q),
                            IndexOp::Rem => p.rem_euclid(q),
                            IndexOp::Min => p.min(q),
                            IndexOp::Max => p.max(q),
                            IndexOp::Lt => (p < q) as i128,
                        })
                        .collect(),
                )
            }
        };
        debug_assert_eq!(v.dtype(), ty, "node {i} {node:?}");
        vals.push(v);
    }
    k.results.iter().zip(out_tys).map(|(&res, out_ty)| kernel_result(k, &vals[res], out_ty)).collect()
}

/// One result of a kernel from its node's values at every point: the values
/// themselves, or combined over the reduction loop.
fn kernel_result(k: &Kernel, result: &Tensor, out_ty: &pjc_ir::TensorType) -> R<Tensor> {
    let out_shape = shape(out_ty);
    let value = match &k.reduce {
        None => result.clone(),
        Some(r) => {
            let mut grid: Vec<usize> = k.shape.iter().map(|&d| d as usize).collect();
            grid.extend(r.shape.iter().map(|&d| d as usize));
            let g = Tensor::new(grid, result.data.clone());
            let dims: Vec<usize> = (k.shape.len()..k.shape.len() + r.shape.len()).collect();

            // The interpreter reduces in the element type's rules; feed it the
            // stored dtype so rounding matches (accumulation is f64 there).
            let g = if g.dtype() != out_ty.dtype && out_ty.dtype != DType::Pred {
                pjc_tensor::convert(&g, out_ty.dtype)?
            } else {
                g
            };
            pjc_tensor::reduce(&g, &dims, r.kind)?
        }
    };
    let value = if value.dtype() != out_ty.dtype { pjc_tensor::convert(&value, out_ty.dtype)? } else { value };
    Ok(Tensor::new(out_shape, value.data))
}

/// Collectives for a one-device run: every group has one member.
pub struct SingleDevice;

impl Collectives for SingleDevice {
    fn run(&mut self, _inst: &InstData, input: &Tensor, _out_ty: &pjc_ir::TensorType) -> R<Tensor> {
        Ok(input.clone())
    }
    fn axis_index(&self, _axis: &str) -> i64 {
        0
    }
}
