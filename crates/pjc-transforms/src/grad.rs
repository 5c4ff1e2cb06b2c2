//! Reverse-mode differentiation (JAX `value_and_grad`): not implemented yet.
use crate::TransformError;
use pjc_ir::{FuncId, Function, InstData, Module};

/// Builds the function computing `@f`'s value and its gradients with respect to
/// the operands listed in `inst`'s `wrt`.
pub fn generate(m: &Module, f: FuncId, inst: &InstData) -> Result<Function, TransformError> {
    let _ = (m, f);
    Err(TransformError { span: inst.span, msg: "unsupported: grad is not implemented yet".into() })
}
