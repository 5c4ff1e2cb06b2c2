//! Helpers shared by the code generator's tests.
#![allow(dead_code)]

pub mod ranked;

use pjc_plan::{Plan, Step};
use pjc_ir::{DType, FuncKind, Module};
use pjc_tensor::compare::{close, Tolerance};
use pjc_tensor::Tensor;
use std::path::{Path, PathBuf};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A single-device numeric case: its module, plan and inputs.
pub struct Case {
    pub name: String,
    pub module: Module,
    pub plan: Plan,
    pub args: Vec<Tensor>,
}

/// Every single-device program of tests/numeric/cases with its inputs.
pub fn numeric_cases() -> Vec<Case> {
    let dir = root().join("tests/numeric/cases");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("prog.pir").is_file())
        .collect();
    dirs.sort();
    let mut out = vec![];
    for d in dirs {
        let src = std::fs::read_to_string(d.join("prog.pir")).unwrap();
        let Ok(m) = pjc_front::load(&src) else {
            continue;
        };
        let entry = m.func_by_name("main").unwrap();
        let f = &m.funcs[entry];
        if f.kind == FuncKind::Spmd
            || m.funcs.len() > 1
            || m.mesh.as_ref().is_some_and(|x| x.device_count() > 1)
        {
            continue;
        }
        let args: Vec<Tensor> = (0..f.params.len())
            .map(|i| {
                let t =
                    pjc_tensor::read_npy(&d.join(format!("in_{}.npy", f.param_name(i)))).unwrap();
                let want = f.ty(f.params[i]).dtype;
                if t.dtype() != want {
                    pjc_tensor::convert(&t, want).unwrap()
                } else {
                    t
                }
            })
            .collect();
        let plan = pjc_fusion::plan(f).unwrap_or_else(|e| panic!("{}: plan: {e}", d.display()));
        out.push(Case {
            name: d.file_name().unwrap().to_string_lossy().into_owned(),
            module: m,
            plan,
            args,
        });
    }
    out
}

/// A program from text, planned.
pub fn program(src: &str) -> (Module, Plan) {
    let m = pjc_front::load(src).unwrap_or_else(|e| panic!("bad test program: {e:?}\n{src}"));
    let entry = m.func_by_name("main").unwrap();
    let plan = pjc_fusion::plan(&m.funcs[entry]).unwrap_or_else(|e| panic!("plan: {e}\n{src}"));
    (m, plan)
}

/// The interpreter's results.
pub fn interpret(m: &Module, args: &[Tensor]) -> Vec<Tensor> {
    let entry = m.func_by_name("main").unwrap();
    pjc_interp::eval(m, entry, args.to_vec()).unwrap()
}

/// Whether the plan computes result `r` through a reduction kernel or a
/// library step (where the spec allows reassociation).
pub fn reassociates(plan: &Plan) -> bool {
    pjc_plan::control::preorder(&plan.steps).into_iter().any(|s| match s {
        Step::Kernel(k) => k.reduce.is_some(),
        Step::Library { .. } => true,
        Step::Collective { .. } | Step::Control(_) => false,
    })
}

