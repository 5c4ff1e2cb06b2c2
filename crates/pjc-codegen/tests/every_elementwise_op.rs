//! The op-table guarantee for elementwise ops: every `UnaryOp` and `BinaryOp`
//! of `dialects/` (so also one added there tomorrow, with no other change)
//! goes through every stage on every dtype its table entry admits — parse and
//! verify, the interpreter, `vmap` expansion, sharding propagation and the SPMD
//! partitioner (both evaluated against the global program), fusion into a loop
//! kernel, x86-64 code run by the JIT, and PTX for sm_90 assembled by ptxas —
//! and agrees with the interpreter. An op missing its arithmetic in
//! `pjc-tensor` or its lowering in `pjc-codegen` does not compile (both match
//! exhaustively on the op enums); this test catches a lowering that compiles
//! but is wrong, or a dtype the table admits that some stage does not handle.

mod common;

use pjc_dialects::TypeRule;
use pjc_ir::{BinaryOp, DType, Opcode, UnaryOp};
use pjc_tensor::{Buf, Tensor};

/// Inputs with the edge cases of spec section 11: signed zeros, infinities,
/// NaN, the integer extremes, 0 and -1 divisors, shift amounts past the width.
fn sample(d: DType, salt: usize) -> Tensor {
    let n = 24;
    let data = if d.is_float() {
        let base = [-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, 3.75, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1e-3, -7.25, 0.25, 100.0, -0.5];
        Buf::from_f64(d, &(0..n).map(|i| base[(i * 5 + salt * 3) % base.len()]).collect::<Vec<_>>())
    } else if d.is_pred() {
        Buf::Pred((0..n).map(|i| (i + salt) % 3 == 0).collect())
    } else {
        let (lo, hi) = d.int_range().unwrap();
        let w = d.bits() as i128;
        let base = [0, 1, -1, 2, -2, 3, 7, w - 1, w, w + 1, lo, hi, lo + 1, hi - 1, 5, -6];
        // Wrapped to the dtype, so unsigned types get their large values too.
        let v: Vec<i128> = (0..n).map(|i| base[(i * 7 + salt * 5) % base.len()]).collect();
        Buf::from_i128(d, &v.iter().map(|&x| pjc_tensor::wrap_to_dtype(x, d)).collect::<Vec<_>>())
    };
    Tensor::new(vec![4, 6], data)
}

