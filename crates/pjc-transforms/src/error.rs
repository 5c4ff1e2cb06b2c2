//! The crate's one error type, at the bottom of the crate so that the
//! generators (`grad/`, `vmap/`) and [`crate::expand`], which calls them, share it.

use pjc_ir::{Function, Span};

/// A program the transforms cannot expand (e.g. `grad` through an op with no
/// gradient rule). Points at the transform instruction in the caller.
#[derive(Clone, Debug, PartialEq)]
pub struct TransformError {
    pub span: Span,
    pub msg: String,
}

/// The one function a transform generated (`grad::generate`,
/// `vmap::generate`), or an error naming the helpers it also made, which only
/// the `generate_all` forms hand back.
pub(crate) fn only_function(
    mut fs: Vec<Function>,
    span: Span,
    what: &str,
    of: &str,
) -> Result<Function, TransformError> {
    if fs.len() > 1 {
        let names: Vec<String> = fs[1..].iter().map(|h| format!("@{}", h.name)).collect();
        return Err(TransformError {
            span,
            msg: format!(
                "{what} of @{of} needs helper functions ({}): use {what}::generate_all",
                names.join(", ")
            ),
        });
    }
    Ok(fs.remove(0))
}
