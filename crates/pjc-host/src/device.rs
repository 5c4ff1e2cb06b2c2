//! The CUDA view of a plan: which steps the CUDA backend hands to cuBLAS and
//! which run as generated kernels, decided here once, from the plan alone,
//! for the PTX generator (`pjc_codegen::ptx`), the backend that launches it
//! (`pjc-runtime`'s `cuda` module) and `pjc compile --emit plan --device cuda`.
//!
//! - A `dot_general` of f32 or f64 operands and result, or of bf16/f16
//!   operands with a result of their dtype or f32, that is strided batched
//!   products in place ([`crate::gemm::strided_calls`]: one call per outer
//!   batch index when the batch dimensions are not one strided dimension)
//!   whose strides cuBLAS accepts ([`gemm_args`]) is cuBLAS
//!   `{S,D}gemmStridedBatched` or `GemmStridedBatchedEx` with f32 compute
//!   (or nothing / a zero fill for empty products).
//! - A `convolution` that [`crate::cudnn::cudnn_step`] maps (float operands
//!   and result of one dtype, up to 3 spatial dims; forward, input gradient
//!   or kernel gradient by its attributes) is one cuDNN call, with the
//!   `cudnnTransformTensor` copies its layout or padding needs. The step
//!   keeps its device kernels in the plan and the PTX ([`ptx_kernels`]): the
//!   backend runs them instead when libcudnn cannot be loaded.
//! - Every other library step (products of other dtypes or layouts,
//!   convolutions cuDNN does not take, scatters, sort, top_k) runs its
//!   device kernels: the same
//!   computation written as generated loop kernels by the planner (one, or a
//!   short sequence through temporaries: sort's ranks), so the CPU tests that
//!   run those kernels on the x86 JIT cover its logic.
//!
//! Nothing runs on the host: a library step without a device kernel is a
//! planner bug, reported by [`cuda_plan`].

use pjc_ir::{DType, InstData, Opcode, TensorType};
use pjc_plan::{Plan, Step};
use std::fmt;

/// A cuBLAS operand: transposed or not, and its leading dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    pub trans: bool,
    pub ld: usize,
}

/// How to pass the `rows x cols` matrix X with X(r, c) at `r * rs + c * cs`
/// as `op(X)` of column-major cuBLAS, if its strides allow it.
fn operand(rows: usize, cols: usize, rs: isize, cs: isize) -> Option<Operand> {
    let (rows1, cols1) = (rows.max(1), cols.max(1));
    // Not transposed: column-major with ld = cs needs unit row stride.
    if rs == 1 || rows <= 1 {
        let ld = if cols <= 1 { rows1 } else { usize::try_from(cs).ok()? };
        if ld >= rows1 {
            return Some(Operand { trans: false, ld });
        }
    }
    // Transposed: X^T (cols x rows) column-major with ld = rs.
    if cs == 1 || cols <= 1 {
        let ld = if rows <= 1 { cols1 } else { usize::try_from(rs).ok()? };
        if ld >= cols1 {
            return Some(Operand { trans: true, ld });
        }
    }
    None
}

/// One `cublas<S|D>gemmStridedBatched` call computing the row-major product
/// C[batch, m, n] = A[batch, m, k] B[batch, k, n] as its transpose,
/// C^T = B^T A^T, in column-major terms: cuBLAS's (m, n, k) are ours
/// (n, m, k), its A is our B and its B is our A.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmArgs {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// Our right operand (B).
    pub a: Operand,
    pub stride_a: usize,
    /// Our left operand (A).
    pub b: Operand,
    pub stride_b: usize,
    pub ldc: usize,
    pub stride_c: usize,
    pub batch: usize,
}

