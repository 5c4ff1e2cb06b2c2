//! Control flow through planning and code generation: every single-device
//! program with `while`, `scan` or `switch` (the numeric cases and
//! `tests/control/`) goes through the compiler's stages — expand, propagate,
//! partition, inline into the entry and its bodies, plan — and its plan runs
//! in the reference executor (bit for bit the interpreter) and JIT-compiled
//! on x86-64 (the host step loop the CPU runtime also runs), against
//! `pjc eval`'s results. The plans are loops, not unrolled: each body's
//! kernels appear once, in a block, and nothing is allocated per iteration;
//! the PTX of every plan assembles.

mod common;

use pjc_ir::{FuncKind, Module};
use pjc_plan::{BufferKind, Control, Plan, Step};
use pjc_tensor::compare::{close, Tolerance};
use pjc_tensor::Tensor;
use std::path::PathBuf;

/// The plan of `m`'s `@main` as `pjc compile` builds it.
fn compile(m: &Module) -> Result<Plan, String> {
    let mut m = m.clone();
    pjc_transforms::expand(&mut m).map_err(|e| format!("expand: {}", e.msg))?;
    let entry = m.func_by_name("main").unwrap();
    pjc_sharding::check_control(&m).map_err(|e| format!("{e:?}"))?;
    let prop = pjc_sharding::propagate(&m, entry);
    let part = pjc_partition::partition(&m, entry, &prop).map_err(|e| format!("partition: {e}"))?;
    let id = part.module.func_by_name("main").unwrap();
    let mut per_device = part.module.clone();
    per_device.funcs = Default::default();
    for mut f in pjc_transforms::inline_program(&part.module, id).map_err(|e| format!("inline: {}", e.msg))? {
        pjc_partition::combine_all_reduces(&mut f, &part.module.mesh_or_single());
        per_device.funcs.push(f);
    }
    pjc_front::check(&per_device).map_err(|d| format!("the per-device program does not verify: {d:?}"))?;
    let first = per_device.funcs.keys().next().unwrap();
    pjc_fusion::plan_program(&per_device, first).map_err(|e| format!("plan: {e}"))
}

fn has_control(m: &Module) -> bool {
    m.funcs.values().any(|f| f.body.iter().any(|&i| f.insts[i].op.is_control()))
}

/// Deterministic inputs: small values, varied by position (xorshift).
fn inputs(m: &Module, seed: u64) -> Vec<Tensor> {
    let f = &m.funcs[m.func_by_name("main").unwrap()];
    let mut s = seed | 1;
    f.params
        .iter()
        .map(|&p| {
            let ty = f.ty(p);
            let n = ty.num_elements() as usize;
            let shape: Vec<usize> = ty.shape.iter().map(|&d| d as usize).collect();
            let mut next = || {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s
            };
            let data = if ty.dtype.is_float() {
                pjc_tensor::Buf::from_f64(ty.dtype, &(0..n).map(|_| (next() % 2001) as f64 / 1000.0 - 1.0).collect::<Vec<_>>())
            } else if ty.dtype.is_int() {
                pjc_tensor::Buf::from_i128(ty.dtype, &(0..n).map(|_| (next() % 7) as i128 - if ty.dtype.is_signed_int() { 3 } else { 0 }).collect::<Vec<_>>())
            } else {
                pjc_tensor::Buf::Pred((0..n).map(|_| next() % 2 == 0).collect())
            };
            Tensor::new(shape, data)
        })
        .collect()
}

/// The programs: numeric cases (with their inputs) and `tests/control/`.
fn programs() -> Vec<(String, Module, Vec<Tensor>)> {
    let root = common::root();
    let mut out = vec![];
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("tests/numeric/cases")).unwrap().flatten().map(|e| e.path()).collect();
    dirs.sort();
    for d in dirs {
        let Ok(src) = std::fs::read_to_string(d.join("prog.pir")) else { continue };
        let Ok(m) = pjc_front::load(&src) else { continue };
        let f = &m.funcs[m.func_by_name("main").unwrap()];
        if !has_control(&m) || f.kind == FuncKind::Spmd || m.mesh_or_single().device_count() > 1 {
            continue;
        }
        let args = (0..f.params.len())
            .map(|i| {
                let t = pjc_tensor::read_npy(&d.join(format!("in_{}.npy", f.param_name(i)))).unwrap();
                let want = f.ty(f.params[i]).dtype;
                if t.dtype() != want {
                    pjc_tensor::convert(&t, want).unwrap()
                } else {
                    t
                }
            })
            .collect();
        out.push((d.display().to_string(), m, args));
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("tests/control")).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "pir")).collect();
    files.sort();
    for p in files {
        let src = std::fs::read_to_string(&p).unwrap();
        let m = pjc_front::load(&src).unwrap_or_else(|d| panic!("{}", pjc_front::render(&p.display().to_string(), &src, &d)));
        let args = inputs(&m, p.to_string_lossy().len() as u64 * 0x9e37_79b9);
        out.push((p.display().to_string(), m, args));
    }
    out
}

