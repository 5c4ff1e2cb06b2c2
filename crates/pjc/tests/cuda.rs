//! The CUDA backend against the reference kernels, on one GPU: elementwise
//! and reduction kernels, cuBLAS products (plain, transposed, batched), a
//! product cuBLAS does not take (i32: its device kernel), `axis_index` (an
//! axis-index buffer), every collective over a group of one (through size-1
//! NCCL communicators when NCCL loads), and loop-mode `carry`. Without a GPU
//! (CI) it checks that construction fails with a clear error and prints why
//! the GPU part was skipped. Also, on any machine: no example, benchmark or
//! test program has a step the CUDA backend would run on the host.

mod common;

use pjc_plan::Step;
use pjc_ir::Opcode;
use pjc_runtime::backend::Backend;
use pjc_runtime::cuda::{probe, CudaBackend};
use pjc_runtime::{RuntimeError, World};
use pjc_tensor::compare::{assert_close, Tolerance};
use pjc_tensor::{Buf, Tensor};

const PROGRAM: &str = r#"
mesh [x=1]

spmd func @main(%a: f32[8,16], %b: f32[16,4], %bt: f32[4,16], %c: f32[3,8,16], %d: f32[3,16,5], %i: i32[4,6], %j: i32[6,2])
    -> (mm: f32[8,4], mt: f32[8,4], bm: f32[3,8,5], im: i32[4,2], rs: f32[8], ew: f32[8,16],
        ar: f32[8,16], ag: f32[8,16], sc: f32[8,16] on [x, _], aa: f32[8,16] on [x, _], cp: f32[8,16] on [x, _], ix: i32[]) {
  %mm = dot_general %a, %b {lhs_contract=[1], rhs_contract=[0]} : f32[8,4]
  %mt = dot_general %a, %bt {lhs_contract=[1], rhs_contract=[1]} : f32[8,4]
  %bm = dot_general %c, %d {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]} : f32[3,8,5]
  %im = dot_general %i, %j {lhs_contract=[1], rhs_contract=[0]} : i32[4,2]
  %e = exp %a : f32[8,16]
  %rs = reduce %e {dims=[1], kind=sum} : f32[8]
  %ew = mul %e, %a : f32[8,16]
  %ar = all_reduce %a {axes=[x], kind=sum}
  %ag = all_gather %a {axes=[x], dim=1}
  %sc = reduce_scatter %a {axes=[x], dim=1, kind=max}
  %aa = all_to_all %a {axes=[x], split_dim=1, concat_dim=0}
  %cp = collective_permute %a {axes=[x], shift=1}
  %ix0 = axis_index {axis=x} : i32[]
  %ix = all_reduce %ix0 {axes=[x], kind=max}
  return %mm, %mt, %bm, %im, %rs, %ew, %ar, %ag, %sc, %aa, %cp, %ix
}
"#;

fn inputs(plan: &pjc_plan::Plan) -> Vec<Tensor> {
    plan.params
        .iter()
        .enumerate()
        .map(|(pi, &b)| {
            let ty = &plan.buffers[b].ty;
            let n = ty.num_elements() as usize;
            let shape: Vec<usize> = ty.shape.iter().map(|&d| d as usize).collect();
            let vals: Vec<f64> = (0..n).map(|k| (((k * 37 + pi * 11) % 29) as f64 - 14.0) / 8.0).collect();
            let data = match ty.dtype {
                pjc_ir::DType::I32 => Buf::I32(vals.iter().map(|v| (v * 8.0) as i32).collect()),
                d => Buf::from_f64(d, &vals),
            };
            Tensor::new(shape, data)
        })
        .collect()
}

/// GPU results against the reference: f32 within 1e-4 + 1e-4·|want| (another
/// summation order, fused multiply-adds), integers exact.
const TOL: Tolerance = Tolerance::rel(1e-4).with_atol(1e-4);

