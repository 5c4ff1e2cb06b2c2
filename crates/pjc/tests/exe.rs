//! Compiled executables under real `mpirun`: every program is compiled with
//! `pjc compile -o` (for each mesh variant with `--mesh`) and launched as
//! `mpirun --oversubscribe -np N ./prog.bin ...`, on a curated set of programs (every collective kind, also along non-leading
//! dimensions and over multi-axis groups in both axis orders; a Megatron MLP
//! on [data, model]; a data-parallel training step through `grad`; every
//! program of tests/partition) for N = 1, 2, 4 where the mesh allows (mesh
//! sizes changed with `--mesh`, or written into generated programs). Every
//! output is compared with `pjc_interp::eval` of the global program (spec
//! tolerances; the pure-collective programs bit for bit), a second run with
//! the same N must give bitwise identical outputs, and a wrong process count
//! must fail with exit code 2 and a message naming both numbers, not hang.
//!
//! Needs OpenMPI's `mpirun` (scripts/setup.sh installs `openmpi-bin`); without
//! it these tests fail with a message saying so.

mod common;

use pjc_ir::{DType, FuncKind, Module};
use pjc_tensor::compare::{assert_close, close, Tolerance};
use pjc_tensor::{Buf, Tensor};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Seconds one mpirun may take before the test calls it a hang.
const TIMEOUT_S: u32 = 120;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn mpirun() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let p = dir.join("mpirun");
        if p.is_file() {
            return p;
        }
    }
    panic!(
        "mpirun not found on PATH: these tests launch real MPI jobs and need OpenMPI \
         (run scripts/setup.sh, which installs libopenmpi-dev and openmpi-bin, or \
         `apt-get install libopenmpi-dev openmpi-bin`)"
    );
}