#[test]
fn control_flow_plans_run_like_the_interpreter_in_the_executor_and_the_jit() {
    let progs = programs();
    assert!(progs.len() >= 12, "only {} programs with control flow", progs.len());
    let mut failures = vec![];
    for (name, m, args) in &progs {
        let run = || -> Result<(), String> {
            let want = pjc_interp::eval(m, m.func_by_name("main").unwrap(), args.clone()).map_err(|e| format!("eval: {e}"))?;
            let plan = compile(m)?;
            let got = pjc_plan::exec::execute(&plan, args, &mut pjc_plan::exec::SingleDevice).map_err(|e| format!("executor: {e}\n{plan}"))?;
            for (k, (w, g)) in want.iter().zip(&got).enumerate() {
                close(w, g, Tolerance::BITWISE).map_err(|e| format!("executor, result {k}: {e}\n{plan}"))?;
            }
            let jit = pjc_codegen::execute_plan_jit(&plan, args).map_err(|e| format!("JIT: {e}\n{plan}"))?;
            for (k, (w, g)) in want.iter().zip(&jit).enumerate() {
                close(w, g, common::tolerance(w.dtype(), &plan)).map_err(|e| format!("JIT, result {k}: {e}\n{plan}"))?;
            }
            Ok(())
        };
        if let Err(e) = run() {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} programs differ:\n{}", failures.len(), progs.len(), failures.join("\n\n"));
}

/// Every control step of the plan, in pre-order.
fn controls(plan: &Plan) -> Vec<&Control> {
    pjc_plan::control::preorder(&plan.steps)
        .into_iter()
        .filter_map(|s| match s {
            Step::Control(c) => Some(c),
            _ => None,
        })
        .collect()
}

fn load(file: &str) -> Module {
    let path = common::root().join(file);
    let src = std::fs::read_to_string(&path).unwrap();
    pjc_front::load(&src).unwrap_or_else(|d| panic!("{}", pjc_front::render(file, &src, &d)))
}

#[test]
fn loops_are_loops_with_their_bodies_planned_once_and_fused() {
    let plan = compile(&load("tests/control/scan_outputs_in_place.pir")).unwrap();
    // One top-level control step; the step body is one block, not 5 copies.
    assert_eq!(plan.steps.iter().filter(|s| matches!(s, Step::Control(_))).count(), 1, "{plan}");
    let Control::Scan { length, stacked, scanned, step, .. } = controls(&plan)[0] else { panic!("{plan}") };
    assert_eq!(*length, 5);
    // The broadcast, add and tanh fuse into one kernel inside the body.
    let kernels: Vec<&pjc_plan::Kernel> = step.steps.iter().filter_map(|s| if let Step::Kernel(k) = s { Some(k) } else { None }).collect();
    assert!(kernels.iter().any(|k| k.fuses.iter().any(|f| f == "%xb") && k.fuses.iter().any(|f| f == "%t")), "{plan}");
    // Windows: views with no memory; the product writes its output window in place.
    for &w in scanned.iter().chain(stacked) {
        assert!(matches!(plan.buffers[w].kind, BufferKind::Window { .. }), "b{w}: {plan}");
    }
    let product = step.steps.iter().find_map(|s| if let Step::Library { outputs, .. } = s { Some(outputs[0]) } else { None }).unwrap();
    assert_eq!(product, stacked[0], "the product writes the stacked window itself: {plan}");
    // The slice returned as an output, and the carry returned as an output
    // too (the carry itself is swapped), are copies.
    let copies = step.steps.iter().filter(|s| matches!(s, Step::Kernel(k) if k.name.contains("copy"))).count();
    assert_eq!(copies, 2, "{plan}");
    assert!(matches!(plan.buffers[step.results[0]].kind, BufferKind::Temp), "{plan}");
    let mem = pjc_fusion::plan_memory(&plan, &[]);
    for &w in scanned.iter().chain(stacked) {
        let BufferKind::Window { whole } = plan.buffers[w].kind else { unreachable!() };
        assert_eq!(mem.offsets[w], mem.offsets[whole], "a window lives in its whole buffer");
    }
}

#[test]
fn carried_results_swap_unless_they_are_the_state_itself() {
    let plan = compile(&load("tests/control/carries_permuted.pir")).unwrap();
    let Control::While { state, body, .. } = controls(&plan)[0] else { panic!("{plan}") };
    // %j, %s and the splat %k (a kernel's output every iteration) are
    // temporaries of the body, swapped; %b returned as carry 1 (another
    // carry's state) and %s returned a second time are copied.
    let copies = body.steps.iter().filter(|s| matches!(s, Step::Kernel(k) if k.name.contains("copy"))).count();
    assert_eq!(copies, 2, "{plan}");
    for (k, (&s, &r)) in state.iter().zip(&body.results).enumerate() {
        assert_ne!(s, r, "result {k}");
        assert!(matches!(plan.buffers[r].kind, BufferKind::Temp), "result {k} is swapped: a temporary");
        assert!(!body.results[..k].contains(&r), "distinct results");
    }
    // A body that returns a carried parameter unchanged needs nothing.
    let plan = compile(&load("tests/partition/while_dp_sgd.pir")).unwrap();
    let Control::While { state, body, .. } = controls(&plan)[0] else { panic!("{plan}") };
    assert_eq!(body.results[2], state[2], "x rides unchanged, in its own buffer");
    assert_eq!(body.results[3], state[3]);
}

#[test]
fn every_control_flow_plan_assembles_as_ptx() {
    let ptxas = match common::ptxas() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("skipped: no ptxas ({e})");
            return;
        }
    };
    let mut failures = vec![];
    for (name, m, _) in programs() {
        let r = compile(&m).and_then(|plan| {
            let ptx = pjc_codegen::compile_ptx(&plan, "sm_90").map_err(|e| format!("PTX: {e}"))?;
            // The launch list holds every kernel of every block, in pre-order.
            let cuda = pjc_host::device::cuda_plan(&plan).map_err(|e| e.to_string())?;
            let names: Vec<&str> = pjc_host::device::ptx_kernels(&cuda).into_iter().map(|k| k.name.as_str()).collect();
            if ptx.kernels.iter().map(|k| k.name.as_str()).collect::<Vec<_>>() != names {
                return Err("the PTX launch list does not follow the plan's kernels".into());
            }
            common::assemble(&ptxas, &ptx.ptx, "sm_90").map(|_| ()).map_err(|e| format!("ptxas: {e}"))
        });
        if let Err(e) = r {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn loop_buffers_keep_their_memory_through_the_loop_and_branches_share_theirs() {
    for file in ["tests/control/nested_loops.pir", "tests/control/switch_results.pir", "tests/control/switch_temps.pir", "tests/control/carries_permuted.pir", "tests/control/scan_outputs_in_place.pir"] {
        let plan = compile(&load(file)).unwrap();
        let mem = pjc_fusion::plan_memory(&plan, &[]);
        let span = |b: usize| (mem.offsets[b], mem.offsets[b] + plan.buffers[b].bytes().max(1));
        let apart = |a: usize, b: usize| {
            let ((a0, a1), (b0, b1)) = (span(a), span(b));
            a1 <= b0 || b1 <= a0
        };
        let real = |b: usize| !matches!(plan.buffers[b].kind, BufferKind::Window { .. });
        for c in controls(&plan) {
            // What a control step names itself (state, outputs, its blocks'
            // results) is live through the whole loop: apart from everything
            // its blocks write.
            let own: Vec<usize> = c.clone().own_buffers_mut().into_iter().map(|b| *b).filter(|&b| real(b)).collect();
            let inside: Vec<usize> = c.blocks().iter().flat_map(|b| b.steps.iter().flat_map(pjc_plan::control::step_buffers)).filter(|&b| real(b)).collect();
            for &o in &own {
                for &t in &inside {
                    assert!(o == t || own.contains(&t) || apart(o, t), "{file}: b{o} and b{t} share memory:\n{plan}");
                }
            }
        }
    }
    // A switch's branches never run together: a temporary of @norm (branch
    // 1) reuses the memory of one of @softmax's (branch 0).
    let plan = compile(&load("tests/control/switch_temps.pir")).unwrap();
    let mem = pjc_fusion::plan_memory(&plan, &[]);
    let Control::Switch { branches, outputs, .. } = controls(&plan)[0] else { panic!("{plan}") };
    let temps = |b: &pjc_plan::Block| -> Vec<usize> {
        b.steps.iter().flat_map(pjc_plan::control::step_buffers).filter(|t| !outputs.contains(t) && !b.params.contains(t)).collect()
    };
    let (k, c) = (temps(&branches[0]), temps(&branches[1]));
    assert!(!k.is_empty() && !c.is_empty(), "{plan}");
    assert!(c.iter().any(|&t| k.iter().any(|&u| mem.offsets[t] == mem.offsets[u])), "{plan}\n{:?}", mem.offsets);
}