/// Largest reduction (elements combined into one output) in the plan.
pub fn largest_reduction(plan: &Plan) -> u64 {
    pjc_plan::control::preorder(&plan.steps)
        .into_iter()
        .map(|s| match s {
            Step::Kernel(k) => k.reduce.as_ref().map_or(0, |r| r.shape.iter().product()),
            Step::Library { .. } => 1 << 20,
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

/// The tolerance a result is checked with: programs without reductions or
/// library steps within `ULPS` units in the last place of the result dtype (+,
/// -, *, /, sqrt, conversions, max/min, rounding are exact, so only the
/// transcendental functions differ: the interpreter computes them in f64 and
/// rounds once, generated code calls libm's f32 functions or, in vectorized
/// loops, glibc's libmvec, documented to be within 4 ulp); programs with
/// reductions or library steps within the spec's reassociation tolerance
/// (rtol 1e-5, 1e-4 past 1,000 summed elements, 1e-2 for f16/bf16, 1e-12 f64,
/// relative to the largest result magnitude). Integers and pred: exact.
pub const ULPS: u64 = 4;

pub fn tolerance(d: DType, plan: &Plan) -> Tolerance {
    if !reassociates(plan) {
        Tolerance::ulps(ULPS)
    } else if largest_reduction(plan) > 1000 {
        Tolerance::spec_long_sums(d)
    } else {
        Tolerance::spec(d)
    }
}

/// Compares `got` with the interpreter's `want` under [`tolerance`].
pub fn compare(want: &Tensor, got: &Tensor, plan: &Plan) -> Result<(), String> {
    close(want, got, tolerance(want.dtype(), plan)).map_err(|e| e.to_string())
}

/// ptxas: `PJC_PTXAS`, else the project's `.venv` (scripts/ptxas.sh), else PATH.
pub fn ptxas() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("PJC_PTXAS") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            return Err(format!("PJC_PTXAS={} is not a file: run scripts/ptxas.sh (it installs ptxas into .venv and prints its path)", p.display()));
        }
        return Ok(p);
    }
    if let Ok(rd) = std::fs::read_dir(root().join(".venv/lib")) {
        for e in rd.flatten() {
            let p = e.path().join("site-packages/nvidia/cuda_nvcc/bin/ptxas");
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    if let Ok(out) = std::process::Command::new("ptxas")
        .arg("--version")
        .output()
    {
        if out.status.success() {
            return Ok(PathBuf::from("ptxas"));
        }
    }
    Err("ptxas not found: run scripts/ptxas.sh (it installs the pip package nvidia-cuda-nvcc-cu12 into .venv) or set PJC_PTXAS".into())
}

/// Register and spill numbers ptxas -v reports for one function.
#[derive(Debug, Default, Clone)]
pub struct PtxasInfo {
    pub function: String,
    pub registers: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
}

/// Assembles `ptx` for `arch` with `ptxas -v`; returns per-function numbers.
pub fn assemble(ptxas: &Path, ptx: &str, arch: &str) -> Result<Vec<PtxasInfo>, String> {
    let dir = std::env::temp_dir().join(format!("pjc-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!(
        "k{}.ptx",
        std::thread::current()
            .name()
            .unwrap_or("t")
            .replace(':', "_")
    ));
    std::fs::write(&file, ptx).unwrap();
    let out = std::process::Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg(&file)
        .arg("-o")
        .arg("/dev/null")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() || text.contains("error") {
        return Err(format!("ptxas -arch={arch} failed:\n{text}"));
    }
    let mut infos = vec![];
    let mut cur = PtxasInfo::default();
    for line in text.lines() {
        if let Some(i) = line.find("Compiling entry function '") {
            let rest = &line[i + "Compiling entry function '".len()..];
            cur = PtxasInfo {
                function: rest.split('\'').next().unwrap_or("").to_string(),
                ..Default::default()
            };
        } else if line.contains("Function properties for") {
            let name = line
                .split("Function properties for ")
                .nth(1)
                .unwrap_or("")
                .trim()
                .to_string();
            if cur.function.is_empty() {
                cur.function = name;
            }
        }
        if line.contains("bytes spill stores") {
            let nums: Vec<u32> = line
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|s| s.parse().ok())
                .collect();
            // "N bytes stack frame, S bytes spill stores, L bytes spill loads"
            if nums.len() >= 3 {
                cur.spill_stores = nums[1];
                cur.spill_loads = nums[2];
            }
        }
        if let Some(i) = line.find("Used ") {
            let n: String = line[i + 5..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            cur.registers = n.parse().unwrap_or(0);
            infos.push(cur.clone());
        }
    }
    Ok(infos)
}
