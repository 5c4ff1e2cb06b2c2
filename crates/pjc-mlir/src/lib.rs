//! PIR to MLIR in upstream dialects (`func`, `arith`, `math`, `tensor`, `linalg`,
//! `shard`) and back, through melior and the system MLIR 22 (docs/mlir.md).
//!
//! [`emit`] writes the MLIR text of a module; [`to_mlir`] parses it with melior
//! into a context with every upstream dialect, runs MLIR's verifier on it and
//! prints it back (so what pjc prints is what MLIR itself accepted and printed).
//! [`import`] reads the same subset back into PIR text.

pub mod emit;
pub mod import;

pub use emit::View;
use melior::ir::operation::OperationLike;
use melior::ir::Module as MlirModule;
use melior::{dialect::DialectRegistry, utility::register_all_dialects, Context};

/// A context with every upstream dialect loaded.
pub fn context() -> Context {
    let registry = DialectRegistry::new();
    register_all_dialects(&registry);
    let context = Context::new();
    context.append_dialect_registry(&registry);
    context.load_all_available_dialects();
    context
}

/// Parses MLIR text and verifies it; the diagnostic MLIR printed is returned on failure.
pub fn parse_verified<'c>(context: &'c Context, text: &str) -> Result<MlirModule<'c>, String> {
    let diags = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = diags.clone();
    let id = context.attach_diagnostic_handler(move |d| {
        sink.lock()
            .expect("diagnostics")
            .push(format!("{}: {}", d.location(), d));
        true
    });
    let module = MlirModule::parse(context, text);
    let ok = module.as_ref().is_some_and(|m| m.as_operation().verify());
    context.detach_diagnostic_handler(id);
    let msg = diags.lock().expect("diagnostics").join("; ");
    match module {
        Some(m) if ok => Ok(m),
        _ => Err(if msg.is_empty() {
            "MLIR rejected the module".to_string()
        } else {
            msg
        }),
    }
}

/// The module as verified MLIR text in the given view. `sharded` is the module
/// with every value's propagated sharding (global view).
pub fn to_mlir(
    m: &pjc_ir::Module,
    sharded: Option<&pjc_ir::Module>,
    view: View,
) -> Result<String, String> {
    let text = emit::module_text(m, sharded, view);
    if let Some(path) = std::env::var_os("PJC_MLIR_DUMP") {
        // For working on the emitter: the text before MLIR parses it.
        let _ = std::fs::write(path, &text);
    }
    let context = context();
    let module = parse_verified(&context, &text)
        .map_err(|e| format!("internal error: the MLIR pjc built does not verify: {e}"))?;
    Ok(format!("{}\n", module.as_operation()))
}
