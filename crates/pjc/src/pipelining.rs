//! `--pipeline AXIS --microbatches M [--schedule gpipe|1f1b]` (compile and
//! explain): the flags, and `pjc explain`'s section on the schedule. The
//! rewrite itself is `pjc_transforms::pipeline`, run in stage `expand`
//! (`pipeline.rs`); this module only turns flags into its options.

use crate::failure::Failure;

/// The pipeline's flags (docs/training.md, docs/cli.md).
#[derive(clap::Args, Clone, Default)]
pub struct PipelineArgs {
    /// Pipeline parallelism: a scan over stacked layer parameters whose
    /// dimension 0 is split over AXIS (on [AXIS, ...]) runs as a pipeline,
    /// each position along AXIS holding its own layers.
    #[arg(long, value_name = "AXIS")]
    pipeline: Option<String>,
    /// With --pipeline: micro-batches per step (the batch, dimension 0 of the
    /// activations, cut into M equal parts).
    #[arg(long, value_name = "M")]
    microbatches: Option<u64>,
    /// With --pipeline: the schedule, gpipe (default) or 1f1b (training
    /// steps; fewer micro-batches' activations held per stage).
    #[arg(long, value_enum, value_name = "KIND")]
    schedule: Option<ScheduleArg>,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug, clap::ValueEnum)]
enum ScheduleArg {
    Gpipe,
    #[value(name = "1f1b")]
    OneFOneB,
}

impl PipelineArgs {
    pub fn get(&self) -> Result<Option<pjc_transforms::Pipeline>, Failure> {
        match (&self.pipeline, self.microbatches) {
            (None, None) if self.schedule.is_none() => Ok(None),
            (None, _) => Err(Failure::Env("--microbatches and --schedule apply with --pipeline AXIS".into())),
            (Some(a), None) => Err(Failure::Env(format!("--pipeline {a} needs --microbatches M (the micro-batches per step)"))),
            (Some(a), Some(m)) => Ok(Some(pjc_transforms::Pipeline {
                axis: a.clone(),
                microbatches: m,
                schedule: match self.schedule.unwrap_or(ScheduleArg::Gpipe) {
                    ScheduleArg::Gpipe => pjc_transforms::pipeline::Schedule::GPipe,
                    ScheduleArg::OneFOneB => pjc_transforms::pipeline::Schedule::OneFOneB,
                },
            })),
        }
    }
}

/// `pjc explain`'s pipeline section: one block per pipelined scan.
pub fn explain(done: &[pjc_transforms::Pipelined]) -> String {
    done.iter().map(pjc_transforms::pipeline::explain).collect()
}