/// Maps a [`crate::gemm::StridedCalls`] call `(batch, m, k, n, lhs strides,
/// rhs strides)` (element strides: batch, row, column) onto cuBLAS, or `None`
/// when a stride pattern or a size does not fit (the step then runs
/// its device kernel).
pub fn gemm_args(batch: usize, m: usize, k: usize, n: usize, sa: [isize; 3], sb: [isize; 3]) -> Option<GemmArgs> {
    // op(cuBLAS A) = B^T: n x k, element (j, l) = B(l, j) at l*sb[1] + j*sb[2].
    let a = operand(n, k, sb[2], sb[1])?;
    // op(cuBLAS B) = A^T: k x m, element (l, i) = A(i, l) at i*sa[1] + l*sa[2].
    let b = operand(k, m, sa[2], sa[1])?;
    let g = GemmArgs {
        m: n,
        n: m,
        k,
        a,
        stride_a: usize::try_from(sb[0]).ok()?,
        b,
        stride_b: usize::try_from(sa[0]).ok()?,
        ldc: n.max(1),
        stride_c: m * n,
        batch,
    };
    let fits = |x: usize| x <= i32::MAX as usize;
    let all = [g.m, g.n, g.k, g.a.ld, g.b.ld, g.ldc, g.batch];
    (all.iter().all(|&x| fits(x)) && [g.stride_a, g.stride_b, g.stride_c].iter().all(|&s| s <= i64::MAX as usize)).then_some(g)
}

/// What cuBLAS makes of a product step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cublas {
    /// Nothing to compute (an empty result).
    Skip,
    /// An empty contraction: the result is zeros.
    Zero,
    /// Strided batched GEMM calls, one per entry of `calls` (element offsets
    /// of lhs, rhs and result), all with `args`: `{S,D}gemmStridedBatched`
    /// when operands and result are f32 or f64, else `GemmStridedBatchedEx`
    /// with f32 computation (bf16/f16 operands, a bf16/f16 or f32 result).
    Gemm { operands: DType, result: DType, args: GemmArgs, calls: Vec<[usize; 3]> },
}

impl Cublas {
    /// The cuBLAS routine a `Gemm` calls.
    pub fn routine(&self) -> &'static str {
        match self {
            Cublas::Gemm { operands: DType::F32, result: DType::F32, .. } => "SgemmStridedBatched",
            Cublas::Gemm { operands: DType::F64, .. } => "DgemmStridedBatched",
            Cublas::Gemm { .. } => "GemmStridedBatchedEx (f32 compute)",
            Cublas::Skip | Cublas::Zero => "",
        }
    }
}

/// Operand and result dtypes cuBLAS multiplies: f32 and f64 as themselves;
/// bf16 and f16 into the same dtype or f32, computing in f32 (spec section 11).
fn cublas_dtypes(a: DType, out: DType) -> bool {
    matches!((a, out), (DType::F32, DType::F32) | (DType::F64, DType::F64) | (DType::BF16, DType::BF16 | DType::F32) | (DType::F16, DType::F16 | DType::F32))
}

/// The cuBLAS calls for library step `inst` (operand types `a`, `b`, result
/// `out`), if cuBLAS takes it: dtypes it multiplies ([`cublas_dtypes`];
/// cuBLAS's default math mode, so f32 stays f32, no TF32), strided batched
/// products in place ([`crate::gemm::strided_calls`]).
pub fn cublas_step(inst: &InstData, a: &TensorType, b: &TensorType, out: &TensorType) -> Option<Cublas> {
    if inst.op != Opcode::DotGeneral || b.dtype != a.dtype || !cublas_dtypes(a.dtype, out.dtype) {
        return None;
    }
    let refs = [a, b];
    let us = |n: &str| -> Vec<usize> {
        pjc_ir::attrs::resolved_attr(inst, n, &refs).and_then(|a| a.as_ints()).unwrap_or_default().iter().map(|&x| x as usize).collect()
    };
    let shape = |t: &TensorType| -> Vec<usize> { t.shape.iter().map(|&x| x as usize).collect() };
    let v = crate::gemm::strided_calls(&shape(a), &shape(b), &us("lhs_batch"), &us("rhs_batch"), &us("lhs_contract"), &us("rhs_contract"))?;
    if out.num_elements() as usize != v.calls.len() * v.batch * v.m * v.n {
        return None;
    }
    if v.calls.is_empty() || v.batch * v.m * v.n == 0 {
        return Some(Cublas::Skip);
    }
    if v.k == 0 {
        return Some(Cublas::Zero);
    }
    let args = gemm_args(v.batch, v.m, v.k, v.n, v.lhs, v.rhs)?;
    Some(Cublas::Gemm { operands: a.dtype, result: out.dtype, args, calls: v.calls })
}

