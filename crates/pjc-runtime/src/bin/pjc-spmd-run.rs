//! `pjc-spmd-run FILE.pir [--mesh A=N,...] [--entry NAME] [--input NAME=PATH]...
//! [--inputs FILE.safetensors]... [--output PATH] [--reference]`
//!
//! Runs a PIR program's entry on the process world, one process per mesh
//! device: `mpirun -np N pjc-spmd-run prog.pir --inputs in.safetensors
//! --output out.safetensors`. Every rank expands transforms, partitions and
//! plans the program, JIT-compiles the per-device kernels, reads the global
//! inputs and keeps its shard; rank 0 gathers and writes the global outputs.
//! The runtime core of the future `pjc compile -o` executables.

use clap::Parser;
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "pjc-spmd-run", about = "Run a PIR program on MPI ranks, one per mesh device")]
struct Args {
    file: PathBuf,
    /// Replace the mesh axis sizes, e.g. data=8,model=1 (same names, same order).
    #[arg(long, value_name = "A=N,...")]
    mesh: Option<String>,
    /// Entry function.
    #[arg(long, default_value = "main")]
    entry: String,
    /// A parameter's value: NAME=PATH (.npy or .safetensors). Repeatable.
    #[arg(long = "input", value_name = "NAME=PATH")]
    input: Vec<String>,
    /// A safetensors file whose tensors are matched to parameters by name.
    #[arg(long = "inputs", value_name = "PATH.safetensors")]
    inputs: Vec<PathBuf>,
    /// Where rank 0 writes the results (.safetensors, or a directory of NAME.npy).
    #[arg(long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// Use the interpreter's kernels instead of JIT-compiled ones.
    #[arg(long)]
    reference: bool,
}

fn main() -> std::process::ExitCode {
    let a = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return std::process::ExitCode::from(code);
        }
    };
    let opts = pjc_runtime::Options {
        file: a.file,
        entry: a.entry,
        mesh: a.mesh,
        input: a.input,
        inputs: a.inputs,
        output: a.output,
        reference: a.reference,
    };
    pjc_runtime::main_with(&opts)
}