#[test]
fn cuda_backend_matches_the_reference() {
    // A one-device spmd program is its own per-device program.
    let m = pjc_front::load(PROGRAM).unwrap_or_else(|d| panic!("{}", pjc_front::render("<test>", PROGRAM, &d)));
    let mesh = m.mesh_or_single();
    let plan = &pjc_fusion::plan(&m.funcs[m.func_by_name("main").unwrap()]).unwrap();
    let world = World::single();
    let args = inputs(plan);
    // The program reaches every kind of step the backend handles.
    let (mut kernels, mut dots, mut library, mut collectives) = (0, 0, 0, vec![]);
    for st in &plan.steps {
        match st {
            Step::Kernel(_) => kernels += 1,
            Step::Library { inst, .. } if inst.op == Opcode::DotGeneral => dots += 1,
            Step::Library { .. } => library += 1,
            Step::Collective { inst, .. } => collectives.push(inst.op),
            Step::Control(_) => {}
        }
    }
    assert!(kernels >= 2 && dots == 4 && library == 0, "{kernels} kernels, {dots} products, {library} other library steps");
    // On CUDA, cuBLAS takes the three f32 products; the i32 one is a kernel.
    let cuda = pjc_host::device::cuda_plan(plan).unwrap();
    let left = cuda.steps.iter().filter(|s| matches!(s, Step::Library { .. })).count();
    assert_eq!(left, 3, "{cuda}");
    assert!(plan.buffers.iter().any(|b| matches!(b.kind, pjc_plan::BufferKind::AxisIndices(_))), "{plan}");
    for op in [Opcode::AllReduce, Opcode::AllGather, Opcode::ReduceScatter, Opcode::AllToAll, Opcode::CollectivePermute] {
        assert!(collectives.contains(&op), "no {op} in {collectives:?}");
    }

    let reason = probe().err();
    // The PTX's launch list follows the plan's kernel steps (what the
    // backend relies on to match them up). Code generation needs libdevice,
    // which a CPU-only machine may lack.
    let ptx = pjc_codegen::compile_ptx(plan, "sm_90");
    match &ptx {
        Ok(ptx) => {
            let names: Vec<&str> = pjc_host::device::ptx_kernels(&cuda).into_iter().map(|k| k.name.as_str()).collect();
            assert_eq!(ptx.kernels.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(), names);
            assert!(ptx.kernels.iter().any(|k| k.required_block.is_some()), "a reduction kernel");
        }
        Err(e) => eprintln!("no PTX here: {e}"),
    }
    if let Some(r) = reason {
        // No GPU: construction must fail cleanly.
        let ptx = ptx.unwrap_or_else(|_| pjc_codegen::PtxModule { arch: "sm_90".into(), ptx: String::new(), kernels: vec![] });
        match CudaBackend::new(plan, &pjc_fusion::plan_memory(plan, &[]), &ptx, &world, &mesh, &pjc_plan::GroupTable::for_plan(plan, &mesh).unwrap()) {
            Err(RuntimeError::Env(msg)) => assert!(msg.contains("CUDA"), "{msg}"),
            Err(e) => panic!("unexpected error: {e:?}"),
            Ok(_) => panic!("a CUDA backend without a GPU"),
        }
        eprintln!("skipped the GPU part: {r}");
        return;
    }

    let ptx = ptx.unwrap();
    let want = pjc_plan::exec::execute(plan, &args, &mut pjc_plan::exec::SingleDevice).unwrap();

    let mut be = CudaBackend::new(plan, &pjc_fusion::plan_memory(plan, &[]), &ptx, &world, &mesh, &pjc_plan::GroupTable::for_plan(plan, &mesh).unwrap()).unwrap();
    for (i, t) in args.iter().enumerate() {
        be.set_param(i, t).unwrap();
    }
    be.run().unwrap();
    for (k, w) in want.iter().enumerate() {
        let got = be.result(k).unwrap();
        assert_close(w, &got, TOL, &format!("result {k}"));
    }
    // Loop mode: the all_reduce result (a copy of %a) becomes %a again, and
    // the second run gives the same answers.
    be.carry(&[(6, 0)]).unwrap();
    be.run().unwrap();
    for (k, w) in want.iter().enumerate() {
        assert_close(w, &be.result(k).unwrap(), TOL, &format!("second run, result {k}"));
    }
}


