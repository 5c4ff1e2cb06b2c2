//! What the compiler hands to code generation and to the runtime: the kernel
//! description both code generators lower ([`kernel::Kernel`]), the plan of a
//! per-device function ([`plan::Plan`]: buffers and steps; control flow's
//! blocks and their one meaning in [`control`]), its buffer plan
//! ([`memory::Memory`]), the compiled artefact an executable carries
//! ([`artifact::Artifact`], versioned and hashed), and the reference executor
//! of a plan with the interpreter's kernels ([`exec`], the oracle for
//! generated code), and a cost model of a plan ([`cost`]: operations,
//! bytes and collective time per run, for `pjc explain`'s
//! communication/compute ratio).
//!
//! This crate holds data and its one reference meaning; deciding what the
//! plan is (fusion, buffer placement) is `pjc-fusion`'s job. The runtime
//! depends on this crate and not on the planner or the front end.

pub mod artifact;
pub mod control;
pub mod cost;
pub mod exec;
pub mod kernel;
pub mod memory;
pub mod plan;

pub use artifact::{Artifact, ArtifactError, CpuLevel, GroupTable, HostKernels, Port, PtxKernel, PtxModule};
pub use kernel::{Kernel, Node};
pub use memory::{Memory, PeakLive};
pub use control::{Block, Control};
pub use plan::{Buffer, BufferKind, Plan, Step};
