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
use pjc_codegen::cpu::JitPlan;
use pjc_fusion::plan::Plan;
use pjc_tensor::Tensor;

/// Compiles the plan's kernels in-process.
pub fn compile(plan: &Plan) -> Result<JitPlan, RuntimeError> {
    JitPlan::compile(plan).map_err(|e| RuntimeError::Internal(e.to_string()))
}

/// Runs `jit`'s plan on this device's `args` with `threads` threads per kernel.
pub fn run_jit(jit: &JitPlan, args: &[Tensor], coll: &mut MpiCollectives<'_>, threads: usize) -> Result<Vec<Tensor>, RuntimeError> {
    let plan = jit.plan();
    let mut bufs = pjc_host::Buffers::new(plan, args).map_err(|e| RuntimeError::Env(e.to_string()))?;
    pjc_host::run_steps(plan, jit.kernel_fns(), &mut bufs, threads, coll).map_err(|e| RuntimeError::Internal(e.to_string()))?;
    Ok(bufs.results(plan))
}

/// Runs `plan` with the interpreter's kernels (no code generation).
pub fn run_reference(plan: &Plan, args: &[Tensor], coll: &mut MpiCollectives<'_>) -> Result<Vec<Tensor>, RuntimeError> {
    pjc_fusion::exec::execute(plan, args, coll).map_err(|e| RuntimeError::Internal(e.to_string()))
}
