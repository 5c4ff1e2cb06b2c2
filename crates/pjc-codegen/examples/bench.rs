//! Code generation benchmark (run by scripts/bench-codegen.sh): memory
//! bandwidth of generated CPU kernels next to memcpy, a GEMM library step, and
//! an MLP training step with JIT kernels vs the reference interpreter (the
//! engine of `pjc eval`).
//!
//!     cargo run --release -p pjc-codegen --example bench [-- --quick]

use pjc_codegen::cpu::{default_threads, JitPlan};
use pjc_ir::DType;
use pjc_tensor::{Buf, Tensor};
use std::time::Instant;

fn plan_of(src: &str) -> (pjc_ir::Module, pjc_plan::Plan) {
    let m = pjc_front::load(src).unwrap_or_else(|e| panic!("{e:?}"));
    let f = &m.funcs[m.func_by_name("main").unwrap()];
    let p = pjc_fusion::plan(f).unwrap();
    (m, p)
}

fn rand_f32(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn tensor(shape: &[usize], seed: u64, scale: f32) -> Tensor {
    Tensor::new(
        shape.to_vec(),
        Buf::F32(rand_f32(shape.iter().product(), seed, scale)),
    )
}

/// Bytes the plan's kernels read and write (every buffer of a kernel once).
fn traffic(p: &pjc_plan::Plan) -> u64 {
    p.steps
        .iter()
        .map(|s| match s {
            pjc_plan::Step::Kernel(k) => k
                .inputs
                .iter()
                .chain(&k.outputs)
                .map(|b| p.buffers[b.buffer].bytes())
                .sum(),
            _ => 0,
        })
        .sum()
}

/// Best of `reps` timings of `f`, in seconds.
fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Times the plan's steps (buffers prepared once), best of `reps`.
fn time_plan(jit: &JitPlan, args: &[Tensor], threads: usize, reps: usize) -> f64 {
    let mut bufs = jit.buffers(args).unwrap();
    best(reps, || jit.run_steps(&mut bufs, threads).unwrap())
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let threads = default_threads();
    let reps = if quick { 3 } else { 10 };
    let n: usize = if quick { 1 << 22 } else { 1 << 24 };
    println!(
        "machine: {threads} threads (PJC_THREADS), libmvec: {}, n = {n} f32\n",
        pjc_codegen::cpu::uses_libmvec()
    );
    println!("| benchmark | time | rate |");
    println!("|---|---|---|");

    // memcpy, one thread and `threads` threads, counted as bytes read + written.
    let src = rand_f32(n, 1, 1.0);
    let mut dst = vec![0f32; n];
    let bytes = (n * 4) as f64;
    let t = best(reps, || dst.copy_from_slice(&src));
    println!(
        "| memcpy 1 thread ({:.0} MB) | {:.2} ms | {:.1} GB/s |",
        bytes / 1e6,
        t * 1e3,
        2.0 * bytes / t / 1e9
    );
    let t = best(reps, || {
        let chunk = n.div_ceil(threads);
        std::thread::scope(|s| {
            for (d, sc) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
                s.spawn(move || d.copy_from_slice(sc));
            }
        });
    });
    let memcpy_bw = 2.0 * bytes / t / 1e9;
    println!(
        "| memcpy {threads} threads | {:.2} ms | {:.1} GB/s |",
        t * 1e3,
        memcpy_bw
    );

    // A fused chain of 5 elementwise ops: 2 reads + 1 write per element.
    let chain = format!(
        "func @main(%x: f32[{n}], %a: f32[{n}]) -> (y: f32[{n}]) {{\n  %t1 = mul %x, %a\n  %t2 = add %t1, %x\n  %z = constant 0.0 : f32[{n}]\n  %t3 = max %t2, %z\n  %t4 = mul %t3, %a\n  %y = sub %t4, %x\n  return %y\n}}\n"
    );
    let (_, p) = plan_of(&chain);
    let jit = JitPlan::compile(&p).unwrap();
    let args = vec![tensor(&[n], 2, 1.0), tensor(&[n], 3, 1.0)];
    let t = time_plan(&jit, &args, threads, reps);
    let bw = 3.0 * bytes / t / 1e9;
    println!("| fused 5-op elementwise chain f32[{n}] ({} kernel) | {:.2} ms | {:.1} GB/s ({:.0}% of memcpy) |", p.steps.len(), t * 1e3, bw, 100.0 * bw / memcpy_bw);

    // Softmax over rows: reads and writes the array once (ideal traffic).
    let rows = n / 4096;
    let softmax = format!(
        "func @main(%x: f32[{rows},4096]) -> (y: f32[{rows},4096]) {{\n  %m = reduce %x {{dims=[1], kind=max}} : f32[{rows}]\n  %mb = broadcast %m {{dims=[0]}} : f32[{rows},4096]\n  %s = sub %x, %mb\n  %e = exp %s\n  %z = reduce %e {{dims=[1], kind=sum}} : f32[{rows}]\n  %zb = broadcast %z {{dims=[0]}} : f32[{rows},4096]\n  %y = div %e, %zb\n  return %y\n}}\n"
    );
    let (_, p) = plan_of(&softmax);
    let jit = JitPlan::compile(&p).unwrap();
    let args = vec![tensor(&[rows, 4096], 4, 4.0)];
    let t = time_plan(&jit, &args, threads, reps);
    let bw = 2.0 * bytes / t / 1e9;
    let moved = traffic(&p) as f64;
    println!(
        "| softmax f32[{rows},4096] over rows ({} kernels) | {:.2} ms | {:.1} GB/s effective (one read + one write); {:.1} GB/s of the plan's traffic ({:.0} MB, {:.0}% of memcpy) |",
        p.steps.len(),
        t * 1e3,
        bw,
        moved / t / 1e9,
        moved / 1e6,
        100.0 * moved / t / 1e9 / memcpy_bw
    );

    // GEMM library step.
    let g = if quick { 512 } else { 1024 };
    let mm = format!(
        "func @main(%a: f32[{g},{g}], %b: f32[{g},{g}]) -> (c: f32[{g},{g}]) {{\n  %c = dot_general %a, %b {{lhs_contract=[1], rhs_contract=[0]}} : f32[{g},{g}]\n  return %c\n}}\n"
    );
    let (_, p) = plan_of(&mm);
    let jit = JitPlan::compile(&p).unwrap();
    let args = vec![tensor(&[g, g], 5, 1.0), tensor(&[g, g], 6, 1.0)];
    let t = time_plan(&jit, &args, threads, reps);
    println!(
        "| matmul f32 {g}x{g}x{g} (gemm crate) | {:.2} ms | {:.1} GFLOP/s |",
        t * 1e3,
        2.0 * (g * g * g) as f64 / t / 1e9
    );

    // MLP training step: JIT vs the reference interpreter.
    let src = include_str!("mlp_train_step.pir");
    let (m, p) = plan_of(src);
    let t0 = Instant::now();
    let jit = JitPlan::compile(&p).unwrap();
    let compile = t0.elapsed().as_secs_f64();
    let mut args = vec![
        tensor(&[256, 784], 7, 1.0),
        Tensor::new(
            vec![256, 10],
            Buf::F32(
                (0..2560)
                    .map(|i| ((i % 10) == (i / 10) % 10) as u8 as f32)
                    .collect(),
            ),
        ),
    ];
    args.push(tensor(&[784, 512], 8, 0.05));
    args.push(tensor(&[512], 9, 0.05));
    args.push(tensor(&[512, 10], 10, 0.05));
    args.push(tensor(&[10], 11, 0.05));
    let t_jit = time_plan(&jit, &args, threads, reps);
    let entry = m.func_by_name("main").unwrap();
    let t_eval = best(if quick { 1 } else { 3 }, || {
        pjc_interp::eval(&m, entry, args.clone()).unwrap();
    });
    let got = jit.run(&args).unwrap();
    let want = pjc_interp::eval(&m, entry, args.clone()).unwrap();
    let loss = |t: &Tensor| match &t.data {
        Buf::F32(v) => v[0],
        _ => f32::NAN,
    };
    let kernels = p
        .steps
        .iter()
        .filter(|s| matches!(s, pjc_plan::Step::Kernel(_)))
        .count();
    println!(
        "| MLP training step 784-512-10, batch 256 ({} steps, {kernels} kernels) | JIT {:.2} ms vs `pjc eval` {:.0} ms | {:.0}x (JIT compile {:.0} ms; loss {} vs {}) |",
        p.steps.len(),
        t_jit * 1e3,
        t_eval * 1e3,
        t_eval / t_jit,
        compile * 1e3,
        loss(&got[0]),
        loss(&want[0])
    );
    let _ = DType::F32;
}
