//! Fusion and scheduling: from a per-device function to an explicit, printable
//! kernel plan ([`plan::plan`], building `pjc_plan::Plan`s) — loop kernels,
//! library calls and collectives — and its buffer plan
//! ([`memory::plan_memory`]). The plan's data types live in `pjc-plan`, which
//! code generators and the runtime read without linking this planner.

pub mod memcheck;
pub mod memory;
pub mod plan;
pub mod schedule;

pub use memcheck::check_memory;
pub use memory::{liveness, peak_live, plan_memory, Liveness};
pub use pjc_plan::PeakLive;
pub use plan::{plan, plan_program, PlanError, Unplannable, MAX_FUSION_DEPTH};
