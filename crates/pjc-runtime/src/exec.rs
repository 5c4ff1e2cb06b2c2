//! Running one device's plan: JIT-compiled kernels (`pjc_codegen::JitPlan`),
//! GEMM or reference library steps, and collectives over MPI.
//!
//! `JitPlan::run_steps` treats collectives as the identity (one device), so
//! this module drives the steps itself with the JIT's public pieces (kernel
//! entry points, buffers, the thread splitter) and hands collective steps to
//! [`MpiCollectives`]. [`run_reference`] runs the same plan with the
//! interpreter's kernels (`pjc_fusion::exec::execute`), the oracle.

use crate::collectives::MpiCollectives;
use crate::RuntimeError;
use pjc_codegen::cpu::{run_kernel_threads, JitPlan};
use pjc_fusion::plan::{Plan, Step};
use pjc_ir::{DType, Opcode};
use pjc_tensor::{Scalar, Tensor};

/// Compiles the plan's kernels in-process.
pub fn compile(plan: &Plan) -> Result<JitPlan, RuntimeError> {
    JitPlan::compile(plan).map_err(|e| RuntimeError::Internal(e.to_string()))
}

/// Runs `jit`'s plan on this device's `args` with `threads` threads per kernel.
pub fn run_jit(jit: &JitPlan, args: &[Tensor], coll: &mut MpiCollectives<'_>, threads: usize) -> Result<Vec<Tensor>, RuntimeError> {
    let plan = jit.plan();
    let mut bufs = jit.buffers(args).map_err(|e| RuntimeError::Env(e.to_string()))?;
    for (si, step) in plan.steps.iter().enumerate() {
        match step {
            Step::Kernel(k) => {
                let f = jit.kernel_fn(si).ok_or_else(|| RuntimeError::Internal(format!("kernel {} was not compiled", k.name)))?;
                let ptrs: Vec<*mut u8> = k.inputs.iter().chain(&k.outputs).map(|b| bufs.data[b.buffer].as_mut_ptr()).collect();
                let work = k.reduce.as_ref().map_or(1, |r| r.shape.iter().product::<u64>());
                run_kernel_threads(f, &ptrs, k.num_elements(), work, threads);
            }
            Step::Library { inst, inputs, output } => {
                let out_ty = &plan.buffers[*output].ty;
                let out = if inst.op == Opcode::AxisIndex {
                    let axis = inst.attr("axis").and_then(|a| a.as_ident()).unwrap_or("");
                    let c = coll.coordinate(axis).ok_or_else(|| RuntimeError::Program(format!("axis_index of unknown axis '{axis}'")))?;
                    Tensor::from_scalars(DType::I32, vec![], &[Scalar::Int(c as i128)])
                } else {
                    let ins: Vec<Tensor> = inputs.iter().map(|&b| bufs.tensor(plan, b)).collect();
                    match pjc_codegen::gemm::try_dot(inst, &ins, out_ty, threads) {
                        Some(t) => t,
                        None => pjc_fusion::exec::library(inst, &ins, out_ty).map_err(|e| RuntimeError::Internal(e.to_string()))?,
                    }
                };
                bufs.data[*output].write_tensor(&out);
            }
            Step::Collective { inst, input, output } => {
                let (in_ty, out_ty) = (&plan.buffers[*input].ty, &plan.buffers[*output].ty);
                let out = coll.run_bytes(inst, bufs.data[*input].bytes(), in_ty, out_ty)?;
                let dst = bufs.data[*output].bytes_mut();
                if dst.len() != out.len() {
                    return Err(RuntimeError::Internal(format!("collective '{}' gave {} bytes for a {} buffer", inst.op, out.len(), out_ty)));
                }
                dst.copy_from_slice(&out);
            }
        }
    }
    Ok(plan.results.iter().map(|&b| bufs.tensor(plan, b)).collect())
}

/// Runs `plan` with the interpreter's kernels (no code generation).
pub fn run_reference(plan: &Plan, args: &[Tensor], coll: &mut MpiCollectives<'_>) -> Result<Vec<Tensor>, RuntimeError> {
    pjc_fusion::exec::execute(plan, args, coll).map_err(|e| RuntimeError::Internal(e.to_string()))
}
