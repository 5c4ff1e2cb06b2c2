//! How a command fails: the two kinds of failure `main` renders (and their
//! exit codes), and the one-line form of an I/O error.

/// Why a command failed; rendered once, in `main`.
pub enum Failure {
    /// The PIR program is invalid: rendered diagnostics (exit 1).
    Program(String),
    /// The environment or the inputs are wrong: one line (exit 2).
    Env(String),
}

/// An io::Error's message without Rust's " (os error N)" suffix.
pub fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
