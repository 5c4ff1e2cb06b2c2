//! Clean-up after expansion (dead code, trivial arithmetic): nothing to do until
//! the transforms generate code.
use pjc_ir::Module;

/// Simplifies every function of the module in place.
pub fn run(m: &mut Module) {
    let _ = m;
}
