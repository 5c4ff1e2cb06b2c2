//! The compilation pipeline: every stage of pjc, in order, in this one file.
//!
//! | stage | what | why here |
//! |---|---|---|
//! | load | read, parse, `--mesh` override, verify, find the entry | every later stage assumes a verified module: types inferred, attributes canonical |
//! | expand | `grad`/`vmap` into ordinary PIR (`pjc-transforms`); first `--pipeline` (a scan over stacked layers as a per-stage `spmd func`) and `--accumulate` | before sharding, so propagation and partitioning see only ordinary ops (spec section 9); the rewrites before `grad`, whose expansion then differentiates them (GPipe's backward, the micro-batches' sums) |
//! | auto-shard | with `--auto-shard`: shardings for the unannotated entry values chosen by a cost model and an ILP (`pjc-autoshard`), written as annotations | after expansion, so gradients and their updates are priced; before propagation, which then runs unchanged from the annotations (the stage only adds annotations) |
//! | propagate | a sharding for every value (`pjc-sharding`), kept as a side table | after expansion, so gradients get shardings like any value; before partitioning, which needs every value's target |
//! | partition | the per-device `spmd func` with its collectives (`pjc-partition`), then sum all-reduces of accumulating loop carries moved after their loop (`hoist.rs`) | needs every value's target sharding; the motion needs the all-reduces the partitioner inserts, and runs before combining, whose concatenations would hide the pattern and which then merges the moved ones |
//! | per-device | inline `spmd func` calls, combine all-reduces: the entry, then each body of its control flow, one function each | after partitioning (only then do spmd calls exist); before planning, which plans the entry with its bodies |
//! | plan | fusion into loop kernels, library calls, collectives; buffer plan (`pjc-fusion`) | needs the whole per-device program |
//! | codegen | x86-64 object code and PTX of the plan's kernels (`pjc-codegen`) | lowers exactly the plan's kernels |
//! | package | the artefact appended to the runner (`exe.rs`) | needs everything above |
//!
//! Every `--emit` form and `pjc explain` read the stage they show from one
//! [`Compilation`] that ran the stages before it once. Between stages the
//! module is checked with `pjc_front::check` (which changes nothing) when
//! [`verify_between_stages`] says so: always in debug builds (so in every
//! test) and when `PJC_VERIFY=1`; a failed check is an internal error naming
//! the stage whose output it is.
//!
//! Errors are typed per stage and carry a location: a program error is a
//! diagnostic at its span (exit 1); what a stage cannot handle is
//! `FILE:LINE:COL: error: unsupported: ...` at the instruction (or, without
//! a source span, the function and value) (exit 1, docs/cli.md); the
//! environment is one `error:` line (exit 2).

use crate::failure::{io_reason, Failure};
use pjc_ir::{FuncId, Module};
use std::path::Path;

/// The stages, in order (see the module doc for why each is where it is).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    Load,
    Expand,
    AutoShard,
    Propagate,
    Partition,
    PerDevice,
    Plan,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Load => "load",
            Stage::Expand => "expand (grad/vmap)",
            Stage::AutoShard => "auto-sharding",
            Stage::Propagate => "sharding propagation",
            Stage::Partition => "SPMD partitioning",
            Stage::PerDevice => "inlining and all-reduce combining",
            Stage::Plan => "kernel planning",
        }
    }
}

/// Whether modules are checked between stages: in debug builds, or when
/// `PJC_VERIFY` is set to anything but `0`.
pub fn verify_between_stages() -> bool {
    cfg!(debug_assertions) || std::env::var_os("PJC_VERIFY").is_some_and(|v| v != "0")
}

