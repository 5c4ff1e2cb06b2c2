//! `pjc compile --pipeline AXIS --microbatches M` end to end: executables
//! under real `mpirun` compute the unpipelined step (a training step and a
//! forward pass over an 8-layer stack, on 4 and 8 processes, with a data axis
//! too, and with each stage's layers tensor-parallel over a model axis), each stage holds only its layers (no gather of the stacked weights
//! in `--emit spmd`, point-to-point transfers both ways), `pjc explain` gives
//! the schedule's bubble, and the command line's mistakes are one clear line.

mod common;

use pjc_tensor::compare::{close, Tolerance};
use pjc_tensor::Tensor;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const STEP: &str = "tests/pipeline/mlp_step.pir";
const FORWARD: &str = "tests/pipeline/mlp_forward.pir";
const GPT: &str = "tests/pipeline/gpt_step.pir";
const MLP_TP: &str = "tests/pipeline/mlp_tp_step.pir";
const GPT_TP: &str = "tests/pipeline/gpt_tp_step.pir";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn pjc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pjc")).current_dir(repo()).args(args).output().unwrap()
}

fn stdout(args: &[&str]) -> String {
    let o = pjc(args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `pjc compile PROGRAM --mesh MESH [--pipeline stage --microbatches M] -o OUT`.
fn compile(dir: &Path, program: &str, mesh: &str, m: Option<u64>) -> PathBuf {
    compile_schedule(dir, program, mesh, m, "gpipe")
}

/// The same with `--schedule SCHEDULE`.
fn compile_schedule(dir: &Path, program: &str, mesh: &str, m: Option<u64>, schedule: &str) -> PathBuf {
    let stem = Path::new(program).file_stem().unwrap().to_string_lossy().into_owned();
    let exe = dir.join(format!("{stem}-{mesh}-{}-{schedule}.bin", m.map_or("plain".to_string(), |m| format!("m{m}"))));
    let ms = m.map(|m| m.to_string());
    let mut args = vec!["compile", program, "--mesh", mesh, "--target", "cpu", "-o", exe.to_str().unwrap()];
    if let Some(m) = &ms {
        args.extend(["--pipeline", "stage", "--microbatches", m, "--schedule", schedule]);
    }
    let o = pjc(&args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    exe
}

fn run(np: usize, exe: &Path, input: &Path, out: &Path) -> Vec<(String, Tensor)> {
    run_with(np, exe, input, out, &[])
}

fn run_with(np: usize, exe: &Path, input: &Path, out: &Path, extra: &[&str]) -> Vec<(String, Tensor)> {
    let mut args = vec!["--inputs", input.to_str().unwrap(), "--output", out.to_str().unwrap()];
    args.extend(extra);
    common::mpirun_ok(np, exe, &args, 300);
    pjc_tensor::read_safetensors(out).unwrap()
}

/// The stack's inputs: 8 layers of 32x32 weights, a batch of 32 rows.
fn inputs(dir: &Path) -> PathBuf {
    write_inputs(dir, "in", &[("ws", vec![8, 32, 32], 0.3), ("bs", vec![8, 32], 0.1), ("x", vec![32, 32], 1.0), ("y", vec![32, 32], 1.0)])
}

fn write_inputs(dir: &Path, name: &str, shapes: &[(&str, Vec<usize>, f64)]) -> PathBuf {
    let mut seed = 0x0bad_cafe_1234_5678u64;
    let named: Vec<(String, Tensor)> = shapes.iter().map(|(n, s, scale)| (n.to_string(), common::random(s.clone(), &mut seed, *scale))).collect();
    let p = dir.join(format!("{name}.safetensors"));
    pjc_tensor::write_safetensors(&p, &named).unwrap();
    p
}

fn assert_same(want: &[(String, Tensor)], got: &[(String, Tensor)], what: &str) {
    // The same sums regrouped (per micro-batch, then over them; the last
    // stage's results summed with zeros): spec section 11's f32 rule.
    assert_same_with(want, got, what, Tolerance::spec(pjc_ir::DType::F32))
}

fn assert_same_with(want: &[(String, Tensor)], got: &[(String, Tensor)], what: &str, tol: Tolerance) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (name, w) in want {
        let g = &got.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("{what}: no result {name}")).1;
        close(w, g, tol).unwrap_or_else(|e| panic!("{what}, {name}: {e}"));
    }
}

#[test]
fn pipelined_steps_equal_the_unpipelined_step_under_mpirun() {
    let dir = common::scratch("pipeline");
    let input = inputs(&dir);
    // (mesh, processes, micro-batch counts): stages alone, stages with data
    // parallelism, and 8 processes (data=2 x stage=4).
    let cases: &[(&str, usize, &[u64])] = &[("data=1,stage=4", 4, &[1, 4, 8]), ("data=2,stage=2", 4, &[2, 4]), ("data=2,stage=4", 8, &[4])];
    for program in [STEP, FORWARD] {
        for &(mesh, np, ms) in cases {
            if program == FORWARD && np == 8 {
                continue;
            }
            let plain = run(np, &compile(&dir, program, mesh, None), &input, &dir.join("plain.safetensors"));
            for &m in ms {
                let got = run(np, &compile(&dir, program, mesh, Some(m)), &input, &dir.join(format!("m{m}.safetensors")));
                assert_same(&plain, &got, &format!("{program} on {mesh}, M={m}"));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_pipelined_transformer_block_stack_equals_the_unpipelined_one() {
    let dir = common::scratch("pipeline-gpt");
    let w = |n: &'static str, s: Vec<usize>| (n, s, 0.3);
    let input = write_inputs(
        &dir,
        "gpt",
        &[w("wq", vec![4, 8, 8]), w("wk", vec![4, 8, 8]), w("wv", vec![4, 8, 8]), w("wo", vec![4, 8, 8]), w("w1", vec![4, 8, 16]), w("w2", vec![4, 16, 8]), ("x", vec![8, 4, 8], 1.0), ("y", vec![8, 4, 8], 1.0)],
    );
    let cases: &[(&str, usize, &[u64])] = &[("data=1,stage=4", 4, &[2, 4]), ("data=2,stage=2", 4, &[2]), ("data=2,stage=4", 8, &[2])];
    for &(mesh, np, ms) in cases {
        let plain = run(np, &compile(&dir, GPT, mesh, None), &input, &dir.join("plain.safetensors"));
        for &m in ms {
            let got = run(np, &compile(&dir, GPT, mesh, Some(m)), &input, &dir.join(format!("m{m}.safetensors")));
            assert_same(&plain, &got, &format!("{GPT} on {mesh}, M={m}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_f_one_b_steps_equal_the_unpipelined_step_under_mpirun() {
    let dir = common::scratch("pipeline-1f1b");
    let input = inputs(&dir);
    let plain = run(4, &compile(&dir, STEP, "data=1,stage=4", None), &input, &dir.join("plain.safetensors"));
    for m in [1, 2, 4, 8] {
        let got = run(4, &compile_schedule(&dir, STEP, "data=1,stage=4", Some(m), "1f1b"), &input, &dir.join(format!("m{m}.safetensors")));
        assert_same(&plain, &got, &format!("{STEP} 1F1B, M={m}"));
    }
    let plain = run(2, &compile(&dir, STEP, "data=1,stage=2", None), &input, &dir.join("plain2.safetensors"));
    let got = run(2, &compile_schedule(&dir, STEP, "data=1,stage=2", Some(4), "1f1b"), &input, &dir.join("s2.safetensors"));
    assert_same(&plain, &got, &format!("{STEP} 1F1B on stage=2, M=4"));
    let w = |n: &'static str, s: Vec<usize>| (n, s, 0.3);
    let gpt = write_inputs(
        &dir,
        "gpt",
        &[w("wq", vec![4, 8, 8]), w("wk", vec![4, 8, 8]), w("wv", vec![4, 8, 8]), w("wo", vec![4, 8, 8]), w("w1", vec![4, 8, 16]), w("w2", vec![4, 16, 8]), ("x", vec![8, 4, 8], 1.0), ("y", vec![8, 4, 8], 1.0)],
    );
    let plain = run(4, &compile(&dir, GPT, "data=1,stage=4", None), &gpt, &dir.join("gplain.safetensors"));
    let got = run(4, &compile_schedule(&dir, GPT, "data=1,stage=4", Some(4), "1f1b"), &gpt, &dir.join("g1f1b.safetensors"));
    assert_same(&plain, &got, &format!("{GPT} 1F1B, M=4"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The GPT stack's inputs: 4 blocks of width 8, 8 sequences of 4 tokens.
fn gpt_inputs(dir: &Path) -> PathBuf {
    let w = |n: &'static str, s: Vec<usize>| (n, s, 0.3);
    write_inputs(
        dir,
        "gpt",
        &[w("wq", vec![4, 8, 8]), w("wk", vec![4, 8, 8]), w("wv", vec![4, 8, 8]), w("wo", vec![4, 8, 8]), w("w1", vec![4, 8, 16]), w("w2", vec![4, 16, 8]), ("x", vec![8, 4, 8], 1.0), ("y", vec![8, 4, 8], 1.0)],
    )
}

/// The Megatron MLP stack's inputs: 4 blocks 16 wide with 32 hidden units.
fn mlp_tp_inputs(dir: &Path) -> PathBuf {
    write_inputs(
        dir,
        "mlp_tp",
        &[("w1s", vec![4, 16, 32], 0.3), ("b1s", vec![4, 32], 0.1), ("w2s", vec![4, 32, 16], 0.3), ("b2s", vec![4, 16], 0.1), ("x", vec![16, 16], 1.0), ("y", vec![16, 16], 1.0)],
    )
}

#[test]
fn one_f_one_b_with_a_data_axis_equals_the_unpipelined_step() {
    // The batch split over data as well: each device runs its rows'
    // micro-batches, and the weights' gradients are summed over data once.
    let dir = common::scratch("pipeline-1f1b-data");
    let input = inputs(&dir);
    for (mesh, np, ms) in [("data=2,stage=2", 4, &[2u64, 4][..]), ("data=2,stage=4", 8, &[4])] {
        let plain = run(np, &compile(&dir, STEP, mesh, None), &input, &dir.join("plain.safetensors"));
        for &m in ms {
            let got = run(np, &compile_schedule(&dir, STEP, mesh, Some(m), "1f1b"), &input, &dir.join(format!("m{m}.safetensors")));
            assert_same(&plain, &got, &format!("{STEP} 1F1B on {mesh}, M={m}"));
        }
    }
    let gpt = gpt_inputs(&dir);
    let plain = run(4, &compile(&dir, GPT, "data=2,stage=2", None), &gpt, &dir.join("gplain.safetensors"));
    let got = run(4, &compile_schedule(&dir, GPT, "data=2,stage=2", Some(2), "1f1b"), &gpt, &dir.join("g1f1b.safetensors"));
    assert_same(&plain, &got, &format!("{GPT} 1F1B on data=2,stage=2, M=2"));
    // One all-reduce over data per weight gradient, after the tick loop:
    // none inside the ticks.
    let spmd = stdout(&["compile", STEP, "--mesh", "data=2,stage=2", "--pipeline", "stage", "--microbatches", "4", "--schedule", "1f1b", "--emit", "spmd"]);
    let funcs: Vec<&str> = spmd.split("\nspmd func ").collect();
    let body = |name: &str| *funcs.iter().find(|f| f.starts_with(&format!("@{name}("))).unwrap_or_else(|| panic!("no @{name}: {spmd}"));
    assert!(!body("layer.tick").contains("axes=[data]"), "{}", body("layer.tick"));
    let driver = body("layer.pipeline");
    assert!(driver.contains("= all_reduce %ws.grad.all") || driver.matches("{axes=[data], kind=sum}").count() == 2, "{driver}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tensor_parallel_stages_equal_the_unpipelined_step_at_8_processes() {
    // [data=2, stage=2, model=2]: each stage's blocks Megatron-sharded over
    // model (the SPMD partitioner's collectives inside the stage), the batch
    // over data, both schedules, against the same step unpipelined and
    // data-parallel only (the program with its model splits removed: it
    // gathers the stacks over stage and replicates them over model), which
    // the program as written, unpipelined, equals too.
    let dir = common::scratch("pipeline-tp");
    let mesh = "data=2,stage=2,model=2";
    for (program, input, cases) in [
        (MLP_TP, mlp_tp_inputs(&dir), &[(2u64, "gpipe"), (4, "gpipe"), (4, "1f1b")][..]),
        (GPT_TP, gpt_inputs(&dir), &[(2, "gpipe"), (2, "1f1b")]),
    ] {
        let src = std::fs::read_to_string(repo().join(program)).unwrap();
        let replicated = src.replace("[stage, _, model]", "[stage, _, _]").replace("[stage, model, _]", "[stage, _, _]").replace("[stage, model]", "[stage, _]");
        assert!(!replicated.contains("model]") && !replicated.contains("model,"), "{replicated}");
        let dp = dir.join(Path::new(program).file_name().unwrap());
        std::fs::write(&dp, replicated).unwrap();
        let plain = run(8, &compile(&dir, dp.to_str().unwrap(), mesh, None), &input, &dir.join("plain.safetensors"));
        // The program as written, unpipelined: the stacks gathered over stage,
        // the blocks partitioned over model.
        let megatron = run(8, &compile(&dir, program, mesh, None), &input, &dir.join("megatron.safetensors"));
        assert_same(&plain, &megatron, &format!("{program} unpipelined on {mesh}"));
        for &(m, schedule) in cases {
            let got = run(8, &compile_schedule(&dir, program, mesh, Some(m), schedule), &input, &dir.join(format!("m{m}-{schedule}.safetensors")));
            assert_same(&plain, &got, &format!("{program} {schedule} on {mesh}, M={m}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tensor_parallel_stage_holds_its_shards_and_sums_over_model() {
    for schedule in ["gpipe", "1f1b"] {
        let spmd = stdout(&["compile", MLP_TP, "--pipeline", "stage", "--microbatches", "2", "--schedule", schedule, "--emit", "spmd"]);
        assert!(!spmd.contains("all_gather"), "{schedule}: {spmd}");
        // A stage's slice: its 2 of 4 blocks, each device half the hidden units.
        let sig = spmd.lines().find(|l| l.starts_with("spmd func @block.pipeline(")).unwrap_or_else(|| panic!("{spmd}"));
        assert!(sig.contains("%w1s: f32[2,16,16] on [stage, _, model]") && sig.contains("%w2s: f32[2,16,16] on [stage, model, _]"), "{sig}");
        assert!(sig.contains("%b1s: f32[2,16] on [stage, model]") && sig.contains("%b2s: f32[2,16] on [stage, _]"), "{sig}");
        // The layer on one device: Megatron's all-reduce of the second
        // product's partial sums over model.
        let funcs: Vec<&str> = spmd.split("\nspmd func ").collect();
        let stage = *funcs.iter().find(|f| f.starts_with("@block.stage(")).unwrap_or_else(|| panic!("{spmd}"));
        assert!(stage.contains("axes=[model], kind=sum}"), "{stage}");
        assert!(stage.lines().next().unwrap().contains("f32[16,32]") || stage.contains("f32[16,16]"), "{stage}");
        let text = stdout(&["explain", MLP_TP, "--pipeline", "stage", "--microbatches", "2", "--schedule", schedule]);
        assert!(text.contains("inside a stage: its layers' weights are split over [model] (tensor parallelism)"), "{text}");
        assert!(text.contains("micro-batches: 2 of 4 rows per device (batch of 16 rows, split over [data])"), "{text}");
    }
}

#[test]
fn loop_mode_checkpoints_and_resumes_on_the_same_pipeline_layout() {
    let dir = common::scratch("pipeline-loop");
    let input = inputs(&dir);
    let exe = compile(&dir, STEP, "data=1,stage=4", Some(4));
    let full = run_with(4, &exe, &input, &dir.join("full.safetensors"), &["--steps", "6"]);
    let ck = dir.join("ck");
    let ck = ck.to_str().unwrap();
    run_with(4, &exe, &input, &dir.join("part.safetensors"), &["--steps", "3", "--checkpoint", ck, "--checkpoint-every", "3"]);
    let resumed = run_with(4, &exe, &input, &dir.join("resumed.safetensors"), &["--steps", "6", "--checkpoint", ck, "--resume"]);
    // The same executable on the same process count: bitwise (spec section 11).
    assert_same_with(&full, &resumed, "resumed at step 3", Tolerance::BITWISE);
    // Six SGD steps of the unpipelined program land on the same weights.
    let plain = run_with(4, &compile(&dir, STEP, "data=1,stage=4", None), &input, &dir.join("plain.safetensors"), &["--steps", "6"]);
    assert_same(&plain, &full, "6 steps");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn loop_mode_resumes_a_tensor_parallel_1f1b_pipeline_bitwise() {
    // [data=2, stage=2, model=2] at 8 processes, 1F1B: a run checkpointed at
    // step 2 and resumed is the uninterrupted 4-step run, bit for bit.
    let dir = common::scratch("pipeline-tp-loop");
    let input = mlp_tp_inputs(&dir);
    let exe = compile_schedule(&dir, MLP_TP, "data=2,stage=2,model=2", Some(2), "1f1b");
    let full = run_with(8, &exe, &input, &dir.join("full.safetensors"), &["--steps", "4"]);
    let ck = dir.join("ck");
    let ck = ck.to_str().unwrap();
    run_with(8, &exe, &input, &dir.join("part.safetensors"), &["--steps", "2", "--checkpoint", ck, "--checkpoint-every", "2"]);
    let resumed = run_with(8, &exe, &input, &dir.join("resumed.safetensors"), &["--steps", "4", "--checkpoint", ck, "--resume"]);
    assert_same_with(&full, &resumed, "resumed at step 2", Tolerance::BITWISE);
    // The weights moved: the 4 steps are not the 2.
    let part = pjc_tensor::read_safetensors(&dir.join("part.safetensors")).unwrap();
    assert!(close(&part.iter().find(|(n, _)| n == "w1s").unwrap().1, &full.iter().find(|(n, _)| n == "w1s").unwrap().1, Tolerance::BITWISE).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn each_stage_holds_its_layers_and_sends_to_its_neighbours() {
    // Without --pipeline, spec section 6: the scan's dimension 0 is unsplit,
    // so the stacked weights are gathered.
    let plain = stdout(&["compile", STEP, "--emit", "spmd"]);
    assert!(plain.contains("= all_gather %ws {axes=[stage], dim=0} : f32[8,32,32]"), "{plain}");
    for (mesh, per) in [("data=1,stage=4", 2), ("data=2,stage=2", 4)] {
        let spmd = stdout(&["compile", STEP, "--mesh", mesh, "--pipeline", "stage", "--microbatches", "4", "--emit", "spmd"]);
        assert!(!spmd.contains("all_gather"), "{mesh}: {spmd}");
        // The per-stage program takes the stage's layers only: L/S deep.
        let sig = spmd.lines().find(|l| l.starts_with("spmd func @layer.pipeline(")).unwrap_or_else(|| panic!("{spmd}"));
        assert!(sig.contains(&format!("%ws: f32[{per},32,32] on [stage, _, _]")), "{sig}");
        assert!(
            spmd.lines()
                .any(|l| l.starts_with("spmd func @main(") && l.contains(&format!("%ws: f32[{per},32,32] on [stage, _, _]"))),
            "{spmd}"
        );
        // Activations forward, their gradients back.
        assert!(spmd.contains("collective_permute %h.layers {axes=[stage], shift=1}"), "{spmd}");
        assert!(spmd.contains("{axes=[stage], shift=-1}"), "{spmd}");
    }
    // With a data axis: the weights' gradients are summed over data once,
    // after the backward's tick loop, not inside the per-layer bodies.
    let spmd = stdout(&["compile", STEP, "--mesh", "data=2,stage=2", "--pipeline", "stage", "--microbatches", "4", "--emit", "spmd"]);
    let funcs: Vec<&str> = spmd.split("\nspmd func ").collect();
    let body = |name: &str| *funcs.iter().find(|f| f.starts_with(&format!("@{name}("))).unwrap_or_else(|| panic!("no @{name}: {spmd}"));
    for inner in ["layer.stage.bwd", "layer.tick.bwd"] {
        assert!(!body(inner).contains("axes=[data]"), "@{inner}: {}", body(inner));
    }
    // Nothing is all-reduced per tick: the batch's cotangent is summed over
    // stage once (only stage 0 reads the batch).
    assert!(!body("layer.tick.bwd").contains("all_reduce"), "{}", body("layer.tick.bwd"));
    let vjp = body("layer.pipeline.vjp");
    assert!(vjp.contains("all_reduce %ws.vary.ct {axes=[data], kind=sum}"), "{vjp}");
    // On GPUs every step runs on the device; the transfers are NCCL's
    // (send/recv: no GPU ran this test's executables).
    let cuda = stdout(&["compile", STEP, "--pipeline", "stage", "--microbatches", "4", "--emit", "plan", "--device", "cuda"]);
    assert!(cuda.contains("host steps on cuda: 0"), "{cuda}");
    let permutes: Vec<&str> = cuda.lines().filter(|l| l.contains("on cuda: collective_permute")).collect();
    assert!(permutes.len() >= 3 && permutes.iter().all(|l| l.ends_with(": NCCL")), "{cuda}");
}

#[test]
fn explain_shows_the_schedule_and_its_bubble() {
    for (mesh, s, m) in [("data=1,stage=4", 4u64, 4u64), ("data=1,stage=4", 4, 8), ("data=2,stage=2", 2, 4)] {
        let ms = m.to_string();
        let text = stdout(&["explain", STEP, "--mesh", mesh, "--pipeline", "stage", "--microbatches", &ms]);
        let t = m + s - 1;
        let want = format!("bubble fraction (S-1)/(M+S-1) = {}/{t} = {:.3}", s - 1, (s - 1) as f64 / t as f64);
        assert!(text.contains(&want), "{mesh} M={m}: no '{want}' in\n{text}");
        assert!(text.contains(&format!("ticks: {t} forward + {t} backward")), "{text}");
        // The table: stage s-1 runs micro-batch 0's forward at tick s-1 and
        // starts the backward pass with micro-batch m-1.
        let row = text.lines().find(|l| l.trim_start().starts_with(&format!("stage {}", s - 1))).unwrap_or_else(|| panic!("{text}"));
        let cells: Vec<&str> = row.split_whitespace().skip(2).collect();
        assert_eq!(cells[(s - 1) as usize], "F0", "{row}");
        assert_eq!(cells[t as usize + 1], format!("B{}", m - 1), "{row}");
    }
    // 1F1B: M+2(S-1) ticks with a forward and a backward slot each, and the
    // micro-batches each stage holds.
    let text = stdout(&["explain", STEP, "--pipeline", "stage", "--microbatches", "8", "--schedule", "1f1b"]);
    assert!(text.contains("bubble fraction 2(S-1)/(M+2(S-1)) = 6/14 = 0.429"), "{text}");
    assert!(text.contains("(7, 5, 3, 1 for stages 0..3)"), "{text}");
    let row = text.lines().find(|l| l.trim_start().starts_with("stage 3")).unwrap_or_else(|| panic!("{text}"));
    assert_eq!(row.split_whitespace().nth(5), Some("F0B0"), "{row}");
    // A forward-only program has no backward pass.
    let text = stdout(&["explain", FORWARD, "--pipeline", "stage", "--microbatches", "4"]);
    assert!(text.contains("ticks: 7 forward (M+S-1 = 4+4-1 each)") && !text.contains(" B0"), "{text}");
}

/// `pjc explain`'s peak memory per device.
fn peak(args: &[&str]) -> u64 {
    let text = stdout(args);
    let line = text.lines().find(|l| l.starts_with("peak memory per device: ")).unwrap_or_else(|| panic!("{text}"));
    line["peak memory per device: ".len()..].split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn a_stage_needs_less_memory_than_the_gathered_stack() {
    let plain = peak(&["explain", STEP]);
    let piped = peak(&["explain", STEP, "--pipeline", "stage", "--microbatches", "4"]);
    // 8 layers' weights (32 KiB f32) and their gradients, gathered on every
    // device, against 2 layers' per stage.
    assert!(piped < plain, "pipelined {piped} B, unpipelined {plain} B");
    // 1F1B keeps at most 2S-1 micro-batches' inputs per stage, GPipe every
    // tick's residuals (the 256-wide stack of the benchmark).
    let bench = "benches/pipeline/mlp_stack.pir";
    let gpipe = peak(&["explain", bench, "--pipeline", "stage", "--microbatches", "8"]);
    let f1b = peak(&["explain", bench, "--pipeline", "stage", "--microbatches", "8", "--schedule", "1f1b"]);
    assert!(f1b < gpipe && gpipe < peak(&["explain", bench]), "1F1B {f1b} B, GPipe {gpipe} B");
}

#[test]
fn command_line_errors() {
    let err = |args: &[&str], code: i32| {
        let o = pjc(args);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    assert_eq!(
        err(&["compile", STEP, "--emit", "spmd", "--pipeline", "pipe", "--microbatches", "2"], 2),
        "error: --pipeline pipe: the mesh has no axis 'pipe' (its axes: data, stage)\n"
    );
    assert_eq!(
        err(&["compile", STEP, "--emit", "spmd", "--pipeline", "stage"], 2),
        "error: --pipeline stage needs --microbatches M (the micro-batches per step)\n"
    );
    assert_eq!(err(&["explain", STEP, "--microbatches", "2"], 2), "error: --microbatches and --schedule apply with --pipeline AXIS\n");
    // A stacked parameter split over the batch's axis on another dimension.
    let dir = common::scratch("pipeline-errors");
    let bad = dir.join("bad.pir");
    let src = std::fs::read_to_string(repo().join(MLP_TP)).unwrap();
    std::fs::write(&bad, src.replace("[stage, _, model]", "[stage, _, data]")).unwrap();
    let e = err(&["compile", bad.to_str().unwrap(), "--emit", "spmd", "--pipeline", "stage", "--microbatches", "2"], 1);
    assert!(e.contains("error: unsupported: --pipeline stage: stacked parameter %w1s is split over the batch's axis data on another dimension"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
    // 1F1B schedules a training step.
    let e = err(&["compile", FORWARD, "--emit", "spmd", "--pipeline", "stage", "--microbatches", "2", "--schedule", "1f1b"], 1);
    assert!(e.contains("1F1B schedules a training step: the entry must take grad of @main"), "{e}");
    assert!(err(&["compile", STEP, "--emit", "spmd", "--pipeline", "stage", "--microbatches", "2", "--accumulate", "2"], 2).contains("--accumulate with --pipeline is not supported"));
    // The program's side: located diagnostics (exit 1).
    let e = err(&["compile", STEP, "--emit", "spmd", "--pipeline", "stage", "--microbatches", "3"], 1);
    assert!(
        e.starts_with("tests/pipeline/mlp_step.pir:") && e.contains(": error: --pipeline stage: the batch of scan %h has 32 rows, which do not split into 3 equal micro-batches\n"),
        "{e}"
    );
    let e = err(&["compile", STEP, "--emit", "spmd", "--mesh", "data=1,stage=3", "--pipeline", "stage", "--microbatches", "2"], 1);
    // (the signature's on [stage, ...] already requires it: spec section 6)
    assert!(e.contains("error: dimension 0 of parameter %ws has size 8 which is not divisible by 3"), "{e}");
    let e = err(&["compile", STEP, "--emit", "spmd", "--mesh", "data=2,stage=2", "--pipeline", "stage", "--microbatches", "32"], 1);
    assert!(e.contains("which do not split into 32 equal micro-batches on each of the 2 devices of [data]"), "{e}");
    // The batch (split over data) is no stack of layers.
    let e = err(&["compile", STEP, "--emit", "spmd", "--pipeline", "data", "--microbatches", "2"], 1);
    assert!(
        e.contains("error: unsupported: --pipeline data: no scan takes the parameters stacked over data as scanned operands"),
        "{e}"
    );
    let e = err(&["compile", "tests/accumulate/mlp_dp.pir", "--emit", "spmd", "--pipeline", "data", "--microbatches", "2"], 1);
    assert!(e.contains("no scan takes the parameters stacked over data"), "{e}");
}