/// The cuBLAS call of a plan step, if it is a library step cuBLAS takes.
pub fn cublas_of(plan: &Plan, step: &Step) -> Option<Cublas> {
    match step {
        Step::Library { inst, inputs, outputs, .. } if inputs.len() == 2 && outputs.len() == 1 => {
            let ty = |b: usize| &plan.buffers[b].ty;
            cublas_step(inst, ty(inputs[0]), ty(inputs[1]), ty(outputs[0]))
        }
        _ => None,
    }
}

/// The cuDNN call of a plan step, if it is a convolution cuDNN takes.
pub fn cudnn_of(plan: &Plan, step: &Step) -> Option<crate::cudnn::CudnnConv> {
    match step {
        Step::Library { inst, inputs, outputs, device, .. } if inputs.len() == 2 && outputs.len() == 1 && !device.is_empty() => {
            let ty = |b: usize| &plan.buffers[b].ty;
            crate::cudnn::cudnn_step(inst, ty(inputs[0]), ty(inputs[1]), ty(outputs[0]))
        }
        _ => None,
    }
}

/// The kernels the PTX of a CUDA plan ([`cuda_plan`]) holds, in launch
/// order: its kernel steps, and at each cuDNN step the device kernels that
/// replace it when libcudnn is absent.
pub fn ptx_kernels(cuda: &Plan) -> Vec<&pjc_plan::Kernel> {
    let mut out = vec![];
    for s in pjc_plan::control::preorder(&cuda.steps) {
        match s {
            Step::Kernel(k) => out.push(k),
            Step::Library { device, .. } if cudnn_of(cuda, s).is_some() => out.extend(device.iter()),
            _ => {}
        }
    }
    out
}

/// A library step that has neither a cuBLAS mapping nor a device kernel.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("internal error: library step '{op}' of @{plan} has no device kernel and cuBLAS does not take it")]
pub struct NoDeviceForm {
    pub plan: String,
    pub op: String,
}

/// The plan as the CUDA backend runs it: library steps cuBLAS or cuDNN takes
/// stay library steps, every other one becomes its device kernel ([`cuda_routes`]
/// decides, and refuses a step with neither).
pub fn cuda_plan(plan: &Plan) -> Result<Plan, NoDeviceForm> {
    let routes = cuda_routes(plan)?;
    // Routes are in pre-order; the blocks of control steps follow them.
    fn replace<'a>(steps: &[Step], routes: &mut impl Iterator<Item = &'a Route>) -> Vec<Step> {
        let mut out = vec![];
        for s in steps {
            match (s, routes.next()) {
                (Step::Library { device, .. }, Some(Route::DeviceKernel { .. })) => out.extend(device.iter().cloned().map(Step::Kernel)),
                (Step::Control(c), _) => {
                    let mut c = c.clone();
                    for b in c.blocks_mut() {
                        b.steps = replace(&b.steps, routes);
                    }
                    out.push(Step::Control(c));
                }
                (s, _) => out.push(s.clone()),
            }
        }
        out
    }
    let steps = replace(&plan.steps, &mut routes.iter());
    Ok(Plan { steps, ..plan.clone() })
}