/// What the stages produced so far.
pub struct Compilation {
    /// The source file, for rendering diagnostics.
    pub path: String,
    pub src: String,
    /// After `load`: the verified module; after `expand`: without transforms.
    pub module: Module,
    pub entry: FuncId,
    pub reached: Stage,
    pub propagation: Option<pjc_sharding::Propagation>,
    /// `--auto-shard`: what the stage is given, and what it decided.
    pub auto_shard: Option<pjc_autoshard::Options>,
    pub auto_report: Option<pjc_autoshard::Report>,
    pub partitioned: Option<pjc_partition::Partitioned>,
    /// The entry's per-device program in a module with the mesh: the entry
    /// first, then the bodies its control flow names.
    pub per_device: Option<Module>,
    pub plan: Option<pjc_plan::Plan>,
    /// How long each stage that ran took, in order (`pjc compile --timings`).
    pub timings: Vec<(&'static str, std::time::Duration)>,
    /// `--accumulate K`: the step's micro-batch form, made before `expand`.
    pub accumulate: Option<pjc_transforms::Accumulate>,
    /// `--pipeline AXIS`: the scans made pipelines before `expand`, and what
    /// `explain` says about them.
    pub pipeline: Option<pjc_transforms::Pipeline>,
    pub pipelined: Vec<pjc_transforms::Pipelined>,
}

impl Compilation {
    /// Stage `load`: read, parse, apply `--mesh`, verify, check the entry.
    pub fn load(path: &Path, entry: &str, mesh: Option<&str>) -> Result<Compilation, Failure> {
        let t0 = std::time::Instant::now();
        let src = std::fs::read_to_string(path).map_err(|e| Failure::Env(format!("cannot read '{}': {}", path.display(), io_reason(&e))))?;
        let name = path.display().to_string();
        let program = |d: Vec<pjc_front::Diag>| Failure::Program(pjc_front::render(&name, &src, &d));
        let mut m = pjc_front::parse(&src).map_err(program)?;
        if let Some(spec) = mesh {
            pjc_front::override_mesh(&mut m, spec).map_err(Failure::Env)?;
        }
        pjc_front::verify(&mut m).map_err(program)?;
        let id = pjc_front::check_entry(&m, entry).map_err(|d| program(vec![d]))?;
        Ok(Compilation {
            path: name,
            src,
            module: m,
            entry: id,
            reached: Stage::Load,
            propagation: None,
            auto_shard: None,
            auto_report: None,
            partitioned: None,
            per_device: None,
            plan: None,
            timings: vec![(Stage::Load.name(), t0.elapsed())],
            accumulate: None,
            pipeline: None,
            pipelined: vec![],
        })
    }

    /// Runs the stages after the one reached, up to and including `stage`.
    pub fn run_to(&mut self, stage: Stage) -> Result<&mut Compilation, Failure> {
        while self.reached < stage {
            let t0 = std::time::Instant::now();
            match self.reached {
                Stage::Load => self.expand()?,
                Stage::Expand => self.auto_shard()?,
                Stage::AutoShard => self.propagate()?,
                Stage::Propagate => self.partition()?,
                Stage::Partition => self.per_device()?,
                Stage::PerDevice => self.plan()?,
                Stage::Plan => unreachable!("the last stage"),
            }
            // Each stage sets `reached` to itself.
            self.timings.push((self.reached.name(), t0.elapsed()));
        }
        Ok(self)
    }

    /// Loads `path` and runs the stages up to `stage`, with `--accumulate`
    /// (applied in stage `expand`) when given.
    pub fn run_with(path: &Path, entry: &str, mesh: Option<&str>, accumulate: Option<pjc_transforms::Accumulate>, stage: Stage) -> Result<Compilation, Failure> {
        let mut c = Compilation::load(path, entry, mesh)?;
        c.accumulate = accumulate;
        c.run_to(stage)?;
        Ok(c)
    }

    fn render(&self, span: pjc_ir::Span, msg: String) -> String {
        pjc_front::render(&self.path, &self.src, &[pjc_front::Diag::new(span, msg)])
    }

    /// The check between stages: `m` is the output of `stage`.
    fn checked(stage: Stage, m: &Module) -> Result<(), Failure> {
        if !verify_between_stages() {
            return Ok(());
        }
        pjc_front::check(m).map_err(|d| {
            let text = pjc_front::print_module(m);
            Failure::Env(format!("internal error: the output of {} does not verify:\n{}", stage.name(), pjc_front::render("<stage output>", &text, &d)))
        })
    }