/// One op on one dtype through every stage; an error describes the first failure.
fn check(op: Opcode, d: DType, arity: usize) -> Result<(), String> {
    let t = format!("{}[4,6]", d.name());
    let r = if op.def().rule == TypeRule::ElementwiseToPred { "pred[4,6]".to_string() } else { t.clone() };
    let (params, args, in_dims): (Vec<String>, Vec<String>, Vec<&str>) = match arity {
        1 => (vec![format!("%a: {t} on [x, _]")], vec!["%a".into()], vec!["0"]),
        _ => (vec![format!("%a: {t} on [x, _]"), format!("%b: {t}")], vec!["%a".into(), "%b".into()], vec!["0", "0"]),
    };
    let body = format!("{} {}", op.name(), args.join(", "));
    let single = format!("func @main({}) -> (r: {r}) {{\n  %r = {body}\n  return %r\n}}\n", params.join(", ").replace(" on [x, _]", ""));
    let sharded = format!("mesh [x=2]\n\nfunc @main({}) -> (r: {r}) {{\n  %r = {body}\n  return %r\n}}\n", params.join(", "));
    // vmap of a function over rows of the same op.
    let row = |s: &str| s.replace("[4,6]", "[6]").replace(" on [x, _]", "");
    let vmapped = format!(
        "func @f({}) -> (r: {}) {{\n  %r = {body}\n  return %r\n}}\n\nfunc @main({}) -> (r: {r}) {{\n  %r = vmap @f({}) {{in_dims=[{}], out_dims=[0]}}\n  return %r\n}}\n",
        row(&params.join(", ")),
        row(&r),
        params.join(", ").replace(" on [x, _]", ""),
        args.join(", "),
        in_dims.join(", ")
    );
    let inputs: Vec<Tensor> = (0..arity).map(|k| sample(d, k)).collect();
    let load = |src: &str, what: &str| pjc_front::load(src).map_err(|e| format!("{what} program does not verify: {e:?}\n{src}"));

    // Parse, verify, interpret.
    let m = load(&single, "the")?;
    let main = m.func_by_name("main").unwrap();
    let want = pjc_interp::eval(&m, main, inputs.clone()).map_err(|e| format!("interpreter: {e}"))?;
    let same = |stage: &str, got: &[Tensor]| -> Result<(), String> {
        // Bit for bit (NaN payloads too).
        let bits = |t: &Tensor| (t.dtype(), t.shape.clone(), pjc_tensor::buf_to_le_bytes(&t.data));
        if got.len() != 1 || bits(&got[0]) != bits(&want[0]) {
            return Err(format!("{stage} differs from the interpreter: {:?} vs {:?}", got.first().map(|t| &t.data), want[0].data));
        }
        Ok(())
    };

    // vmap: the interpreter's loop of calls and the batching transform agree.
    let mut vm = load(&vmapped, "the vmap")?;
    let vmain = vm.func_by_name("main").unwrap();
    same("vmap (interpreted)", &pjc_interp::eval(&vm, vmain, inputs.clone()).map_err(|e| format!("vmap eval: {e}"))?)?;
    pjc_transforms::expand(&mut vm).map_err(|e| format!("vmap expansion: {e:?}"))?;
    let expanded = pjc_front::print_module(&vm);
    let vm = load(&expanded, "the expanded vmap")?;
    let vmain = vm.func_by_name("main").unwrap();
    same("vmap (expanded)", &pjc_interp::eval(&vm, vmain, inputs.clone()).map_err(|e| format!("expanded vmap eval: {e}"))?)?;

    // Sharding propagation and partitioning: the per-device program equals the global one.
    let sm = load(&sharded, "the sharded")?;
    let smain = sm.func_by_name("main").unwrap();
    let prop = pjc_sharding::propagate(&sm, smain);
    let part = pjc_partition::partition(&sm, smain, &prop).map_err(|e| format!("partition: {}", e.msg))?;
    let text = pjc_front::print_module(&part.module);
    let pm = load(&text, "the partitioned")?;
    let pmain = pm.func_by_name("main").unwrap();
    same("the partitioned program", &pjc_interp::eval(&pm, pmain, inputs.clone()).map_err(|e| format!("partitioned eval: {e}"))?)?;

    // Fusion: one loop kernel with the op, which the plan executor runs like the interpreter.
    let plan = pjc_fusion::plan(&m.funcs[main]).map_err(|e| format!("plan: {e}"))?;
    let kernels = plan.steps.iter().filter(|s| matches!(s, pjc_plan::Step::Kernel(_))).count();
    if kernels != 1 || plan.steps.len() != 1 {
        return Err(format!("expected one fused kernel, got:\n{plan}"));
    }
    same("the plan executor", &pjc_plan::exec::execute(&plan, &inputs, &mut pjc_plan::exec::SingleDevice).map_err(|e| format!("plan executor: {e}"))?)?;

    // x86-64: JIT-compiled and run.
    let got = pjc_codegen::execute_plan_jit(&plan, &inputs).map_err(|e| format!("JIT: {e}"))?;
    common::compare(&want[0], &got[0], &plan).map_err(|e| format!("JIT: {e}"))?;

    // NVPTX: the module assembles for sm_90.
    let ptx = pjc_codegen::compile_ptx(&plan, "sm_90").map_err(|e| format!("PTX: {e}"))?;
    let ptxas = common::ptxas()?;
    common::assemble(&ptxas, &ptx.ptx, "sm_90").map_err(|e| format!("ptxas: {e}"))?;
    Ok(())
}

#[test]
fn every_unary_and_binary_op_runs_through_every_stage() {
    let ops: Vec<(Opcode, usize)> = UnaryOp::ALL
        .iter()
        .map(|u| (u.opcode(), 1))
        .chain(BinaryOp::ALL.iter().map(|b| (b.opcode(), 2)))
        .collect();
    let mut failures = vec![];
    let mut checked = 0;
    for &(op, arity) in &ops {
        let admitted: Vec<DType> = DType::ALL.into_iter().filter(|&d| op.def().operands.admits(d)).collect();
        assert!(!admitted.is_empty(), "{op} admits no dtype");
        for d in admitted {
            checked += 1;
            if let Err(e) = check(op, d, arity) {
                failures.push(format!("{op} on {d}: {e}"));
            }
        }
    }
    eprintln!("{} ops on {checked} (op, dtype) pairs checked", ops.len());
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n\n"));
}
