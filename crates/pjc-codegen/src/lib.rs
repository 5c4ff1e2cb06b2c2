//! LLVM code generation for pjc's loop kernels ([`pjc_plan::Kernel`]).
//!
//! - [`lower`]: one kernel body → LLVM IR with the exact semantics of spec
//!   section 11, shared by both targets through the small [`lower::Target`] trait.
//! - [`cpu`]: x86-64 (`x86-64-v3`, O3): `void k(i8** bufs, i64 begin, i64 end)`
//!   per kernel, a JIT ([`cpu::JitPlan`], [`execute_plan_jit`]), textual IR
//!   ([`emit_llvm`]) and object code.
//! - [`program`]: a whole plan for an executable: each distinct kernel body
//!   once per target, on all cores, through the compile [`cache`].
//! - [`ptx`]: NVPTX (`sm_80`, `sm_90`): one `.entry` per kernel, grid-stride
//!   elementwise loops, block-per-output reductions with warp shuffles, libdevice
//!   for math ([`emit_ptx`]).
//! Running plans on the host (buffers, threads, GEMM) lives in `pjc-host`.

pub mod cache;
pub mod cpu;
pub mod lower;
pub mod pieces;
pub mod program;
pub mod ptx;

pub use cache::Cache;
pub use cpu::{emit_llvm, execute_plan_jit, JitPlan};
pub use program::{build, compile_ptx, emit_ptx, Built, Options, Target, TargetStats};
pub use ptx::{PtxKernel, PtxModule};

/// LLVM's optimization pipeline for the kernels (`pjc compile -O`).
///
/// Chosen by measurement (docs/cli.md, "Compile time"): on the kernels
/// pjc generates for x86-64 — elementwise loops, row and column reductions —
/// `O2` gives the kernel time `O3` gives (ResNet-50's training step) in the
/// same compile time, while `O1` compiles about 40 % faster but leaves loops
/// unvectorized (its kernels take 1.5x as long). NVPTX takes the same time
/// to compile at every level (its run time needs a GPU to measure). The
/// default is `O2`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum OptLevel {
    O1,
    #[default]
    O2,
    O3,
}

impl OptLevel {
    /// The new pass manager's pipeline.
    pub fn pipeline(self) -> &'static str {
        match self {
            OptLevel::O1 => "default<O1>",
            OptLevel::O2 => "default<O2>",
            OptLevel::O3 => "default<O3>",
        }
    }

    /// `1`, `2` or `3`.
    pub fn parse(s: &str) -> Option<OptLevel> {
        Some(match s.trim() {
            "1" => OptLevel::O1,
            "2" => OptLevel::O2,
            "3" => OptLevel::O3,
            _ => return None,
        })
    }
}

/// Code generation failures.
#[derive(Debug, Clone, PartialEq)]
pub enum CodegenError {
    /// LLVM rejected something (a bug in pjc, reported rather than panicking).
    Llvm(String),
    /// Something missing from the environment (libdevice, ...).
    Environment(String),
    /// Bad arguments (wrong number or type of inputs, unknown GPU architecture).
    Input(String),
    /// A library step failed at run time.
    Runtime(String),
}

impl std::fmt::Display for CodegenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CodegenError::Llvm(m) => write!(f, "code generation: {m}"),
            CodegenError::Environment(m) | CodegenError::Input(m) | CodegenError::Runtime(m) => {
                f.write_str(m)
            }
        }
    }
}

impl std::error::Error for CodegenError {}
