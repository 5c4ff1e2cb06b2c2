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

/// The x86-64 passes of [`OptLevel::Loops`], for the kernels the lowering
/// builds (one function of counted loops, no calls but `alwaysinline` helpers
/// and math functions). In order: inline the helpers and drop them; scalar
/// clean-up (allocas to registers, common subexpressions, instruction
/// combining, control flow); loops rotated with their invariants hoisted and
/// their induction variables simplified; the loop vectorizer (without
/// interleaving, as [`cpu::optimize_at`] sets for the `default` pipelines); clean-up
/// of what it built; one division for a row's `udiv` and `urem`. Left out of
/// `default<O2>`: the inliner's call-graph walk, GVN, jump threading,
/// unrolling, the SLP vectorizer and their repeated clean-ups: on the kernels
/// of the step benchmarks they change neither the loops' vector code nor the
/// kernel time, and take more than half of `default<O2>`'s time (docs/cli.md,
/// "Compile time").
pub const LOOP_PIPELINE: &str = "always-inline,globaldce,function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg,\
loop-mssa(loop-rotate,licm),loop(indvars),loop-simplify,lcssa,loop-vectorize<interleave-forced-only>,\
instcombine<no-verify-fixpoint>,simplifycfg,div-rem-pairs)";

/// LLVM's optimization pipeline for the kernels (`pjc compile -O`).
///
/// Chosen by measurement (docs/cli.md, "Compile time"). The default,
/// [`OptLevel::Loops`], runs on x86-64 a short list of passes made for the
/// loops pjc generates ([`LOOP_PIPELINE`]: clean-up, loop rotation,
/// invariant hoisting, induction variables, the loop vectorizer, clean-up
/// again; no inliner beyond `alwaysinline`, no unrolling): it gives the kernel
/// time `default<O2>` gives in well under half of `default<O2>`'s optimization
/// time. `O2` gives the kernel time `O3` gives in the same compile time, while
/// `O1` leaves loops unvectorized (its kernels take 1.5x as long). NVPTX
/// takes the same time to compile at every level (its run time needs a GPU
/// to measure): `Loops` is `default<O2>` there.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum OptLevel {
    #[default]
    Loops,
    O1,
    O2,
    O3,
}

impl OptLevel {
    /// The new pass manager's pipeline for x86-64.
    pub fn host_pipeline(self) -> &'static str {
        match self {
            OptLevel::Loops => LOOP_PIPELINE,
            _ => self.ptx_pipeline(),
        }
    }

    /// The new pass manager's pipeline for NVPTX.
    pub fn ptx_pipeline(self) -> &'static str {
        match self {
            OptLevel::O1 => "default<O1>",
            OptLevel::Loops | OptLevel::O2 => "default<O2>",
            OptLevel::O3 => "default<O3>",
        }
    }

    /// What `--timings` calls it.
    pub fn describe(self) -> &'static str {
        match self {
            OptLevel::Loops => "loop passes (PTX default<O2>)",
            _ => self.ptx_pipeline(),
        }
    }

    /// `loops`, `1`, `2` or `3`.
    pub fn parse(s: &str) -> Option<OptLevel> {
        Some(match s.trim() {
            "loops" => OptLevel::Loops,
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
