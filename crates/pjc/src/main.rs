//! `pjc`: the command-line driver. Parses flags (clap), runs the stages, and is
//! the one place where errors are rendered and turned into exit codes (spec
//! section 10): 0 success, 1 the PIR program is invalid, 2 anything about the
//! environment or the inputs.

mod eval;

use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "pjc", version, about = "Ahead-of-time compiler for PIR distributed array programs")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Parse and verify a PIR file; print nothing on success.
    Check {
        file: PathBuf,
        /// Entry function (default: main).
        #[arg(long, default_value = "main")]
        entry: String,
    },
    /// Print the canonical text of a PIR file.
    Fmt { file: PathBuf },
    /// Run the entry function in the reference interpreter.
    Eval {
        file: PathBuf,
        /// A parameter's value: NAME=PATH (.npy or .safetensors holding NAME). Repeatable.
        #[arg(long = "input", value_name = "NAME=PATH")]
        input: Vec<String>,
        /// A safetensors file whose tensors are matched to parameters by name.
        #[arg(long = "inputs", value_name = "PATH.safetensors")]
        inputs: Vec<PathBuf>,
        /// Where to write the results: a .safetensors file, or a directory of NAME.npy.
        #[arg(long, value_name = "PATH")]
        output: PathBuf,
        /// Entry function (default: main).
        #[arg(long, default_value = "main")]
        entry: String,
    },
}

/// Why a command failed; rendered once, in `main`.
pub enum Failure {
    /// The PIR program is invalid: rendered diagnostics (exit 1).
    Program(String),
    /// The environment or the inputs are wrong: one line (exit 2).
    Env(String),
}

fn read_source(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|e| {
        Failure::Env(format!("cannot read '{}': {}", path.display(), io_reason(&e)))
    })
}

/// An io::Error's message without Rust's " (os error N)" suffix.
pub fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Reads, parses and verifies a PIR file, and checks that `entry` exists.
pub fn load(path: &Path, entry: Option<&str>) -> Result<(pjc_ir::Module, pjc_ir::FuncId), Failure> {
    let src = read_source(path)?;
    let name = path.display().to_string();
    let m = pjc_front::load(&src).map_err(|d| Failure::Program(pjc_front::render(&name, &src, &d)))?;
    let entry = entry.unwrap_or("main");
    let id = pjc_front::check_entry(&m, entry).map_err(|d| Failure::Program(pjc_front::render(&name, &src, &[d])))?;
    Ok((m, id))
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.cmd {
        Cmd::Check { file, entry } => {
            load(&file, Some(&entry))?;
            Ok(())
        }
        Cmd::Fmt { file } => {
            let src = read_source(&file)?;
            let name = file.display().to_string();
            let m = pjc_front::load(&src).map_err(|d| Failure::Program(pjc_front::render(&name, &src, &d)))?;
            print!("{}", pjc_front::print_module(&m));
            Ok(())
        }
        Cmd::Eval { file, input, inputs, output, entry } => eval::run(&file, &entry, &input, &inputs, &output),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Program(text)) => {
            eprint!("{text}");
            ExitCode::from(1)
        }
        Err(Failure::Env(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}
