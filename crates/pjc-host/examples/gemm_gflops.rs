//! GFLOP/s of `dot_general` library steps on this machine (a benchmark, not a
//! test): square f32/f64/bf16 products, the products of a GPT block and
//! convolutions of ResNet-50 (f32, bf16, i8) and the CNN's kernel gradient, each through the library-step code
//! (`pjc_host::gemm::try_dot`, `pjc_host::conv::try_conv`) the executables run.
//!
//!     cargo run --release -p pjc-host --example gemm_gflops [THREADS]

use pjc_ir::{AttrValue, DType, InstData, Opcode, TensorType};
use pjc_tensor::{Buf, Tensor};
use std::time::Instant;

fn inst(lb: &[i64], rb: &[i64], lc: &[i64], rc: &[i64]) -> InstData {
    let mut i = InstData::new(Opcode::DotGeneral);
    for (n, v) in [("lhs_batch", lb), ("rhs_batch", rb), ("lhs_contract", lc), ("rhs_contract", rc)] {
        if !v.is_empty() {
            i.set_attr(n, AttrValue::int_list(v));
        }
    }
    i
}

fn tensor(d: DType, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    if d.is_int() {
        let v: Vec<i128> = (0..n).map(|i| (i * 7919 % 255) as i128 - 127).collect();
        return Tensor::new(shape.to_vec(), Buf::from_i128(d, &v));
    }
    let v: Vec<f64> = (0..n).map(|i| ((i * 7919 % 1000) as f64) / 1000.0 - 0.5).collect();
    Tensor::new(shape.to_vec(), Buf::from_f64(d, &v))
}

