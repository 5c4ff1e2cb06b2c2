//! A device backend: where one device's plan runs. The executable's main
//! ([`crate::exe`]) talks to the device only through [`Backend`], so buffers
//! can stay on the device between the steps of a training loop (host↔device
//! copies happen at the boundaries: parameters in, results out).
//!
//! - [`crate::cpu::CpuBackend`]: host buffers, kernels from the executable's
//!   shared object, GEMM, MPI collectives.
//! - [`crate::cuda::CudaBackend`]: device buffers, the embedded PTX, cuBLAS,
//!   NCCL collectives on the compute stream.
//!
//! [`DeviceChoice`] names the kinds; it lives here, below everything that
//! picks or reports one (`exe.rs`, `memory.rs`, `devices.rs`).

use crate::RuntimeError;
use pjc_tensor::Tensor;

/// A device kind: `--device` as given (`auto` lets [`crate::exe`] pick), and
/// the kind every rank then runs on (`cpu` or `cuda`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceChoice {
    #[default]
    Auto,
    Cpu,
    Cuda,
}

/// One device's executor of one plan.
pub trait Backend {
    /// `"cpu"` or `"cuda"`.
    fn name(&self) -> &'static str;
    /// Sets parameter `i` to this device's shard `t` (host → device). `t` has
    /// the plan's parameter type (`exe.rs` checked it).
    fn set_param(&mut self, i: usize, t: &Tensor) -> Result<(), RuntimeError>;
    /// Runs every step of the plan once: kernels, library calls, collectives.
    /// A failure here may leave other ranks inside a collective: `exe.rs`
    /// aborts the job.
    fn run(&mut self) -> Result<(), RuntimeError>;
    /// Result `k` of the last run, copied to the host.
    fn result(&mut self, k: usize) -> Result<Tensor, RuntimeError>;
    /// Loop mode: for each `(k, i)`, result `k` of the last run becomes
    /// parameter `i` for the next run. Every result is read before any
    /// parameter is written (a result may live in a parameter's buffer), and
    /// the data stays on the device.
    fn carry(&mut self, pairs: &[(usize, usize)]) -> Result<(), RuntimeError>;
    /// Records the steps of every `run` for `--trace` (off by default).
    fn set_tracing(&mut self, _on: bool) {}
    /// The events recorded since the last call.
    fn take_trace(&mut self) -> Vec<crate::trace::Event> {
        vec![]
    }
}