fn scratch() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!("pjc-runtime-mpirun-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `pjc compile SRC -o DIR/NAME.bin [--mesh SPEC]`.
fn compile(dir: &Path, name: &str, src: &str, mesh: Option<&str>) -> Result<PathBuf, String> {
    let prog = dir.join(format!("{name}.pir"));
    std::fs::write(&prog, src).unwrap();
    let exe = dir.join(format!("{name}.bin"));
    let mut c = Command::new(env!("CARGO_BIN_EXE_pjc"));
    c.arg("compile").arg(&prog).arg("-o").arg(&exe);
    if let Some(m) = mesh {
        c.args(["--mesh", m]);
    }
    let o = c.output().unwrap();
    if !o.status.success() {
        return Err(format!("pjc compile exited with {:?}:\n{}", o.status.code(), String::from_utf8_lossy(&o.stderr)));
    }
    Ok(exe)
}

/// Runs executable `bin` with `args` (under `mpirun -np N` when `np` is
/// given) within `timeout`, as root-safe OpenMPI wants.
fn launch_exe(np: Option<usize>, bin: &Path, args: &[String]) -> Output {
    launch_exe_env(np, bin, args, &[])
}

/// [`launch_exe`] with extra environment variables (passed to every rank).
fn launch_exe_env(np: Option<usize>, bin: &Path, args: &[String], envs: &[(&str, &str)]) -> Output {
    let mut c = Command::new("timeout");
    c.envs(envs.iter().copied());
    c.args(["--signal=TERM", "--kill-after=10", &TIMEOUT_S.to_string()]);
    if let Some(n) = np {
        c.arg(mpirun()).args(["--oversubscribe", "-np", &n.to_string()]);
    }
    c.arg(bin).args(args);
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        // Shared memory only: no network probing in containers.
        .env("OMPI_MCA_btl", "self,vader")
        .env("OMPI_MCA_pml", "ob1")
        .env("OMPI_MCA_orte_tmpdir_base", common::ompi_tmpdir())
        .env("RUST_BACKTRACE", "0");
    let out = c.output().expect("cannot start `timeout` (coreutils)");
    assert_ne!(out.status.code(), Some(124), "mpirun -np {np:?} {} {args:?} did not finish within {TIMEOUT_S} s (hang)", bin.display());
    out
}

/// Deterministic pseudo-random inputs of any dtype (xorshift).
fn random(ty: &pjc_ir::TensorType, seed: &mut u64) -> Tensor {
    let n = ty.num_elements() as usize;
    let mut next = || {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    };
    let shape: Vec<usize> = ty.shape.iter().map(|&d| d as usize).collect();
    let data = if ty.dtype.is_float() {
        let v: Vec<f64> = (0..n).map(|_| (next() % 4001) as f64 / 1000.0 - 2.0).collect();
        Buf::from_f64(ty.dtype, &v)
    } else if ty.dtype.is_int() {
        let v: Vec<i128> = (0..n)
            .map(|_| if ty.dtype.is_signed_int() { (next() % 11) as i128 - 5 } else { (next() % 251) as i128 })
            .collect();
        Buf::from_i128(ty.dtype, &v)
    } else {
        Buf::Pred((0..n).map(|_| next() % 3 != 0).collect())
    };
    Tensor::new(shape, data)
}

/// A program to run: its text and the mesh sizes to run it with.
struct Case {
    name: String,
    src: String,
    /// `--mesh` override (None: the module's own mesh).
    mesh: Option<Vec<u64>>,
    /// Compare bit for bit with the interpreter.
    exact: bool,
}

/// The module as the run sees it (mesh override applied, transforms expanded).
fn module_of(case: &Case) -> Result<Module, String> {
    let mut m = pjc_front::parse(&case.src).map_err(|d| pjc_front::render(&case.name, &case.src, &d))?;
    if let (Some(sizes), Some(mesh)) = (&case.mesh, &mut m.mesh) {
        for (a, &s) in mesh.axes.iter_mut().zip(sizes) {
            a.size = s;
        }
    }
    pjc_front::verify(&mut m).map_err(|d| pjc_front::render(&case.name, &case.src, &d))?;
    pjc_transforms::expand(&mut m).map_err(|e| e.msg)?;
    Ok(m)
}

/// Runs `case` on N = its device count processes (twice when `twice`), checks
/// against the interpreter and, when run twice, bitwise reproducibility.
fn run_case(case: &Case, twice: bool) -> Result<(), String> {
    let m = module_of(case)?;
    let entry = m.func_by_name("main").ok_or("no @main")?;
    let f = &m.funcs[entry];
    let mesh = m.mesh_or_single();
    let n = mesh.device_count() as usize;
    let mut seed = 0x9e3779b97f4a7c15u64 ^ (case.name.len() as u64).wrapping_mul(0x2545F4914F6CDD1D);
    let args: Vec<Tensor> = (0..f.params.len())
        .map(|i| {
            let v = &f.values[f.params[i]];
            let ty = match f.kind {
                FuncKind::Spmd => pjc_ir::infer::global_type(&v.ty, v.sharding.as_ref(), &mesh),
                FuncKind::Global => v.ty.clone(),
            };
            random(&ty, &mut seed)
        })
        .collect();
    let want = pjc_interp::eval(&m, entry, args.clone()).map_err(|e| format!("interpreter: {e}"))?;
    let dir = scratch();
    let spec = case.mesh.as_ref().map(|sizes| {
        let spec: Vec<String> = mesh.axes.iter().zip(sizes).map(|(ax, s)| format!("{}={s}", ax.name)).collect();
        spec.join(",")
    });
    let exe = compile(&dir, "prog", &case.src, spec.as_deref())?;
    let inputs = dir.join("in.safetensors");
    let named: Vec<(String, Tensor)> = (0..f.params.len()).map(|i| (f.param_name(i).to_string(), args[i].clone())).collect();
    pjc_tensor::write_safetensors(&inputs, &named).unwrap();
    let mut outs = vec![];
    for k in 0..if twice { 2 } else { 1 } {
        let out = dir.join(format!("out{k}.safetensors"));
        let a = vec!["--inputs".into(), inputs.display().to_string(), "--output".into(), out.display().to_string()];
        let o = launch_exe(Some(n), &exe, &a);
        if !o.status.success() {
            return Err(format!("mpirun -np {n} exited with {:?}:\n{}", o.status.code(), String::from_utf8_lossy(&o.stderr)));
        }
        let got = pjc_tensor::read_safetensors(&out).map_err(|e| e.to_string())?;
        for (i, w) in want.iter().enumerate() {
            let name = f.result_name(i);
            let g = got.iter().find(|(x, _)| *x == name).ok_or_else(|| format!("output '{name}' missing"))?;
            // Spec section 11's tolerance, or bit for bit (NaN payloads included).
            let tol = if case.exact { Tolerance::BITWISE } else { Tolerance::spec_long_sums(w.dtype()) };
            close(w, &g.1, tol).map_err(|e| format!("-np {n}, result '{name}': {e}"))?;
        }
        outs.push(got);
    }
    if twice {
        let bits = |o: &Vec<(String, Tensor)>| -> Vec<(String, Vec<u8>)> {
            o.iter().map(|(k, t)| (k.clone(), pjc_tensor::buf_to_le_bytes(&t.data))).collect()
        };
        if bits(&outs[0]) != bits(&outs[1]) {
            return Err(format!("-np {n}: two runs gave different bits"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn run_all(cases: &[Case], twice_at_most_devices: bool) {
    let most = cases.iter().map(|c| module_of(c).map(|m| m.mesh_or_single().device_count()).unwrap_or(0)).max().unwrap_or(0);
    let mut failures = vec![];
    for c in cases {
        let n = module_of(c).map(|m| m.mesh_or_single().device_count()).unwrap_or(0);
        let twice = twice_at_most_devices && n == most;
        if let Err(e) = run_case(c, twice) {
            failures.push(format!("{} (mesh {:?}): {e}", c.name, c.mesh));
        }
    }
    assert!(failures.is_empty(), "{} of {} runs failed:\n\n{}", failures.len(), cases.len(), failures.join("\n\n"));
}

/// Every mesh-size tuple with product 1, 2 or 4 whose sizes divide the original ones.
fn mesh_variants(sizes: &[u64]) -> Vec<Vec<u64>> {
    let mut out = vec![];
    let mut cur = vec![1u64; sizes.len()];
    fn rec(i: usize, sizes: &[u64], cur: &mut Vec<u64>, out: &mut Vec<Vec<u64>>) {
        if i == sizes.len() {
            if [1, 2, 4].contains(&cur.iter().product::<u64>()) {
                out.push(cur.clone());
            }
            return;
        }
        for s in 1..=sizes[i] {
            if sizes[i] % s == 0 {
                cur[i] = s;
                rec(i + 1, sizes, cur, out);
            }
        }
        cur[i] = 1;
    }
    rec(0, sizes, &mut cur, &mut out);
    out
}

/// Cases of one `func` program over the mesh variants that verify.
fn variants(name: &str, src: &str) -> Vec<Case> {
    let m = pjc_front::load(src).unwrap_or_else(|d| panic!("{}", pjc_front::render(name, src, &d)));
    let sizes: Vec<u64> = m.mesh_or_single().axes.iter().map(|a| a.size).collect();
    let mut cases = vec![];
    for v in mesh_variants(&sizes) {
        let c = Case { name: format!("{name} {v:?}"), src: src.to_string(), mesh: Some(v), exact: false };
        if module_of(&c).is_ok() {
            cases.push(c);
        }
    }
    assert!(!cases.is_empty(), "{name}: no mesh with 1, 2 or 4 devices verifies");
    cases
}

// ---- the programs -------------------------------------------------------------------

/// all_reduce of every kind over many dtypes on [x=N] (element counts not
/// divisible by N, to exercise the padded fixed-order reduction).
fn reductions(n: u64) -> String {
    format!(
        "mesh [x={n}]

spmd func @main(%a: f32[7,13] on [x, _], %b: i32[4] on [x], %c: bf16[2,3] on [_, x], %d: f16[6] on [x], %e: pred[5] on [x], %u: u8[4] on [x], %f: f64[3] on [x], %g: i64[2,2] on [x, _]) -> (sa: f32[7,13], pb: i32[4], mc: bf16[2,3], nd: f16[6], se: pred[5], ne: pred[5], su: u8[4], sf: f64[3], pg: i64[2,2], ma: f32[7,13], nb: i32[4], sd: f16[6], sc: bf16[2,3]) {{
  %sa = all_reduce %a {{axes=[x], kind=sum}}
  %pb = all_reduce %b {{axes=[x], kind=prod}}
  %mc = all_reduce %c {{axes=[x], kind=max}}
  %nd = all_reduce %d {{axes=[x], kind=min}}
  %se = all_reduce %e {{axes=[x], kind=sum}}
  %ne = all_reduce %e {{axes=[x], kind=min}}
  %su = all_reduce %u {{axes=[x], kind=sum}}
  %sf = all_reduce %f {{axes=[x], kind=sum}}
  %pg = all_reduce %g {{axes=[x], kind=prod}}
  %ma = all_reduce %a {{axes=[x], kind=max}}
  %nb = all_reduce %b {{axes=[x], kind=min}}
  %sd = all_reduce %d {{axes=[x], kind=sum}}
  %sc = all_reduce %c {{axes=[x], kind=sum}}
  return %sa, %pb, %mc, %nd, %se, %ne, %su, %sf, %pg, %ma, %nb, %sd, %sc
}}
"
    )
}

/// all_gather, reduce_scatter, all_to_all, collective_permute and axis_index
/// on [a=A, b=B], along leading and non-leading dims, over one axis and over
/// both axes in both orders.
fn collectives(a: u64, b: u64) -> String {
    let ab = a * b;
    format!(
        "mesh [a={a}, b={b}]

spmd func @main(%x: f32[4,6] on [a, b], %y: f32[3,{y1}] on [b, _], %z: bf16[2,{z1}] on [a, b], %w: i16[{w0},3,2] on [_, _, a], %p: pred[2,2] on [a, b], %q: i32[{q0},2] on [b, _], %u: u8[3,{u1}] on [a, _]) -> (g1: f32[4,{g1}] on [a, _], g2: f32[{g2},6] on [_, b], g3: f32[4,{g3}], g4: f32[{g4},6], rs1: f32[3,{rs1}] on [b, a], rs2: i32[4,2] on [(b, a), _], rs3: u8[3,2] on [a, b], t1: bf16[{t1},4] on [a, b], t2: i16[2,3,{t2}] on [_, _, a], t3: u8[3,{u1}] on [a, b], t4: f32[{t4a},{t4b}] on [a, b], c1: f32[4,6] on [a, b], c2: pred[2,2] on [a, b], c3: i32[{q0},2] on [(a, b), _], c4: u8[3,{u1}] on [a, b], ia: i32[1] on [a], ib: i32[1] on [b]) {{
  %g1 = all_gather %x {{axes=[b], dim=1}}
  %g2 = all_gather %x {{axes=[a], dim=0}}
  %g3 = all_gather %x {{axes=[b, a], dim=1}}
  %g4 = all_gather %x {{axes=[a, b], dim=0}}
  %rs1 = reduce_scatter %y {{axes=[a], dim=1, kind=sum}}
  %rs2 = reduce_scatter %q {{axes=[a], dim=0, kind=max}}
  %rs3 = reduce_scatter %u {{axes=[b, a], dim=1, kind=sum}}
  %t1 = all_to_all %z {{axes=[b], split_dim=1, concat_dim=0}}
  %t2 = all_to_all %w {{axes=[a], split_dim=0, concat_dim=2}}
  %t3 = all_to_all %u {{axes=[b, a], split_dim=1, concat_dim=1}}
  %t4 = all_to_all %y {{axes=[a], split_dim=1, concat_dim=0}}
  %c1 = collective_permute %x {{axes=[a], shift=1}}
  %c2 = collective_permute %p {{axes=[b], shift=-1}}
  %c3 = collective_permute %q {{axes=[a, b], shift=3}}
  %c4 = collective_permute %u {{axes=[b, a], shift=1}}
  %ia0 = axis_index {{axis=a}} : i32[]
  %ia = broadcast %ia0 : i32[1]
  %ib0 = axis_index {{axis=b}} : i32[]
  %ib = broadcast %ib0 : i32[1]
  return %g1, %g2, %g3, %g4, %rs1, %rs2, %rs3, %t1, %t2, %t3, %t4, %c1, %c2, %c3, %c4, %ia, %ib
}}
",
        y1 = 4 * ab,
        z1 = 4 * b,
        w0 = 2 * a,
        q0 = 4 * a,
        u1 = 2 * ab,
        g1 = 6 * b,
        g2 = 4 * a,
        g3 = 6 * ab,
        g4 = 4 * ab,
        rs1 = 4 * b,
        t1 = 2 * b,
        t2 = 2 * a,
        t4a = 3 * a,
        t4b = 4 * b,
    )
}

const MEGATRON: &str = "// Megatron-style MLP: column-parallel then row-parallel over model, batch over data.
mesh [data=2, model=2]

func @main(%x: f32[8,16] on [data, _], %w1: f32[16,32] on [_, model], %b1: f32[32] on [model], %w2: f32[32,16] on [model, _]) -> (y: f32[8,16] on [data, _]) {
  %h = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[8,32]
  %bb = broadcast %b1 {dims=[1]} : f32[8,32]
  %s = add %h, %bb
  %z = constant 0.0 : f32[8,32]
  %a = max %s, %z
  %y = dot_general %a, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[8,16]
  return %y
}
";

const DP_GRAD: &str = "// One data-parallel SGD step through grad: the batch is split over data.
mesh [data=4]

func @loss(%w: f32[6,3], %b: f32[3], %x: f32[16,6] on [data, _], %y: f32[16,3] on [data, _]) -> (l: f32[]) {
  %h = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[16,3]
  %bb = broadcast %b {dims=[1]} : f32[16,3]
  %o = add %h, %bb
  %t = tanh %o
  %d = sub %t, %y
  %d2 = mul %d, %d
  %l = reduce %d2 {dims=[0,1], kind=sum} : f32[]
  return %l
}

func @main(%w: f32[6,3], %b: f32[3], %x: f32[16,6] on [data, _], %y: f32[16,3] on [data, _]) -> (loss: f32[], w: f32[6,3], b: f32[3]) {
  %l, %gw, %gb = grad @loss(%w, %b, %x, %y) {wrt=[0,1]} : (f32[], f32[6,3], f32[3])
  %lw = constant 0.05 : f32[6,3]
  %uw = mul %gw, %lw
  %w2 = sub %w, %uw
  %lb = constant 0.05 : f32[3]
  %ub = mul %gb, %lb
  %b2 = sub %b, %ub
  return %l, %w2, %b2
}
";

const SHARD_MAP: &str = "// A func calling a spmd func (shard_map): global types at the call site.
mesh [data=4]

spmd func @local_sum(%x: f32[4,8] on [data, _]) -> (s: f32[8]) {
  %p = reduce %x {dims=[0], kind=sum}
  %s = all_reduce %p {axes=[data], kind=sum}
  return %s
}

func @main(%x: f32[16,8], %w: f32[8]) -> (s: f32[8], t: f32[8]) {
  %s = call @local_sum(%x) : f32[8]
  %t = mul %s, %w
  return %s, %t
}
";

// ---- the tests ----------------------------------------------------------------------

#[test]
fn every_collective_kind_matches_the_interpreter_bit_for_bit() {
    let mut cases = vec![];
    for n in [1, 2, 4] {
        cases.push(Case { name: format!("reductions x={n}"), src: reductions(n), mesh: None, exact: true });
    }
    for (a, b) in [(1, 1), (2, 1), (1, 2), (2, 2)] {
        cases.push(Case { name: format!("collectives a={a} b={b}"), src: collectives(a, b), mesh: None, exact: true });
    }
    run_all(&cases, true);
}

#[test]
fn one_device_programs_run_without_mpirun() {
    // The Megatron MLP compiled for [1, 1], run as ./prog.bin (no mpirun), and
    // with --device cpu; compared with the interpreter.
    let dir = scratch();
    let mut seed = 7u64;
    let mut mm = pjc_front::parse(MEGATRON).unwrap();
    for a in &mut mm.mesh.as_mut().unwrap().axes {
        a.size = 1;
    }
    pjc_front::verify(&mut mm).unwrap();
    let fm = &mm.funcs[mm.func_by_name("main").unwrap()];
    let args: Vec<Tensor> = fm.params.iter().map(|&p| random(fm.ty(p), &mut seed)).collect();
    let named: Vec<(String, Tensor)> = (0..args.len()).map(|i| (fm.param_name(i).to_string(), args[i].clone())).collect();
    let inputs = dir.join("in.safetensors");
    pjc_tensor::write_safetensors(&inputs, &named).unwrap();
    let want = pjc_interp::eval(&mm, mm.func_by_name("main").unwrap(), args).unwrap();
    let exe = compile(&dir, "mlp", MEGATRON, Some("data=1,model=1")).unwrap();
    for extra in [&[][..], &["--device", "cpu"][..], &["--device", "auto"][..]] {
        let out = dir.join("single.safetensors");
        let mut a = vec!["--inputs".to_string(), inputs.display().to_string(), "--output".into(), out.display().to_string()];
        a.extend(extra.iter().map(|s| s.to_string()));
        let o = launch_exe(None, &exe, &a);
        assert!(o.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&o.stderr));
        let got = pjc_tensor::read_safetensors(&out).unwrap();
        assert_close(&want[0], &got[0].1, Tolerance::spec_long_sums(want[0].dtype()), &format!("{extra:?}"));
    }
    // --device cuda where CUDA cannot run (CI has no GPU) is one clear error;
    // on a GPU machine it must work (scripts/gpu-check.sh compares it).
    let o = launch_exe(None, &exe, &["--inputs".into(), inputs.display().to_string(), "--device".into(), "cuda".into()]);
    let err = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() {
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.starts_with("error: --device cuda: ") && err.lines().count() == 1 && !err.contains("panicked"), "{err}");
    }
    // Outputs as a directory of NAME.npy.
    let o = launch_exe(None, &exe, &["--inputs".into(), inputs.display().to_string(), "--output".into(), dir.join("npy").display().to_string()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_close(&want[0], &pjc_tensor::read_npy(&dir.join("npy/y.npy")).unwrap(), Tolerance::spec_long_sums(want[0].dtype()), "npy/y.npy");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn megatron_mlp_and_data_parallel_grad_step() {
    let mut cases = variants("megatron", MEGATRON);
    cases.extend(variants("dp_grad", DP_GRAD));
    cases.push(Case { name: "shard_map".into(), src: SHARD_MAP.into(), mesh: None, exact: false });
    run_all(&cases, true);
}

/// sort, top_k and scatter set/max/min move or pick elements, so every
/// process count must give the interpreter's bits: sorts along split
/// dimensions (gathered) and along unsplit ones, top_k over a split last
/// dimension, scatters into a split base with split (gathered) indices and
/// duplicates, and the same bits on a second run.
const SORT_SCATTER: &str = "mesh [data=2, model=2]

func @main(%k: f32[8,12] on [data, model], %w: f32[8,12] on [data, _], %v: i32[8,12] on [_, model], %b: f32[10,12] on [_, model], %i: i32[8] on [data], %u: f32[8,12] on [data, model])
    -> (a: f32[8,12], ai: i32[8,12], c: f32[8,12] on [_, model], cv: i32[8,12] on [_, model], d: f32[8,12] on [data, _],
        t: f32[8,5] on [data, _], ti: i32[8,5] on [data, _], s: f32[10,12], x: f32[10,12] on [_, model], n: f32[10,12]) {
  %io = iota {dim=1} : i32[8,12]
  %a, %ai = sort %k, %io {dim=1, descending=true}
  %c, %cv = sort %k, %v {dim=0, num_keys=2}
  %d = sort %w {dim=1}
  %t, %ti = top_k %k {k=5}
  %s = scatter %b, %i, %u {axis=0, kind=set}
  %x = scatter %b, %i, %u {axis=0, kind=max}
  %n = scatter %b, %i, %u {axis=0, kind=min}
  return %a, %ai, %c, %cv, %d, %t, %ti, %s, %x, %n
}";

#[test]
fn sort_top_k_and_scatter_match_eval_bit_for_bit() {
    let mut cases = variants("sort_scatter", SORT_SCATTER);
    assert_eq!(cases.len(), 4, "meshes [1,1], [1,2], [2,1], [2,2]");
    for c in &mut cases {
        c.exact = true;
    }
    run_all(&cases, true);
}

#[test]
fn partition_test_programs() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/partition"))
        .expect("tests/partition")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "pir"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "tests/partition has only {} programs", files.len());
    let mut cases = vec![];
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let vs = variants(&name, &src);
        // Reproducibility at the largest N of each program.
        let most = vs.iter().map(|c| c.mesh.as_ref().unwrap().iter().product::<u64>()).max().unwrap();
        let mut done_twice = false;
        for c in vs {
            let n: u64 = c.mesh.as_ref().unwrap().iter().product();
            let twice = n == most && !done_twice;
            done_twice |= twice;
            cases.push((c, twice));
        }
    }
    let mut failures = vec![];
    for (c, twice) in &cases {
        if let Err(e) = run_case(c, *twice) {
            failures.push(format!("{} (mesh {:?}): {e}", c.name, c.mesh));
        }
    }
    assert!(failures.is_empty(), "{} of {} runs failed:\n\n{}", failures.len(), cases.len(), failures.join("\n\n"));
}

/// An executable compiled with `--cpu-levels all` carries host kernels for
/// x86-64-v2, -v3 and -v4 and loads the best one the CPU runs;
/// `PJC_CPU_LEVEL` caps the choice. Every build
/// this machine can run gives the interpreter's results (transcendental
/// functions through libmvec's SSE, AVX2 and AVX-512 variants, reductions,
/// bf16 rounding); a level that does not exist or that the CPU cannot run is
/// one clear error.
#[test]
fn every_cpu_level_build_runs_and_agrees() {
    let src = "func @main(%x: f32[37,129], %b: bf16[37,129]) -> (y: f32[37], z: bf16[37,129], m: f32[129]) {
  %e = exp %x
  %t = tanh %x
  %l = log1p %e
  %s = add %t, %l
  %y = reduce %s {dims=[1], kind=sum} : f32[37]
  %c = convert %s : bf16[37,129]
  %z = mul %c, %b
  %m = reduce %x {dims=[0], kind=max} : f32[129]
  return %y, %z, %m
}
";
    let dir = scratch();
    std::fs::write(dir.join("levels.pir"), src).unwrap();
    let exe = dir.join("levels.bin");
    let o = Command::new(env!("CARGO_BIN_EXE_pjc")).arg("compile").arg(dir.join("levels.pir")).args(["--cpu-levels", "all", "-o"]).arg(&exe).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bad = Command::new(env!("CARGO_BIN_EXE_pjc")).arg("compile").arg(dir.join("levels.pir")).args(["--cpu-levels", "v3,v7", "-o"]).arg(dir.join("bad.bin")).output().unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(bad.status.code() == Some(2) && err.starts_with("error: --cpu-levels: 'v7' is not a CPU level") && !dir.join("bad.bin").exists(), "{err}");
    let m = pjc_front::load(src).unwrap();
    let f = &m.funcs[m.func_by_name("main").unwrap()];
    let mut seed = 11u64;
    let args: Vec<Tensor> = f.params.iter().map(|&p| random(f.ty(p), &mut seed)).collect();
    let named: Vec<(String, Tensor)> = (0..args.len()).map(|i| (f.param_name(i).to_string(), args[i].clone())).collect();
    let inputs = dir.join("in.safetensors");
    pjc_tensor::write_safetensors(&inputs, &named).unwrap();
    let want = pjc_interp::eval(&m, m.func_by_name("main").unwrap(), args).unwrap();
    let run = |level: &str| {
        let out = dir.join(format!("{level}.safetensors"));
        let o = Command::new(&exe)
            .args(["--inputs", &inputs.display().to_string(), "--output", &out.display().to_string()])
            .env("PJC_CPU_LEVEL", level)
            .output()
            .unwrap();
        (o, out)
    };
    let mut ran = vec![];
    for level in pjc_plan::CpuLevel::ALL {
        let runs = pjc_host::cpulevel::missing(level).is_empty();
        let (o, out) = run(level.name());
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        if !runs {
            assert_eq!(o.status.code(), Some(2), "{}: {err}", level.name());
            assert!(err.contains("cannot run") && !err.contains("panicked"), "{err}");
            continue;
        }
        assert!(o.status.success(), "{}: {err}", level.name());
        let got = pjc_tensor::read_safetensors(&out).unwrap();
        for (k, w) in want.iter().enumerate() {
            let name = f.result_name(k);
            let g = &got.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no result {name}")).1;
            assert_close(w, g, Tolerance::spec_long_sums(w.dtype()).with_atol(1e-6), &format!("{} result {name}", level.name()));
        }
        ran.push(level);
    }
    assert!(ran.contains(&pjc_plan::CpuLevel::V2), "the x86-64-v2 build must run on any x86-64 CI machine");
    let (o, _) = run("x86-64-v9");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert!(errors.len() == 1 && errors[0].starts_with("error: PJC_CPU_LEVEL=x86-64-v9 is not a CPU level") && !err.contains("panicked"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn wrong_process_count_is_a_clear_error() {
    let dir = scratch();
    let exe = compile(&dir, "p", DP_GRAD, None).unwrap();
    let args = vec!["--output".into(), dir.join("o.safetensors").display().to_string()];
    // mesh [data=4] on 2 processes, and on 1 process without mpirun.
    for (np, procs) in [(Some(2), 2), (None, 1)] {
        let o = launch_exe(np, &exe, &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "np {np:?}: exit {:?}, stderr:\n{err}", o.status.code());
        let want = format!("has 4 devices, but {procs} process");
        assert!(err.contains(&want) && err.contains("mpirun -np 4"), "np {np:?}: message should name both numbers ({want}):\n{err}");
        assert_eq!(err.matches("error:").count(), 1, "one message, from one rank:\n{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // --mesh at compile time changes the device count the check uses.
    let exe2 = compile(&dir, "p2", DP_GRAD, Some("data=2")).unwrap();
    let o = launch_exe(Some(4), &exe2, &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("has 2 devices, but 4 processes"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes `named` as NAME.npy files in `dir`.
fn write_npys(dir: &Path, named: &[(String, Tensor)]) {
    for (n, t) in named {
        pjc_tensor::write_npy(&dir.join(format!("{n}.npy")), t).unwrap();
    }
}

#[test]
fn loop_mode_trains_and_matches_repeated_eval_steps() {
    // DP_GRAD on 4 processes for 6 steps with x and y fed from datasets of
    // M = 40 examples (batch 16: steps wrap around the dataset), against six
    // interpreter steps that feed w and b back and slice the same batches.
    let dir = scratch();
    let m = pjc_front::load(DP_GRAD).unwrap();
    let mut m = m;
    pjc_transforms::expand(&mut m).unwrap();
    let entry = m.func_by_name("main").unwrap();
    let mut seed = 11u64;
    let (examples, batch, steps) = (40usize, 16usize, 6u64);
    let x = random(&pjc_ir::TensorType::new(DType::F32, vec![examples as u64, 6]), &mut seed);
    let y = random(&pjc_ir::TensorType::new(DType::F32, vec![examples as u64, 3]), &mut seed);
    let y = pjc_tensor::unary(pjc_ir::UnaryOp::Tanh, &y).unwrap();
    let w = random(&pjc_ir::TensorType::new(DType::F32, vec![6, 3]), &mut seed);
    let b = random(&pjc_ir::TensorType::new(DType::F32, vec![3]), &mut seed);
    write_npys(&dir, &[("x".into(), x.clone()), ("y".into(), y.clone()), ("w".into(), w.clone()), ("b".into(), b.clone())]);
    let rows = |t: &Tensor, s: u64| -> Tensor {
        let idx: Vec<i128> = (0..batch).map(|i| ((s as usize * batch + i) % examples) as i128).collect();
        let idx = Tensor::from_scalars(DType::I64, vec![batch], &idx.iter().map(|&v| pjc_tensor::Scalar::Int(v)).collect::<Vec<_>>());
        pjc_tensor::gather(t, &idx, 0).unwrap()
    };
    let (mut w_, mut b_) = (w, b);
    let mut losses = vec![];
    for s in 0..steps {
        let out = pjc_interp::eval(&m, entry, vec![w_.clone(), b_.clone(), rows(&x, s), rows(&y, s)]).unwrap();
        losses.push(out[0].clone());
        w_ = out[1].clone();
        b_ = out[2].clone();
    }
    let exe = compile(&dir, "train", DP_GRAD, None).unwrap();
    let p = |n: &str| dir.join(n).display().to_string();
    let mut args: Vec<String> = vec!["--input".into(), format!("w={}", p("w.npy")), "--input".into(), format!("b={}", p("b.npy"))];
    args.extend(["--data".into(), format!("x={}", p("x.npy")), "--data".into(), format!("y={}", p("y.npy"))]);
    args.extend(["--steps".into(), steps.to_string(), "--log-every".into(), "2".into(), "--output".into(), p("out.safetensors")]);
    let o = launch_exe(Some(4), &exe, &args);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = pjc_tensor::read_safetensors(&dir.join("out.safetensors")).unwrap();
    let get = |n: &str| got.iter().find(|(k, _)| k == n).unwrap().1.clone();
    assert_close(&w_, &get("w"), Tolerance::spec_long_sums(w_.dtype()), "w");
    assert_close(&b_, &get("b"), Tolerance::spec_long_sums(b_.dtype()), "b");
    assert_close(&losses[steps as usize - 1], &get("loss"), Tolerance::spec_long_sums(losses[steps as usize - 1].dtype()), "loss");
    // Rank 0 logged steps 2, 4, 6 with the loss of those steps.
    let logged: Vec<&str> = stdout.lines().filter(|l| l.starts_with("step ")).collect();
    assert_eq!(logged.len(), 3, "{stdout}");
    for (line, s) in logged.iter().zip([2usize, 4, 6]) {
        assert!(line.starts_with(&format!("step {s}/6: loss=")), "{line}");
        assert!(line.contains("steps/s") && line.contains("examples/s"), "{line}");
        let v: f64 = line.split("loss=").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        let want = losses[s - 1].data.lanes();
        let pjc_tensor::Lanes::F(want) = want else { panic!() };
        assert!((v - want[0]).abs() <= 1e-4 * want[0].abs().max(1.0), "step {s}: logged {v}, interpreter {}", want[0]);
    }
    // Training lowers the loss.
    let first = match losses[0].data.lanes() { pjc_tensor::Lanes::F(v) => v[0], _ => panic!() };
    let last = match losses[5].data.lanes() { pjc_tensor::Lanes::F(v) => v[0], _ => panic!() };
    assert!(last < first, "loss went from {first} to {last}");
    // Same N, same bits.
    let o2 = launch_exe(Some(4), &exe, &args.iter().map(|a| a.replace("out.safetensors", "out2.safetensors")).collect::<Vec<_>>());
    assert!(o2.status.success());
    let bits = |f: &str| std::fs::read(dir.join(f)).unwrap();
    assert_eq!(bits("out.safetensors"), bits("out2.safetensors"), "two runs gave different bits");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn input_errors_are_one_clear_line_and_no_hang() {
    let dir = scratch();
    let exe = compile(&dir, "p", DP_GRAD, None).unwrap();
    let mut seed = 3u64;
    let t = |shape: Vec<u64>, seed: &mut u64| random(&pjc_ir::TensorType::new(DType::F32, shape), seed);
    let good = [("w", t(vec![6, 3], &mut seed)), ("b", t(vec![3], &mut seed)), ("x", t(vec![16, 6], &mut seed)), ("y", t(vec![16, 3], &mut seed))];
    write_npys(&dir, &good.iter().map(|(n, t)| (n.to_string(), t.clone())).collect::<Vec<_>>());
    pjc_tensor::write_npy(&dir.join("bad_shape.npy"), &t(vec![5, 3], &mut seed)).unwrap();
    pjc_tensor::write_npy(&dir.join("bad_dtype.npy"), &Tensor::new(vec![6, 3], Buf::I32(vec![0; 18]))).unwrap();
    pjc_tensor::write_npy(&dir.join("x40.npy"), &t(vec![40, 6], &mut seed)).unwrap();
    pjc_tensor::write_npy(&dir.join("y41.npy"), &t(vec![41, 3], &mut seed)).unwrap();
    std::fs::write(dir.join("corrupt.npy"), b"\x93NUMPY garbage").unwrap();
    let p = |n: &str| dir.join(n).display().to_string();
    let base = |skip: &str| -> Vec<String> {
        ["w", "b", "x", "y"].iter().filter(|&&n| n != skip).flat_map(|n| ["--input".to_string(), format!("{n}={}", p(&format!("{n}.npy")))]).collect()
    };
    let with = |skip: &str, extra: &[String]| -> Vec<String> {
        let mut a = base(skip);
        a.extend(extra.iter().cloned());
        a
    };
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        ("missing input", with("b", &[]), "no input for parameter 'b'"),
        ("unknown name", with("", &["--input".into(), format!("bogus={}", p("w.npy"))]), "has no parameter 'bogus'"),
        ("wrong shape", with("w", &["--input".into(), format!("w={}", p("bad_shape.npy"))]), "is f32[5,3], but parameter %w of @main is f32[6,3]"),
        ("wrong dtype", with("w", &["--input".into(), format!("w={}", p("bad_dtype.npy"))]), "is i32[6,3], but parameter %w"),
        ("missing file", with("w", &["--input".into(), format!("w={}", p("nope.npy"))]), "nope.npy"),
        ("corrupt file", with("w", &["--input".into(), format!("w={}", p("corrupt.npy"))]), "corrupt.npy"),
        (
            "datasets of different lengths",
            {
                let mut a = with("x", &[]);
                let y = a.iter().position(|s| s.starts_with("y=")).unwrap();
                a.drain(y - 1..=y);
                a.extend(["--data".into(), format!("x={}", p("x40.npy")), "--data".into(), format!("y={}", p("y41.npy")), "--steps".into(), "2".into()]);
                a
            },
            "datasets of different lengths",
        ),
        ("bad NAME=PATH", with("", &["--input".into(), "w".into()]), "must look like NAME=PATH"),
    ];
    for (what, args, want) in cases {
        let o = launch_exe(Some(4), &exe, &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{what}: exit {:?}\n{err}", o.status.code());
        assert!(err.contains(want), "{what}: expected '{want}' in:\n{err}");
        assert_eq!(err.lines().filter(|l| l.starts_with("error:")).count(), 1, "{what}: one error line:\n{err}");
        assert!(!err.contains("panicked"), "{what}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_bare_runner_and_damaged_executables_are_clear_errors() {
    let o = Command::new(env!("CARGO_BIN_EXE_pjc-runner")).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("carries no program"), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = scratch();
    let exe = compile(&dir, "p", MEGATRON, Some("data=1,model=1")).unwrap();
    let mut bytes = std::fs::read(&exe).unwrap();
    let n = bytes.len();
    bytes[n - 24] ^= 1; // the trailer's payload offset
    let bad = dir.join("bad.bin");
    std::fs::write(&bad, &bytes).unwrap();
    std::fs::set_permissions(&bad, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let o = launch_exe(None, &bad, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error:") && !err.contains("panicked"), "{err}");
    // Inside the artefact (it starts right after the runner's bytes: find
    // its magic): a flipped byte of the plan fails the hash; another format
    // or another schema (a runner built from other sources) is refused
    // before anything is decoded.
    let good = std::fs::read(&exe).unwrap();
    let at = good.windows(8).rposition(|w| w == b"PJCARTF\0").expect("the artefact's magic");
    for (what, offset, want) in [
        ("body", good.len() - 200, "this executable is damaged: its program fails its hash check"),
        ("format", at + 8, "cannot run with this runtime: its program has format"),
        ("schema", at + 12, "cannot run with this runtime: its program was compiled by pjc"),
    ] {
        let mut bytes = good.clone();
        bytes[offset] ^= 0x40;
        std::fs::write(&bad, &bytes).unwrap();
        let o = launch_exe(None, &bad, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{what}: {err}");
        assert!(err.starts_with("error:") && err.contains(want) && err.lines().count() == 1, "{what}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect();
    v.sort();
    v
}

#[test]
fn a_failed_output_write_keeps_the_earlier_result() {
    // A 1 MiB result written under a 400 KiB file-size limit (RLIMIT_FSIZE
    // with SIGXFSZ ignored: the write fails with EFBIG, as on a full disk).
    let dir = scratch();
    let src = "func @main(%x: f32[512,512]) -> (y: f32[512,512]) {\n  %y = add %x, %x\n  return %y\n}\n";
    let exe = compile(&dir, "big", src, None).unwrap();
    let x = Tensor::new(vec![512, 512], Buf::F32((0..512 * 512).map(|i| i as f32).collect()));
    pjc_tensor::write_npy(&dir.join("x.npy"), &x).unwrap();
    std::fs::create_dir_all(dir.join("npy")).unwrap();
    std::fs::write(dir.join("out.safetensors"), b"the earlier result").unwrap();
    std::fs::write(dir.join("npy/y.npy"), b"the earlier y").unwrap();
    let before = names_in(&dir);
    for (out, earlier) in [("out.safetensors", "out.safetensors"), ("npy", "npy/y.npy")] {
        let o = Command::new("bash")
            .arg("-c")
            .arg("trap '' XFSZ; ulimit -f 400; exec \"$0\" \"$@\"")
            .arg(&exe)
            .args(["--input", "x=x.npy", "--device", "cpu", "--output", out])
            .current_dir(&dir)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(lines[0].contains("cannot write '") && lines[0].contains("File too large"), "{err}");
        let kept = std::fs::read(dir.join(earlier)).unwrap();
        assert!(kept.starts_with(b"the earlier"), "{earlier} was overwritten ({} bytes)", kept.len());
    }
    assert_eq!(names_in(&dir), before, "no temporaries");
    assert_eq!(names_in(&dir.join("npy")), ["y.npy"], "no temporaries");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_program_too_large_for_memory_is_one_error_line() {
    // Results of f32[100000,100000,100000] (4 * 10^15 bytes): `pjc compile -o`
    // does not allocate them; the executable refuses before allocating.
    let dir = scratch();
    let one = "func @main(%x: f32[]) -> (y: f32[100000,100000,100000]) {\n  %y = broadcast %x {dims=[]} : f32[100000,100000,100000]\n  return %y\n}\n";
    let two = "mesh [data=2]\n\nfunc @main(%x: f32[]) -> (y: f32[100000,100000,100000] on [data, _, _]) {\n  %y = broadcast %x {dims=[]} : f32[100000,100000,100000]\n  return %y\n}\n";
    pjc_tensor::write_npy(&dir.join("x.npy"), &Tensor::new(vec![], Buf::F32(vec![1.0]))).unwrap();
    let args = vec!["--input".to_string(), format!("x={}", dir.join("x.npy").display()), "--device".into(), "cpu".into()];
    for (name, src, np) in [("huge1", one, None), ("huge2", two, Some(2))] {
        let exe = compile(&dir, name, src, None).unwrap();
        let o = launch_exe(np, &exe, &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(lines.len(), 1, "{name}: {err}");
        assert!(lines[0].starts_with("error: not enough memory: ") && lines[0].contains("bytes") && lines[0].contains("f32[100000,100000,100000]"), "{name}: {err}");
        assert!(!err.contains("memory allocation") && !err.contains("panicked"), "{name}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--memory-limit`: an executable whose buffer plan needs more than the
/// limit refuses to start, with the plan's report (its peak, and what is live
/// then, as `pjc explain` says it); within the limit it runs.
#[test]
fn a_memory_limit_below_the_plan_refuses_to_start_with_the_report() {
    let dir = scratch();
    // %big (f32[256,256], 256 KiB) is live while the product reads it.
    let src = "func @main(%x: f32[256], %w: f32[256,8]) -> (s: f32[256,8]) {\n  %b = broadcast %x {dims=[1]} : f32[256,256]\n  %big = exp %b\n  %s = dot_general %big, %w {lhs_contract=[1], rhs_contract=[0]} : f32[256,8]\n  return %s\n}\n";
    pjc_tensor::write_npy(&dir.join("x.npy"), &Tensor::new(vec![256], Buf::F32(vec![0.5; 256]))).unwrap();
    pjc_tensor::write_npy(&dir.join("w.npy"), &Tensor::new(vec![256, 8], Buf::F32(vec![0.25; 2048]))).unwrap();
    let exe = compile(&dir, "limited", src, None).unwrap();
    let mut args = vec!["--device".to_string(), "cpu".into()];
    for n in ["x", "w"] {
        args.extend(["--input".to_string(), format!("{n}={}", dir.join(format!("{n}.npy")).display())]);
    }
    let with = |limit: &str| {
        let mut a = args.clone();
        a.extend(["--memory-limit".to_string(), limit.to_string(), "--output".into(), dir.join(format!("out-{limit}.safetensors")).display().to_string()]);
        launch_exe(None, &exe, &a)
    };
    let o = with("100K");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    let l = lines[0];
    assert!(l.starts_with("error: not enough memory: the program's buffers need ") && l.contains("more than --memory-limit 102400"), "{err}");
    assert!(l.contains("most memory live at once: ") && l.contains("%big f32[256,256] (temporary) 262144 B"), "{err}");
    assert!(!dir.join("out-100K.safetensors").exists(), "nothing written");
    let o = with("1M");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dir.join("out-1M.safetensors").exists());
    let o = with("lots");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("'lots' is not a size"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Collectives overlap compute: an all-reduce whose result is needed only at
/// the end runs on each rank's collectives thread while the independent
/// products run (the plan's start/done pair), visible in `--trace` on its
/// own track; at least half of its time overlaps the step loop's compute, and
/// the results are bitwise those of blocking collectives.
#[test]
fn an_asynchronous_all_reduce_overlaps_the_independent_compute() {
    let dir = scratch();
    let src = "mesh [data=2]\n\nfunc @main(%x: f32[256,1024] on [_, data], %w: f32[1024,128] on [data, _], %y: f32[512,1024], %v: f32[1024,1024]) -> (r: f32[256,128], s: f32[512,1024]) {\n  %a = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[256,128]\n  %b = dot_general %y, %v {lhs_contract=[1], rhs_contract=[0]} : f32[512,1024]\n  %c = tanh %b\n  %d = dot_general %c, %v {lhs_contract=[1], rhs_contract=[0]} : f32[512,1024]\n  %e = tanh %d\n  %f = dot_general %e, %v {lhs_contract=[1], rhs_contract=[0]} : f32[512,1024]\n  return %a, %f\n}\n";
    let exe = compile(&dir, "overlap", src, None).unwrap();
    let plan = Command::new(env!("CARGO_BIN_EXE_pjc")).arg("compile").arg(dir.join("overlap.pir")).args(["--emit", "plan"]).output().unwrap();
    let plan = String::from_utf8_lossy(&plan.stdout);
    assert!(plan.contains("collective start all_reduce") && plan.contains("done all_reduce"), "{plan}");
    let mut seed = 7u64;
    let mut args = vec!["--steps".to_string(), "4".into()];
    for (n, shape) in [("x", vec![256, 1024]), ("w", vec![1024, 128]), ("y", vec![512, 1024]), ("v", vec![1024, 1024])] {
        let t = random(&pjc_ir::TensorType::new(pjc_ir::DType::F32, shape), &mut seed);
        let t = Tensor::new(t.shape.clone(), Buf::F32(match t.data { Buf::F32(v) => v.iter().map(|x| x * 0.03).collect(), _ => unreachable!() }));
        pjc_tensor::write_npy(&dir.join(format!("{n}.npy")), &t).unwrap();
        args.extend(["--input".to_string(), format!("{n}={}", dir.join(format!("{n}.npy")).display())]);
    }
    let run = |on: &str| {
        let mut a = args.clone();
        a.extend(["--output".to_string(), dir.join(format!("out{on}.safetensors")).display().to_string(), "--trace".into(), dir.join(format!("t{on}.json")).display().to_string()]);
        let o = launch_exe_env(Some(2), &exe, &a, &[("PJC_ASYNC_COLLECTIVES", on)]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    run("1");
    run("0");
    assert_eq!(std::fs::read(dir.join("out1.safetensors")).unwrap(), std::fs::read(dir.join("out0.safetensors")).unwrap(), "bitwise the same results");
    let trace: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("t1.json")).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let (mut coll, mut hidden) = (0.0f64, 0.0f64);
    for rank in 0..2 {
        let (colls, h) = common::collective_overlap(events, rank, 1);
        assert_eq!(colls.len(), 4, "one all-reduce per step on its own track, rank {rank}: {colls:?}");
        coll += colls.iter().map(|&(s, e)| e - s).sum::<f64>();
        hidden += h;
    }
    assert!(hidden >= 0.5 * coll, "only {hidden:.0} of {coll:.0} us of collective time overlaps compute");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without libdevice, `pjc compile` builds CPU code only by default and the
/// executable says why; `--target all` asks for PTX anyway, which kernels
/// without math functions get and kernels calling them cannot (exit 2);
/// `--target cpu` leaves it out, `--target cuda` leaves out the CPU kernels
/// (the executable then says it needs a GPU).
#[test]
fn list_devices_and_pjc_devices_say_when_there_is_no_gpu_code_and_why() {
    // PJC_LIBDEVICE naming a missing file: the machine has no libdevice.
    let dir = scratch();
    let missing = dir.join("no/libdevice.10.bc");
    let no_lib = [("PJC_LIBDEVICE", missing.display().to_string())];
    let src = "func @main(%x: f32[8]) -> (y: f32[8]) {\n  %y = tanh %x\n  return %y\n}\n";
    let plain = "func @main(%x: f32[8]) -> (y: f32[8]) {\n  %y = add %x, %x\n  return %y\n}\n";
    let compile_with = |name: &str, text: &str, flags: &[&str]| {
        std::fs::write(dir.join(format!("{name}.pir")), text).unwrap();
        let exe = dir.join(format!("{name}.bin"));
        let o = Command::new(env!("CARGO_BIN_EXE_pjc")).arg("compile").arg(dir.join(format!("{name}.pir"))).arg("-o").arg(&exe).args(flags).envs(no_lib.clone()).output().unwrap();
        (exe, o)
    };
    let list = |exe: &Path| {
        let o = launch_exe(None, exe, &["--list-devices".to_string()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let gpu_line = |out: &str| out.lines().find(|l| l.starts_with("gpu code: ")).unwrap_or_else(|| panic!("no gpu code line:\n{out}")).to_string();
    // The default: CPU code only, silently, with the reason recorded.
    for (name, text) in [("math", src), ("plain", plain)] {
        let (exe, o) = compile_with(name, text, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success() && err.is_empty(), "{name}: {err}");
        let out = list(&exe);
        let line = gpu_line(&out);
        assert!(line.starts_with("gpu code: none, this executable runs on CPUs only (when it was compiled: "), "{out}");
        assert!(line.contains(&format!("PJC_LIBDEVICE is '{}', which is not a file", missing.display())) && line.contains("--target all"), "{out}");
        assert!(out.lines().any(|l| l.starts_with("rank 0: ") && l.contains("not CUDA: the executable has no GPU code")), "{out}");
    }
    // --target all: kernels without math functions need no libdevice.
    let (exe, o) = compile_with("plain_all", plain, &["--target", "all"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(gpu_line(&list(&exe)).starts_with("gpu code: PTX for sm_"));
    // ... and kernels calling them cannot: one error line, exit 2, no file.
    let (exe, o) = compile_with("math_all", src, &["--target", "all"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error: no GPU code for --target all: ") && err.contains(&format!("cannot read libdevice '{}'", missing.display())) && err.lines().count() == 1, "{err}");
    assert!(!exe.exists());
    // --target cpu says so.
    let (exe, o) = compile_with("plain_cpu", plain, &["--target", "cpu"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(gpu_line(&list(&exe)).contains("(it was compiled with pjc compile --target cpu)"));
    // --target cuda: no CPU kernels; on a machine without a GPU, one clear error.
    let (exe, o) = compile_with("plain_cuda", plain, &["--target", "cuda"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let x = Tensor::new(vec![8], Buf::F32(vec![1.0; 8]));
    pjc_tensor::write_npy(&dir.join("x.npy"), &x).unwrap();
    let o = launch_exe(None, &exe, &["--input".into(), format!("x={}", dir.join("x.npy").display()), "--output".into(), dir.join("out").display().to_string()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("carries no CPU kernels (it was compiled with pjc compile --target cuda)"), "{err}");
    // `pjc devices` says what executables compiled here get.
    let o = Command::new(env!("CARGO_BIN_EXE_pjc")).arg("devices").envs(no_lib.clone()).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    let line = gpu_line(&out);
    assert!(line.contains("run on CPUs only") && line.contains(&format!("PJC_LIBDEVICE is '{}', which is not a file", missing.display())), "{out}");
    let o = Command::new(env!("CARGO_BIN_EXE_pjc")).arg("devices").env_remove("PJC_LIBDEVICE").output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let line = gpu_line(&out);
    assert!(line.contains("carry PTX (libdevice: ") || line.contains("libdevice.10.bc not found (PJC_LIBDEVICE is not set; looked at "), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Control flow in compiled executables: the programs of tests/partition
/// with `while`, `scan` or `switch` (collectives inside bodies, bodies shared
/// by two loops, scanned operands resharded on entry, switch branches that
/// reshard) on exactly 1, 2 and 4 processes, reproducible bit for bit at 4,
/// the single-device ones of tests/control on one process, the spmd numeric
/// cases with collectives inside loop and branch bodies, and a loop-mode run
/// whose step is a `while` (the carried weights fed back across steps, the
/// loop's own state swapped inside each).
#[test]
fn control_flow_runs_under_mpirun_on_1_2_and_4_processes() {
    let mut cases = vec![];
    let mut counts = std::collections::BTreeSet::new();
    for f in ["while_dp_sgd", "scan_layers_2d", "switch_branch_shardings", "scan_split_dim0"] {
        let src = std::fs::read_to_string(repo().join(format!("tests/partition/{f}.pir"))).unwrap();
        for c in variants(f, &src) {
            let n: u64 = c.mesh.as_ref().unwrap().iter().product();
            counts.insert(n);
            cases.push((c, n == 4));
        }
    }
    assert_eq!(counts.into_iter().collect::<Vec<_>>(), vec![1, 2, 4]);
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/control")).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "pir")).collect();
    files.sort();
    assert!(files.len() >= 4);
    for p in files {
        cases.push((Case { name: p.display().to_string(), src: std::fs::read_to_string(&p).unwrap(), mesh: None, exact: false }, false));
    }
    let mut failures = vec![];
    for (c, twice) in &cases {
        if let Err(e) = run_case(c, *twice) {
            failures.push(format!("{} (mesh {:?}): {e}", c.name, c.mesh));
        }
    }
    assert!(failures.is_empty(), "{} of {} runs failed:\n\n{}", failures.len(), cases.len(), failures.join("\n\n"));

    // spmd programs with collectives inside their bodies (a predicate
    // all_reduce'd in the condition, all_gathers in a scan step, branches
    // that reduce), on their numeric cases' own inputs.
    for case in ["spmd_while_allreduce_2", "spmd_while_allreduce_4", "spmd_while_allreduce_2x2", "spmd_scan_switch"] {
        let d = repo().join("tests/numeric/cases").join(case);
        let src = std::fs::read_to_string(d.join("prog.pir")).unwrap();
        let m = pjc_front::load(&src).unwrap();
        let entry = m.func_by_name("main").unwrap();
        let f = &m.funcs[entry];
        let names: Vec<String> = (0..f.params.len()).map(|i| f.param_name(i).to_string()).collect();
        let args: Vec<Tensor> = names.iter().map(|n| pjc_tensor::read_npy(&d.join(format!("in_{n}.npy"))).unwrap()).collect();
        let want = pjc_interp::eval(&m, entry, args).unwrap();
        let dir = scratch();
        let exe = compile(&dir, case, &src, None).unwrap();
        let mut a: Vec<String> = vec![];
        for n in &names {
            a.extend(["--input".into(), format!("{n}={}", d.join(format!("in_{n}.npy")).display())]);
        }
        a.extend(["--output".into(), dir.join("out.safetensors").display().to_string()]);
        let np = m.mesh_or_single().device_count() as usize;
        let o = launch_exe(Some(np), &exe, &a);
        assert!(o.status.success(), "{case}: {}", String::from_utf8_lossy(&o.stderr));
        let got = pjc_tensor::read_safetensors(&dir.join("out.safetensors")).unwrap();
        for (k, w) in want.iter().enumerate() {
            let name = f.result_name(k);
            let (_, g) = got.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("{case}: no output '{name}'"));
            assert_close(w, g, Tolerance::spec(w.dtype()), &format!("{case}, -np {np}, result '{name}'"));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    // Loop mode: three steps of the program whose step is a while loop of
    // three SGD iterations, 'w' carried from step to step.
    let src = std::fs::read_to_string(repo().join("tests/partition/while_dp_sgd.pir")).unwrap();
    let dir = scratch();
    let mut m = pjc_front::load(&src).unwrap();
    pjc_transforms::expand(&mut m).unwrap();
    let entry = m.func_by_name("main").unwrap();
    let f = &m.funcs[entry];
    let mut seed = 5u64;
    let args: Vec<Tensor> = f.params.iter().map(|&p| random(f.ty(p), &mut seed)).collect();
    let named: Vec<(String, Tensor)> = (0..f.params.len()).map(|i| (f.param_name(i).to_string(), args[i].clone())).collect();
    write_npys(&dir, &named);
    let mut w = args[0].clone();
    for _ in 0..3 {
        w = pjc_interp::eval(&m, entry, vec![w, args[1].clone(), args[2].clone()]).unwrap()[0].clone();
    }
    let exe = compile(&dir, "sgd", &src, None).unwrap();
    let p = |n: &str| dir.join(n).display().to_string();
    let mut a: Vec<String> = vec![];
    for (n, _) in &named {
        a.extend(["--input".into(), format!("{n}={}", p(&format!("{n}.npy")))]);
    }
    a.extend(["--steps".into(), "3".into(), "--output".into(), p("out.safetensors")]);
    let o = launch_exe(Some(2), &exe, &a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = pjc_tensor::read_safetensors(&dir.join("out.safetensors")).unwrap();
    let (_, gw) = got.iter().find(|(n, _)| n == "w").expect("output 'w'");
    assert_close(&w, gw, Tolerance::spec_long_sums(DType::F32), "w after three loop-mode steps");
    let _ = std::fs::remove_dir_all(&dir);
}