fn main() {
    let threads: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(pjc_host::default_threads);
    #[allow(clippy::type_complexity)]
    let cases: Vec<(&str, DType, Vec<usize>, Vec<usize>, [&[i64]; 4], Vec<usize>)> = vec![
        ("f32 2048^3", DType::F32, vec![2048, 2048], vec![2048, 2048], [&[], &[], &[1], &[0]], vec![2048, 2048]),
        ("f64 1024^3", DType::F64, vec![1024, 1024], vec![1024, 1024], [&[], &[], &[1], &[0]], vec![1024, 1024]),
        ("bf16 2048^3 (f32 acc.)", DType::BF16, vec![2048, 2048], vec![2048, 2048], [&[], &[], &[1], &[0]], vec![2048, 2048]),
        ("GPT MLP up [8,256,512]x[512,2048]", DType::F32, vec![8, 256, 512], vec![512, 2048], [&[], &[], &[2], &[0]], vec![8, 256, 2048]),
        ("GPT q proj [8,256,512]x[512,8,64]", DType::F32, vec![8, 256, 512], vec![512, 8, 64], [&[], &[], &[2], &[0]], vec![8, 256, 8, 64]),
        ("GPT scores [8,256,8,64]x[8,256,8,64]", DType::F32, vec![8, 256, 8, 64], vec![8, 256, 8, 64], [&[0, 2], &[0, 2], &[3], &[3]], vec![8, 8, 256, 256]),
        ("GPT values [8,8,256,256]x[8,256,8,64]", DType::F32, vec![8, 8, 256, 256], vec![8, 256, 8, 64], [&[0, 1], &[0, 2], &[3], &[1]], vec![8, 8, 256, 64]),
        ("GPT out proj [8,8,256,64]x[8,64,512]", DType::F32, vec![8, 8, 256, 64], vec![8, 64, 512], [&[], &[], &[1, 3], &[0, 1]], vec![8, 256, 512]),
    ];
    println!("| product | threads | ms | GFLOP/s |");
    println!("|---|---:|---:|---:|");
    for (name, d, sa, sb, [lb, rb, lc, rc], so) in cases {
        let (a, b) = (tensor(d, &sa), tensor(d, &sb));
        let out_d = if d == DType::BF16 { DType::F32 } else { d };
        let out = TensorType::new(out_d, so.iter().map(|&x| x as u64).collect());
        let i = inst(lb, rb, lc, rc);
        let k: usize = lc.iter().map(|&x| sa[x as usize]).product();
        let flops = 2.0 * so.iter().product::<usize>() as f64 * k as f64;
        let ins = [a, b];
        pjc_host::gemm::try_dot(&i, &ins, &out, threads).expect("on the GEMM path"); // warm-up
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            std::hint::black_box(pjc_host::gemm::try_dot(&i, &ins, &out, threads));
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!("| {name} | {threads} | {:.1} | {:.1} |", best * 1e3, flops / best / 1e9);
    }
    // Convolutions of ResNet-50's shapes: forward (NHWC), and kernel
    // gradients written as JAX writes them (the activations with the batch as
    // features, the output gradient as the kernel).
    // (name, dtype, result dtype, input, kernel, dims, stride, padding, output)
    #[allow(clippy::type_complexity)]
    let convs: Vec<(&str, DType, DType, Vec<usize>, Vec<usize>, &str, i64, i64, Vec<usize>)> = vec![
        ("conv 3x3 64->64 [8,56,56]", DType::F32, DType::F32, vec![8, 56, 56, 64], vec![3, 3, 64, 64], "b01f_01io->b01f", 1, 1, vec![8, 56, 56, 64]),
        ("conv 3x3 64->64 [8,56,56] bf16", DType::BF16, DType::BF16, vec![8, 56, 56, 64], vec![3, 3, 64, 64], "b01f_01io->b01f", 1, 1, vec![8, 56, 56, 64]),
        ("conv 3x3 64->64 [8,56,56] i8 -> i32 (Gop/s)", DType::I8, DType::I32, vec![8, 56, 56, 64], vec![3, 3, 64, 64], "b01f_01io->b01f", 1, 1, vec![8, 56, 56, 64]),
        ("conv 1x1 256->64 [8,56,56]", DType::F32, DType::F32, vec![8, 56, 56, 256], vec![1, 1, 256, 64], "b01f_01io->b01f", 1, 0, vec![8, 56, 56, 64]),
        ("conv 7x7/2 3->64 [8,224,224]", DType::F32, DType::F32, vec![8, 224, 224, 3], vec![7, 7, 3, 64], "b01f_01io->b01f", 2, 3, vec![8, 112, 112, 64]),
        ("conv 1x1 256->64 kernel gradient [8,56,56]", DType::F32, DType::F32, vec![8, 56, 56, 256], vec![8, 56, 56, 64], "f01b_i01o->01bf", 1, 0, vec![1, 1, 256, 64]),
        ("conv 3x3 64->64 kernel gradient [8,56,56]", DType::F32, DType::F32, vec![8, 56, 56, 64], vec![8, 56, 56, 64], "f01b_i01o->01bf", 1, 1, vec![3, 3, 64, 64]),
        ("conv 3x3 64->64 kernel gradient [64,16,16] (CNN)", DType::F32, DType::F32, vec![64, 16, 16, 64], vec![64, 16, 16, 64], "f01b_i01o->01bf", 1, 1, vec![3, 3, 64, 64]),
    ];
    for (name, d, od, xs, ks, dims, stride, pad, so) in convs {
        let (x, k) = (tensor(d, &xs), tensor(d, &ks));
        let mut i = InstData::new(Opcode::Convolution);
        i.set_attr("dims", AttrValue::Str(dims.into()));
        i.set_attr("window_strides", AttrValue::int_list(&[stride, stride]));
        i.set_attr("padding", AttrValue::List(vec![AttrValue::int_list(&[pad, pad]); 2]));
        let out = TensorType::new(od, so.iter().map(|&x| x as u64).collect());
        // Output elements times the multiply-adds of each: the kernel's taps
        // and input features (forward), or every input position (gradients).
        let per_out = if dims.starts_with('f') { xs[0] * xs[1] * xs[2] } else { ks[0] * ks[1] * ks[2] };
        let flops = 2.0 * so.iter().product::<usize>() as f64 * per_out as f64;
        let ins = [x, k];
        let blas = pjc_host::blas::get();
        pjc_host::conv::try_conv(&i, &ins, &out, threads, blas).expect("on the GEMM path");
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t = Instant::now();
            std::hint::black_box(pjc_host::conv::try_conv(&i, &ins, &out, threads, blas));
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!("| {name} | {threads} | {:.1} | {:.1} |", best * 1e3, flops / best / 1e9);
    }
}
