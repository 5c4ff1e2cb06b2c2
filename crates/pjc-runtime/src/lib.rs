//! The runtime of pjc's compiled executables: one process per mesh device
//! (rank r is device r, row-major over the mesh axes), MPI (OpenMPI through
//! rsmpi) to start and for the CPU collectives, the per-device plan run by a
//! device backend. No compiler is linked in: kernels come precompiled in the
//! executable (a shared object for the host, PTX for GPUs).
//!
//! - [`world`]: MPI start-up ([`World`]), rank/size, the process-count check,
//!   [`world::agree`] (every rank takes the same path after a phase).
//! - [`groups`]: device groups and shard blocks as pure functions of the mesh.
//! - [`collectives`]: one communicator per group of every axis list a plan
//!   uses, built up front; the five collectives and `axis_index`
//!   ([`MpiCollectives`], also a `pjc_plan::exec::Collectives`), with
//!   fixed-order (bitwise reproducible) reductions.
//! - [`memory`]: the host memory a program implies, checked before allocating.
//! - [`pack`]: byte packing for non-leading dimensions and shard blocks.
//! - [`payload`]: the program a compiled executable carries after the runner.
//! - [`shardio`]: memory-mapped inputs, read shard by shard.
//! - [`backend`]: the device interface; [`cpu`] (host kernels from the
//!   executable's shared object, MPI) and [`cuda`] (PTX, cuBLAS, NCCL).
//! - [`results`]: a result assembled from every device's shard; writing them.
//! - [`trace`]: `--trace` files; [`summary`]: their measured
//!   communication/compute ratio per rank.
//! - [`exe`]: one rank's `main` (flags, device choice, loop mode, logging);
//!   [`supervise`]: `model.bin supervise`, elastic training (relaunch on
//!   the processes that remain); [`runner`]: the entry point choosing one.
//! - [`RuntimeError`] (`error.rs`): why a run failed, and its exit code.

pub mod backend;
pub mod checkpoint;
pub mod collectives;
pub mod cpu;
pub mod cuda;
pub mod devices;
mod error;
pub mod exe;
pub mod groups;
pub mod memory;
pub mod pack;
pub mod payload;
pub mod results;
pub mod runner;
pub mod shardio;
pub mod summary;
pub mod supervise;
pub mod trace;
pub mod world;

pub use collectives::MpiCollectives;
pub use error::RuntimeError;
pub use world::World;

/// Runs `job` on a fresh [`World`] and turns the outcome into an exit code,
/// printing errors once (by the rank that failed first; `error: rank R: ...`
/// when that is not rank 0). Never panics on bad inputs or environments.
pub fn main_with(job: impl FnOnce(&World) -> Result<(), RuntimeError>) -> std::process::ExitCode {
    let world = match World::init() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let rank = world.rank();
    let report = |e: &RuntimeError| {
        let prefix = if rank == 0 { String::new() } else { format!("rank {rank}: ") };
        match e {
            RuntimeError::Program(text) => eprint!("{text}"),
            RuntimeError::Elsewhere { .. } => {}
            other => eprintln!("error: {prefix}{other}"),
        }
    };
    match job(&world) {
        Ok(()) => {
            drop(world);
            std::process::ExitCode::SUCCESS
        }
        Err(RuntimeError::Fatal(e)) => {
            report(&e);
            if world.size() > 1 {
                world.abort(e.exit_code());
            }
            std::process::ExitCode::from(e.exit_code() as u8)
        }
        Err(e) => {
            report(&e);
            let code = e.exit_code();
            drop(world);
            std::process::ExitCode::from(code as u8)
        }
    }
}
