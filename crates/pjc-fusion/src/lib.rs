//! Fusion and scheduling: from a per-device function to an explicit, printable
//! kernel plan ([`plan::plan`]) — loop kernels described by [`kernel::Kernel`],
//! library calls and collectives — and its buffer plan
//! ([`memory::plan_memory`]). Code generators consume the kernels; the runtime
//! executes the plan.

pub mod exec;
pub mod kernel;
pub mod memory;
pub mod plan;

pub use kernel::{Kernel, Node};
pub use memory::{plan_memory, Memory};
pub use plan::{plan, Buffer, BufferKind, Plan, PlanError, Step};
