//! The PIR text front end: [`parse`] text into a `pjc_ir::Module`, [`verify`] it
//! (filling in inferred result types), [`print_module`] it back in canonical form,
//! and [`render`] diagnostics in the spec's `FILE:LINE:COL: error: MESSAGE` format.

pub mod diag;
pub mod lexer;
pub mod parser;
pub mod printer;
pub mod verify;

pub use diag::{render, Diag};
pub use parser::parse;
pub use printer::{format_float, print_module};
pub use verify::{check_entry, verify};

/// Parses and verifies, returning the module or every diagnostic.
pub fn load(src: &str) -> Result<pjc_ir::Module, Vec<Diag>> {
    let mut m = parse(src)?;
    verify(&mut m)?;
    Ok(m)
}
