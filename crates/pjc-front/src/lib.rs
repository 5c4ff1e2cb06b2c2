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
pub use verify::{check, check_entry, verify};

/// Parses and verifies, returning the module or every diagnostic.
pub fn load(src: &str) -> Result<pjc_ir::Module, Vec<Diag>> {
    let mut m = parse(src)?;
    verify(&mut m)?;
    Ok(m)
}

/// `--mesh data=8,model=1`: new sizes for the module's mesh axes (same names, same
/// order), applied before verification. The error is one line for the user.
pub fn override_mesh(m: &mut pjc_ir::Module, spec: &str) -> Result<(), String> {
    let mut given = vec![];
    for part in spec.split(',') {
        let parsed = part.split_once('=').and_then(|(a, n)| Some((a.trim(), n.trim().parse::<u64>().ok()?)));
        match parsed {
            Some((a, n)) if n > 0 && !a.is_empty() => given.push((a.to_string(), n)),
            _ => return Err(format!("--mesh '{spec}': expected AXIS=SIZE,... with positive sizes")),
        }
    }
    let have: Vec<String> = m.mesh.iter().flat_map(|x| x.axes.iter().map(|a| a.name.clone())).collect();
    let names: Vec<String> = given.iter().map(|g| g.0.clone()).collect();
    if names != have {
        return Err(format!(
            "--mesh names axes [{}], but the module's mesh has [{}] (--mesh changes sizes only: same names, same order)",
            names.join(", "),
            have.join(", ")
        ));
    }
    if let Some(mesh) = &mut m.mesh {
        for (a, (_, n)) in mesh.axes.iter_mut().zip(given) {
            a.size = n;
        }
    }
    Ok(())
}