    /// Stage `expand`. An op without a gradient rule is a program error at
    /// the transform (exit 1). `--accumulate K` first turns the step into its
    /// K-micro-batch form, while its `grad` is still one op.
    fn expand(&mut self) -> Result<(), Failure> {
        if let Some(p) = self.pipeline.clone() {
            // Before grad: its expansion then differentiates the per-stage
            // program (GPipe's backward), and the later stages see spec PIR.
            if self.accumulate.is_some() {
                return Err(Failure::Env("--pipeline cuts the batch into micro-batches itself; --accumulate with --pipeline is not supported".into()));
            }
            // Stacked parameters split over further axes (on [stage, _, model]):
            // each stage's layer is partitioned over them by the SPMD
            // partitioner, which depends on pjc-transforms, so it is passed in.
            let stage_partitioner = |one: &Module, id: FuncId| -> Result<pjc_ir::Function, String> {
                let prop = pjc_sharding::propagate(one, id);
                let part = pjc_partition::partition(one, id, &prop).map_err(|e| e.msg)?;
                let name = &one.funcs[id].name;
                let pid = part.module.func_by_name(name).ok_or_else(|| format!("internal error: no partitioned @{name}"))?;
                Ok(part.module.funcs[pid].clone())
            };
            self.pipelined = pjc_transforms::pipeline::pipeline_with(&mut self.module, self.entry, &p, Some(&stage_partitioner)).map_err(|e| match e {
                pjc_transforms::PipelineError::Program(e) => Failure::Program(self.render(e.span, e.msg)),
                pjc_transforms::PipelineError::Flag(m) => Failure::Env(m),
            })?;
            Compilation::checked(Stage::Expand, &self.module)?;
        }
        if let Some(a) = self.accumulate.clone() {
            pjc_transforms::accumulate(&mut self.module, self.entry, &a).map_err(|e| match e {
                pjc_transforms::AccumulateError::Program(e) => Failure::Program(self.render(e.span, e.msg)),
                pjc_transforms::AccumulateError::Flag(m) => Failure::Env(m),
            })?;
            Compilation::checked(Stage::Expand, &self.module)?;
        }
        pjc_transforms::expand(&mut self.module).map_err(|e| Failure::Program(self.render(e.span, e.msg)))?;
        Compilation::checked(Stage::Expand, &self.module)?;
        self.reached = Stage::Expand;
        Ok(())
    }

    /// Stage `auto-shard` (with `--auto-shard`; else nothing): shardings of
    /// the unannotated entry values written into the module as annotations.
    /// Where no plan is found (none fits the memory limit, or the time limit
    /// passed first) the module is unchanged, propagation runs on it as
    /// written, and a warning says why.
    fn auto_shard(&mut self) -> Result<(), Failure> {
        if let Some(opts) = self.auto_shard.clone() {
            opts.check_links(&self.module.mesh_or_single()).map_err(Failure::Env)?;
            let report = pjc_autoshard::auto_shard(&mut self.module, self.entry, &opts);
            if let Some(why) = &report.fallback {
                eprintln!("warning: --auto-shard: {why}");
            }
            Compilation::checked(Stage::AutoShard, &self.module)?;
            self.auto_report = Some(report);
        }
        self.reached = Stage::AutoShard;
        Ok(())
    }

    /// Stage `propagate`: conflicts are resolved by policy and explained; the
    /// one error is a carried value of control flow annotated two ways (a
    /// program error at the loop, exit 1).
    fn propagate(&mut self) -> Result<(), Failure> {
        pjc_sharding::check_control(&self.module).map_err(|es| {
            let diags: Vec<pjc_front::Diag> = es.into_iter().map(|e| pjc_front::Diag::new(e.span, e.msg)).collect();
            Failure::Program(pjc_front::render(&self.path, &self.src, &diags))
        })?;
        self.propagation = Some(pjc_sharding::propagate(&self.module, self.entry));
        self.reached = Stage::Propagate;
        Ok(())
    }

    /// Stage `partition`.
    fn partition(&mut self) -> Result<(), Failure> {
        let prop = self.propagation.as_ref().expect("propagated first");
        let mut part = pjc_partition::partition(&self.module, self.entry, prop).map_err(|e| {
            let msg = format!("unsupported: the SPMD partitioner cannot handle {}", e);
            if e.span.is_none() {
                Failure::Program(format!("{}: error: {msg}\n", self.path))
            } else {
                Failure::Program(self.render(e.span, format!("unsupported: the SPMD partitioner cannot handle this: {}", e.msg)))
            }
        })?;
        // Sum all-reduces of accumulating loop carries move after their loop
        // (one per step, not per micro-batch): they exist only now, and the
        // combiner (per-device stage) then merges the moved ones.
        pjc_partition::hoist_all_reduces(&mut part);
        Compilation::checked(Stage::Partition, &part.module)?;
        self.partitioned = Some(part);
        self.reached = Stage::Partition;
        Ok(())
    }

