//! The crate's one error type, at the bottom of the crate so that the
//! generators (`grad/`, `vmap/`) and [`crate::expand`], which calls them, share it.

use pjc_ir::Span;

/// A program the transforms cannot expand (e.g. `grad` through an op with no
/// gradient rule). Points at the transform instruction in the caller.
#[derive(Clone, Debug, PartialEq)]
pub struct TransformError {
    pub span: Span,
    pub msg: String,
}