/// Where one step of a plan runs on the CUDA backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// A generated kernel (the plan's own, or a library step's device kernel).
    Kernel,
    /// The device kernel of a library step (`op`) cuBLAS does not take.
    DeviceKernel { op: String },
    /// A cuBLAS call.
    Cublas(Cublas),
    /// A cuDNN convolution (its device kernels the fallback).
    Cudnn(crate::cudnn::CudnnConv),
    /// NCCL (or a device copy for a group of one).
    Collective,
    /// A loop or a switch: its blocks run on the device, driven by the host
    /// (a `while` reads its predicate back each iteration, a `switch` its
    /// index once; a `scan` reads nothing back).
    Control(&'static str),
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Route::Kernel => write!(f, "kernel"),
            Route::DeviceKernel { op } => write!(f, "kernel (device form of {op})"),
            Route::Cublas(Cublas::Skip) => write!(f, "nothing (empty result)"),
            Route::Cublas(Cublas::Zero) => write!(f, "zero fill (empty contraction)"),
            Route::Cublas(c @ Cublas::Gemm { args, calls, .. }) => {
                let t = |o: Operand| if o.trans { "T" } else { "N" };
                let times = if calls.len() > 1 { format!(" x{} calls", calls.len()) } else { String::new() };
                write!(f, "cuBLAS {} {}{} m={} n={} k={} batch={}{times}", c.routine(), t(args.a), t(args.b), args.m, args.n, args.k, args.batch)
            }
            Route::Cudnn(c) => write!(f, "{c}"),
            Route::Collective => write!(f, "NCCL"),
            Route::Control(what) => write!(f, "{what}"),
        }
    }
}