    /// Stage `per-device`.
    fn per_device(&mut self) -> Result<(), Failure> {
        let part = self.partitioned.as_ref().expect("partitioned first");
        let entry = &self.module.funcs[self.entry].name;
        let id = part.module.func_by_name(entry).ok_or_else(|| Failure::Env(format!("internal error: the per-device program has no @{entry}")))?;
        // The entry first, then the bodies of its control flow (and of theirs),
        // each a function of its own with its calls inlined.
        let mut single = part.module.clone();
        single.funcs = Default::default();
        single.end_comments.clear();
        let funcs = pjc_transforms::inline_program(&part.module, id).map_err(|e| Failure::Env(format!("internal error: inlining: {}", e.msg)))?;
        // The bodies as inlined, for how the loops' results vary.
        let mut bodies = single.clone();
        for f in &funcs {
            bodies.funcs.push(f.clone());
        }
        // How each body's parameters vary where the entry runs it (a body
        // reached several ways: the union), so a body's all-reduces are
        // merged only where the entry's check can still prove its results.
        let mut body_params: std::collections::HashMap<String, Vec<pjc_ir::replication::Axes>> = Default::default();
        {
            let entry_f = bodies.funcs.values().next().expect("the entry comes first");
            let mut r = pjc_ir::replication::Replication::new(&bodies);
            r.values(entry_f, &pjc_ir::replication::signature_axes(entry_f));
            for (id, p) in r.bodies_reached() {
                let all = body_params.entry(bodies.funcs[id].name.clone()).or_insert_with(|| vec![Default::default(); p.len()]);
                for (a, x) in all.iter_mut().zip(p) {
                    a.extend(x.iter().cloned());
                }
            }
        }
        for mut f in funcs {
            // The gradient all-reduce nothing later can hide is split with its
            // product into chunks that pipeline (bitwise the same values).
            pjc_partition::decompose_all_reduces(&mut f, &part.module.mesh_or_single());
            // One message for the all-reduces that can share one (bitwise the same values).
            let params = body_params.get(&f.name).map(Vec::as_slice);
            pjc_partition::combine_all_reduces_in(&mut f, &part.module.mesh_or_single(), &bodies, params);
            single.funcs.push(f);
        }
        Compilation::checked(Stage::PerDevice, &single)?;
        self.per_device = Some(single);
        self.reached = Stage::PerDevice;
        Ok(())
    }

    /// Stage `plan`.
    fn plan(&mut self) -> Result<(), Failure> {
        let m = self.per_device.as_ref().expect("per-device stage ran");
        let entry = m.funcs.keys().next().expect("the entry comes first");
        let plan = pjc_fusion::plan_program(m, entry).map_err(|e| match e {
            pjc_fusion::Unplannable::Construct { .. } => Failure::Program(format!("{}: error: {e}\n", self.path)),
            pjc_fusion::Unplannable::TooBig(m) => Failure::Env(m),
        })?;
        self.plan = Some(plan);
        self.reached = Stage::Plan;
        if verify_between_stages() {
            // The buffer plan is run abstractly on the arena the runtime
            // allocates: no buffer is read after another took its bytes.
            let (plan, mem) = (self.plan.as_ref().expect("planned"), self.memory());
            for device_forms in [false, true] {
                pjc_fusion::check_memory(plan, &mem, &carried(self.per_device_func()), device_forms)
                    .map_err(|e| Failure::Env(format!("internal error: the buffer plan is unsound{}: {e}", if device_forms { " for the device kernels" } else { "" })))?;
            }
        }
        Ok(())
    }

    /// The entry's per-device function (after stage `per-device`).
    pub fn per_device_func(&self) -> &pjc_ir::Function {
        self.per_device.as_ref().expect("per-device stage ran").funcs.values().next().expect("one function")
    }

    /// The module with every value's propagated sharding written out
    /// (`--emit sharded`; after stage `propagate`).
    pub fn sharded(&self) -> Module {
        pjc_sharding::annotate(&self.module, self.propagation.as_ref().expect("propagated"))
    }

    /// The buffer plan of the plan (after stage `plan`).
    pub fn memory(&self) -> pjc_plan::Memory {
        pjc_fusion::plan_memory(self.plan.as_ref().expect("planned"), &carried(self.per_device_func()))
    }
}

/// (parameter, result) index pairs of state-carry results (same name).
pub fn carried(f: &pjc_ir::Function) -> Vec<(usize, usize)> {
    (0..f.results.len()).filter_map(|k| (0..f.params.len()).find(|&i| f.param_name(i) == f.result_name(k)).map(|i| (i, k))).collect()
}
