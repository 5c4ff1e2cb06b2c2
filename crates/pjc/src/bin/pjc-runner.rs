//! `pjc-runner`: the runtime that `pjc compile -o OUT` copies into every
//! executable, followed by the compiled program (see pjc_runtime::payload).
//! Run bare, it says that it carries no program.

fn main() -> std::process::ExitCode {
    pjc_runtime::runner::main()
}
