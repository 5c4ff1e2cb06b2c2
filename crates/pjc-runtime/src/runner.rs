//! The entry point of every compiled executable: `model.bin supervise ...`
//! runs the elastic supervisor ([`crate::supervise`], without MPI); anything
//! else is one rank of a run ([`crate::exe::main`]).

/// `pjc-runner`'s `main`.
pub fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "supervise") {
        return crate::supervise::main(&args[1..]);
    }
    crate::exe::main()
}