/// Issue 15's rule: no op of the spec runs on the host on the CUDA path.
/// Every program of the repository that plans (`--emit plan`) also plans for
/// CUDA (`--emit plan --device cuda` fails on a library step with neither a
/// cuBLAS mapping nor a device kernel), and its listing says where each step
/// runs.
#[test]
fn no_program_has_a_host_step_on_the_cuda_path() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![];
    for d in ["examples", "benches", "tests/numeric/cases", "tests/text", "tests/partition", "tests/spec", "fuzz/seeds/compile_plan"] {
        common::pir_files(&root.join(d), &mut files);
    }
    files.sort();
    let pjc = env!("CARGO_BIN_EXE_pjc");
    let (mut checked, mut library) = (0, 0);
    let mut failures = vec![];
    for f in &files {
        let cpu = std::process::Command::new(pjc).arg("compile").arg(f).args(["--emit", "plan"]).output().unwrap();
        if !cpu.status.success() {
            continue; // not a valid program (error tests), or not plannable
        }
        checked += 1;
        library += String::from_utf8_lossy(&cpu.stdout).matches("  library ").count();
        let cuda = std::process::Command::new(pjc).arg("compile").arg(f).args(["--emit", "plan", "--device", "cuda"]).output().unwrap();
        let out = String::from_utf8_lossy(&cuda.stdout);
        if !cuda.status.success() || !out.contains("host steps on cuda: 0") {
            failures.push(format!("{}: {}{}", f.display(), out, String::from_utf8_lossy(&cuda.stderr)));
        }
    }
    assert!(checked >= 150 && library >= 30, "only {checked} programs ({library} library steps) planned");
    assert!(failures.is_empty(), "{} programs with host steps on CUDA:\n{}", failures.len(), failures.join("\n"));
}

/// Control flow on the CUDA backend: a while (its predicate read back each
/// iteration), a scan over windows of its whole operands and outputs (nothing
/// read back), a switch, with products (cuBLAS) and reductions inside the
/// bodies, against the reference executor. Without a GPU: the plan's PTX
/// launch list still covers every kernel of every block, in the order the
/// backend numbers them, and construction fails cleanly.
#[test]
fn cuda_backend_runs_control_flow() {
    let src = std::fs::read_to_string(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/control/scan_outputs_in_place.pir")).unwrap();
    let m = pjc_front::load(&src).unwrap();
    let mut per_device = m.clone();
    per_device.funcs = Default::default();
    for f in pjc_transforms::inline_program(&m, m.func_by_name("main").unwrap()).unwrap() {
        per_device.funcs.push(f);
    }
    let first = per_device.funcs.keys().next().unwrap();
    let plan = &pjc_fusion::plan_program(&per_device, first).unwrap();
    assert!(plan.steps.iter().any(|s| matches!(s, Step::Control(_))), "{plan}");
    let cuda = pjc_host::device::cuda_plan(plan).unwrap();
    let routes = pjc_host::device::cuda_routes(plan).unwrap();
    assert_eq!(routes.len(), pjc_plan::control::preorder(&plan.steps).len());
    let mesh = m.mesh_or_single();
    let world = World::single();
    let ptx = pjc_codegen::compile_ptx(plan, "sm_90");
    if let Ok(ptx) = &ptx {
        let names: Vec<&str> = pjc_host::device::ptx_kernels(&cuda).into_iter().map(|k| k.name.as_str()).collect();
        assert_eq!(ptx.kernels.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(), names);
    }
    let args = inputs(plan);
    if let Err(r) = probe() {
        let ptx = ptx.unwrap_or_else(|_| pjc_codegen::PtxModule { arch: "sm_90".into(), ptx: String::new(), kernels: vec![] });
        match CudaBackend::new(plan, &pjc_fusion::plan_memory(plan, &[]), &ptx, &world, &mesh, &[]) {
            Err(RuntimeError::Env(msg)) => assert!(msg.contains("CUDA"), "{msg}"),
            Err(e) => panic!("unexpected error: {e:?}"),
            Ok(_) => panic!("a CUDA backend without a GPU"),
        }
        eprintln!("skipped the GPU part: {r}");
        return;
    }
    let want = pjc_plan::exec::execute(plan, &args, &mut pjc_plan::exec::SingleDevice).unwrap();
    let mut be = CudaBackend::new(plan, &pjc_fusion::plan_memory(plan, &[]), &ptx.unwrap(), &world, &mesh, &[]).unwrap();
    for (i, t) in args.iter().enumerate() {
        be.set_param(i, t).unwrap();
    }
    for run in 0..2 {
        be.run().unwrap();
        for (k, w) in want.iter().enumerate() {
            assert_close(w, &be.result(k).unwrap(), TOL, &format!("run {run}, result {k}"));
        }
    }
}
