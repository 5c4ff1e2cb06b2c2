//! Batching (JAX `vmap`): not implemented as a transform yet (the interpreter
//! evaluates `vmap` directly).
use crate::TransformError;
use pjc_ir::{FuncId, Function, InstData, Module};

/// Builds the function that maps `@f` over a new dimension as `inst`'s
/// `in_dims`/`out_dims` say.
pub fn generate(m: &Module, f: FuncId, inst: &InstData) -> Result<Function, TransformError> {
    let _ = (m, f);
    Err(TransformError { span: inst.span, msg: "unsupported: vmap is not expanded by the compiler yet".into() })
}
