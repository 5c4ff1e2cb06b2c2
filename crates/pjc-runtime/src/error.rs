//! The runtime's one error type, [`RuntimeError`] (its variants are the exit
//! codes of spec section 10), and how an I/O failure reads in a message.

/// Why a run failed, and its exit code (spec section 10).
#[derive(Clone, Debug)]
pub enum RuntimeError {
    /// The PIR program is invalid: rendered diagnostics (exit 1).
    Program(String),
    /// The environment or the inputs (exit 2).
    Env(String),
    /// A bug in pjc, reported rather than panicking (exit 2).
    Internal(String),
    /// Another rank failed first; it reports the error (exit with its code).
    Elsewhere { rank: usize, code: i32 },
    /// A failure during execution, when other ranks may be waiting inside a
    /// collective: the job must be aborted rather than finalized.
    Fatal(Box<RuntimeError>),
}

impl RuntimeError {
    pub fn exit_code(&self) -> i32 {
        match self {
            RuntimeError::Program(_) => 1,
            RuntimeError::Env(_) | RuntimeError::Internal(_) => 2,
            RuntimeError::Elsewhere { code, .. } => *code,
            RuntimeError::Fatal(e) => e.exit_code(),
        }
    }
}

impl std::fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuntimeError::Program(m) | RuntimeError::Env(m) => f.write_str(m),
            RuntimeError::Internal(m) => write!(f, "internal error: {m}"),
            RuntimeError::Elsewhere { rank, .. } => write!(f, "rank {rank} failed"),
            RuntimeError::Fatal(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for RuntimeError {}

/// An io::Error's message without Rust's " (os error N)" suffix.
pub(crate) fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