/// Where each step of `plan` (the planner's plan, before [`cuda_plan`]) runs
/// on the CUDA backend, in step order (pre-order: a control step, then the
/// steps of its blocks).
pub fn cuda_routes(plan: &Plan) -> Result<Vec<Route>, NoDeviceForm> {
    pjc_plan::control::preorder(&plan.steps)
        .into_iter()
        .map(|s| match s {
            Step::Kernel(_) => Ok(Route::Kernel),
            Step::Collective { .. } => Ok(Route::Collective),
            Step::Control(c) => Ok(Route::Control(match c {
                pjc_plan::Control::While { .. } => "while: blocks on the device, the predicate read back per iteration",
                pjc_plan::Control::Scan { .. } => "scan: blocks on the device, windows moved by offset, nothing read back",
                pjc_plan::Control::Switch { .. } => "switch: the index read back once, one branch on the device",
            })),
            Step::Library { inst, device, .. } => match cublas_of(plan, s) {
                Some(c) => Ok(Route::Cublas(c)),
                None => match cudnn_of(plan, s) {
                    Some(c) => Ok(Route::Cudnn(c)),
                    None if !device.is_empty() => Ok(Route::DeviceKernel { op: inst.op.to_string() }),
                    None => Err(NoDeviceForm { plan: plan.name.clone(), op: inst.op.to_string() }),
                },
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Column-major `C = op(A) op(B)` (what cuBLAS computes), batched.
    fn cublas_reference(g: &GemmArgs, a: &[f64], b: &[f64]) -> Vec<f64> {
        let mut c = vec![0.0; g.batch * g.stride_c.max(g.m * g.n)];
        let at = |x: &[f64], o: Operand, base: usize, r: usize, col: usize| {
            if o.trans {
                x[base + col + r * o.ld]
            } else {
                x[base + r + col * o.ld]
            }
        };
        for bi in 0..g.batch {
            for i in 0..g.m {
                for j in 0..g.n {
                    let s: f64 = (0..g.k).map(|l| at(a, g.a, bi * g.stride_a, i, l) * at(b, g.b, bi * g.stride_b, l, j)).sum();
                    c[bi * g.stride_c + i + j * g.ldc] = s;
                }
            }
        }
        c
    }

    #[test]
    fn gemm_mapping_computes_the_row_major_product() {
        use crate::gemm::strided_calls;
        // (lhs shape, rhs shape, lhs batch, rhs batch, lhs contract, rhs contract, calls)
        type Case<'a> = (&'a [usize], &'a [usize], &'a [usize], &'a [usize], &'a [usize], &'a [usize], usize);
        let cases: &[Case] = &[
            (&[2, 3], &[3, 4], &[], &[], &[1], &[0], 1),
            (&[3, 2], &[3, 4], &[], &[], &[0], &[0], 1),
            (&[2, 3], &[4, 3], &[], &[], &[1], &[1], 1),
            (&[3, 2], &[4, 3], &[], &[], &[0], &[1], 1),
            (&[5, 2, 3], &[5, 3, 4], &[0], &[0], &[2], &[1], 1),
            (&[5, 3, 2], &[5, 4, 3], &[0], &[0], &[1], &[2], 1),
            (&[3], &[3, 4], &[], &[], &[0], &[0], 1),
            (&[2, 3], &[3], &[], &[], &[1], &[0], 1),
            (&[3], &[3], &[], &[], &[0], &[0], 1),
            (&[2, 1, 3], &[2, 3, 1], &[0], &[0], &[2], &[1], 1),
            (&[4, 3], &[3], &[], &[], &[1], &[0], 1),
            // Attention scores over [batch, seq, heads, head_dim]: batch and
            // heads are not one strided dimension, so one call per batch index.
            (&[2, 5, 3, 4], &[2, 6, 3, 4], &[0, 2], &[0, 2], &[3], &[3], 2),
            // Values: [batch, heads, q, k] x [batch, k, heads, d].
            (&[2, 3, 5, 6], &[2, 6, 3, 4], &[0, 1], &[0, 2], &[3], &[1], 2),
            // Batch dims in another order on one side.
            (&[3, 2, 4, 5], &[2, 3, 5, 6], &[0, 1], &[1, 0], &[3], &[2], 3),
        ];
        for &(a, b, lb, rb, lc, rc, ncalls) in cases {
            let v = strided_calls(a, b, lb, rb, lc, rc).unwrap_or_else(|| panic!("{a:?} x {b:?}"));
            assert_eq!(v.calls.len(), ncalls, "{a:?} x {b:?}: {v:?}");
            let g = gemm_args(v.batch, v.m, v.k, v.n, v.lhs, v.rhs).unwrap_or_else(|| panic!("{a:?} x {b:?}"));
            let av: Vec<f64> = (0..a.iter().product::<usize>()).map(|i| (i as f64) * 0.5 - 1.0).collect();
            let bv: Vec<f64> = (0..b.iter().product::<usize>()).map(|i| (i as f64) * 0.25 + 2.0).collect();
            // The product from the definition (dot_general's result order).
            let l = crate::gemm::dot_layout(a, b, lb, rb, lc, rc).unwrap();
            let want = pjc_tensor::dot_general(
                &pjc_tensor::Tensor::new(a.to_vec(), pjc_tensor::Buf::F64(av.clone())),
                &pjc_tensor::Tensor::new(b.to_vec(), pjc_tensor::Buf::F64(bv.clone())),
                lb, rb, lc, rc, DType::F64,
            )
            .unwrap();
            let pjc_tensor::Buf::F64(want) = want.data else { unreachable!() };
            assert_eq!(want.len(), l.batch.iter().product::<usize>() * v.m * v.n);
            let mut got = vec![0.0; want.len()];
            for c in &v.calls {
                let r = cublas_reference(&g, &bv[c[1]..], &av[c[0]..]);
                got[c[2]..c[2] + v.batch * v.m * v.n].copy_from_slice(&r[..v.batch * v.m * v.n]);
            }
            assert_eq!(got, want, "{a:?} x {b:?}: {g:?}");
        }
        // A transposing copy is not a cuBLAS call.
        assert!(strided_calls(&[4, 3, 5], &[3, 6], &[], &[], &[1], &[0]).is_none());
    }
}
