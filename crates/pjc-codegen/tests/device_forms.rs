//! The generated-kernel forms of ops that used to run only as host library
//! routines (`pjc_fusion::plan`'s `forms`): argmax/argmin and
//! select_and_scatter_add as kernel sequences on every backend, and the device
//! kernels of dot_general, convolution and scatter_add that the CUDA backend
//! runs where cuBLAS does not take a step. Layout families the numeric cases
//! do not cover, with inputs full of ties, NaN, -0.0 and out-of-range indices,
//! JIT-compiled for the host (as planned, and with every library step
//! replaced by its device kernel) and compared with the interpreter.

mod common;

use pjc_ir::DType;
use pjc_tensor::compare::{close, Tolerance};
use pjc_tensor::{Buf, Tensor};

/// Small integers as floats (many ties), with NaN and -0.0 where `specials`.
fn floats(d: DType, shape: &[usize], seed: u64, specials: bool) -> Tensor {
    let n: usize = shape.iter().product();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let v: Vec<f64> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 23 {
                0 if specials => f64::NAN,
                1 if specials => -0.0,
                k => (k % 7) as f64 - 3.0,
            }
        })
        .collect();
    Tensor::new(shape.to_vec(), Buf::from_f64(d, &v))
}

fn ints(d: DType, shape: &[usize], vals: &[i128]) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<i128> = (0..n).map(|i| vals[(i * 7 + i / 3) % vals.len()]).collect();
    Tensor::new(shape.to_vec(), Buf::from_i128(d, &v))
}

fn check(name: &str, src: &str, args: &[Tensor], failures: &mut Vec<String>) {
    check_with(name, src, args, false, failures)
}

/// [`check`], bit for bit when `bitwise` (results the spec makes exact:
/// moved elements, max/min, integers), else within the spec's tolerance.
fn check_with(name: &str, src: &str, args: &[Tensor], bitwise: bool, failures: &mut Vec<String>) {
    let (m, plan) = common::program(src);
    let want = common::interpret(&m, args);
    let dev = plan.with_device_kernels();
    let reference = || pjc_plan::exec::execute(&dev, args, &mut pjc_plan::exec::SingleDevice).map_err(|e| e.to_string());
    let runs = [
        ("plan", &plan, pjc_codegen::execute_plan_jit(&plan, args).map_err(|e| e.to_string())),
        ("device kernels", &dev, pjc_codegen::execute_plan_jit(&dev, args).map_err(|e| e.to_string())),
        ("device kernels in the reference executor", &dev, reference()),
    ];
    for (what, p, run) in runs {
        match run {
            Ok(got) => {
                for (k, (w, g)) in want.iter().zip(&got).enumerate() {
                    let r = if bitwise { close(w, g, Tolerance::BITWISE).map_err(|e| e.to_string()) } else { common::compare(w, g, p) };
                    if let Err(e) = r {
                        failures.push(format!("{name} ({what}): result {k}: {e}"));
                    }
                }
            }
            Err(e) => failures.push(format!("{name} ({what}): {e}")),
        }
    }
}

#[test]
fn device_forms_match_the_interpreter() {
    let mut failures = vec![];
    // Products with batch dimensions that are not leading, several free and
    // contracting dimensions, no contraction, mixed dtypes.
    check(
        "dot_layouts",
        "func @main(%q: f32[2,5,3,4], %k: f32[2,6,3,4], %a: bf16[3,4,2], %b: bf16[2,4,5], %i: i8[3,4], %j: i8[4,2]) -> (s: f32[2,3,5,6], t: f32[2,3,5], u: i32[3,2], o: f32[2,5,3,4,6,3,4]) {
  %s = dot_general %q, %k {lhs_batch=[0,2], rhs_batch=[0,2], lhs_contract=[3], rhs_contract=[3]} : f32[2,3,5,6]
  %t = dot_general %a, %b {lhs_batch=[2], rhs_batch=[0], lhs_contract=[1], rhs_contract=[1]} : f32[2,3,5]
  %u = dot_general %i, %j {lhs_contract=[1], rhs_contract=[0]} : i32[3,2]
  %o = dot_general %q, %k {lhs_batch=[0], rhs_batch=[0], lhs_contract=[], rhs_contract=[]} : f32[2,5,3,4,6,3,4]
  return %s, %t, %u, %o
}",
        &[
            floats(DType::F32, &[2, 5, 3, 4], 1, false),
            floats(DType::F32, &[2, 6, 3, 4], 2, false),
            floats(DType::BF16, &[3, 4, 2], 3, false),
            floats(DType::BF16, &[2, 4, 5], 4, false),
            ints(DType::I8, &[3, 4], &[-128, 127, 3, -1, 0]),
            ints(DType::I8, &[4, 2], &[127, -128, 5, 2]),
        ],
        &mut failures,
    );
    // Operands whose free dimensions lie on both sides of a contracting one:
    // copied by a transpose kernel into GEMM order first (both sides, and with
    // batch dimensions), f32 and bf16.
    let src = "func @main(%p: f32[4,3,5], %r: f32[6,3,2], %q: bf16[2,4,3,5], %s: bf16[2,3,6]) -> (w: f32[4,5,6,2], z: f32[2,4,5,6]) {
  %w = dot_general %p, %r {lhs_contract=[1], rhs_contract=[1]} : f32[4,5,6,2]
  %z = dot_general %q, %s {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]} : f32[2,4,5,6]
  return %w, %z
}";
    let (_, plan) = common::program(src);
    let copies = plan.kernels().filter(|k| k.name.ends_with("_lhs_t") || k.name.ends_with("_rhs_t")).count();
    assert_eq!(copies, 3, "{plan}");
    check(
        "dot_transposed_operands",
        src,
        &[
            floats(DType::F32, &[4, 3, 5], 21, false),
            floats(DType::F32, &[6, 3, 2], 22, false),
            floats(DType::BF16, &[2, 4, 3, 5], 23, false),
            floats(DType::BF16, &[2, 3, 6], 24, false),
        ],
        &mut failures,
    );
    // Convolutions in NCHW/OIHW and a grouped, dilated, strided f64 one.
    check(
        "conv_layouts",
        "func @main(%x: f32[2,4,7,6], %w: f32[6,2,3,2], %y: f64[1,9,4], %v: f64[3,4,3]) -> (a: f32[2,6,3,5], b: f64[1,16,3]) {
  %a = convolution %x, %w {dims=\"bf01_oi01->bf01\", window_strides=[2, 1], padding=[[1, 0], [0, 0]], feature_group_count=2} : f32[2,6,3,5]
  %b = convolution %y, %v {dims=\"b0f_0io->b0f\", padding=[[2, 1]], rhs_dilation=[2], lhs_dilation=[2]} : f64[1,16,3]
  return %a, %b
}",
        &[
            floats(DType::F32, &[2, 4, 7, 6], 5, false),
            floats(DType::F32, &[6, 2, 3, 2], 6, false),
            floats(DType::F64, &[1, 9, 4], 7, false),
            floats(DType::F64, &[3, 4, 3], 8, false),
        ],
        &mut failures,
    );
    // Duplicates and out-of-range indices (dropped), integer and bf16 data.
    check(
        "scatter_add",
        "func @main(%b: f32[5,3], %i: i32[4], %u: f32[4,3], %c: i32[2,6], %j: u8[2,2], %w: i32[2,2,2], %h: bf16[4], %k: i64[3], %v: bf16[3]) -> (x: f32[5,3], y: i32[2,6], z: bf16[4]) {
  %x = scatter_add %b, %i, %u {axis=0} : f32[5,3]
  %y = scatter_add %c, %j, %w {axis=1} : i32[2,6]
  %z = scatter_add %h, %k, %v {axis=0} : bf16[4]
  return %x, %y, %z
}",
        &[
            floats(DType::F32, &[5, 3], 9, false),
            ints(DType::I32, &[4], &[1, 4, 1, 9, -1]),
            floats(DType::F32, &[4, 3], 10, false),
            ints(DType::I32, &[2, 6], &[i32::MAX as i128, 1, -7]),
            ints(DType::U8, &[2, 2], &[5, 0, 200, 5]),
            ints(DType::I32, &[2, 2, 2], &[1, i32::MAX as i128, -3]),
            floats(DType::BF16, &[4], 11, false),
            ints(DType::I64, &[3], &[3, -4, 3]),
            floats(DType::BF16, &[3], 12, false),
        ],
        &mut failures,
    );
    // Extremes with NaN, -0.0 and ties; pred and unsigned operands.
    check(
        "arg_extremes",
        "func @main(%x: f32[5,7], %h: f16[3,4,5], %p: pred[3,4], %u: u16[6,2]) -> (a: i32[5], b: i64[7], c: i32[3,5], d: i32[3], e: i64[4], f: i32[2]) {
  %a = argmax %x {dim=1} : i32[5]
  %b = argmin %x {dim=0} : i64[7]
  %c = argmax %h {dim=1} : i32[3,5]
  %d = argmax %p {dim=1} : i32[3]
  %e = argmin %p {dim=0} : i64[4]
  %f = argmin %u {dim=0} : i32[2]
  return %a, %b, %c, %d, %e, %f
}",
        &[
            floats(DType::F32, &[5, 7], 13, true),
            floats(DType::F16, &[3, 4, 5], 14, true),
            Tensor::new(vec![3, 4], Buf::Pred((0..12).map(|i| i % 5 == 2).collect())),
            ints(DType::U16, &[6, 2], &[65535, 0, 7, 0]),
        ],
        &mut failures,
    );
    // Max-pool gradients: overlapping and padded windows, ties, NaN, ints.
    check(
        "select_and_scatter_add",
        "func @main(%x: f32[2,6,5], %s: f32[2,3,3], %y: i32[7], %t: i32[4], %z: bf16[4,4], %r: bf16[2,2]) -> (a: f32[2,6,5], b: i32[7], c: bf16[4,4]) {
  %a = select_and_scatter_add %s, %x {window=[1, 3, 2], strides=[1, 2, 2], padding=[[0, 0], [1, 0], [0, 1]]} : f32[2,6,5]
  %b = select_and_scatter_add %t, %y {window=[3], strides=[2], padding=[[1, 1]]} : i32[7]
  %c = select_and_scatter_add %r, %z {window=[3, 3], strides=[2, 2], padding=[[1, 0], [1, 0]]} : bf16[4,4]
  return %a, %b, %c
}",
        &[
            floats(DType::F32, &[2, 6, 5], 15, true),
            floats(DType::F32, &[2, 3, 3], 16, false),
            ints(DType::I32, &[7], &[3, 3, -1, 8, 8, 0]),
            ints(DType::I32, &[4], &[1, 10, 100, 1000]),
            floats(DType::BF16, &[4, 4], 17, false),
            floats(DType::BF16, &[2, 2], 18, false),
        ],
        &mut failures,
    );
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Rows full of ties, NaN and -0.0, sorted by several keys in both
/// directions; pred, bf16, unsigned and 64-bit keys; sorts along a leading
/// dimension; top_k with ties; and every scatter kind with duplicate and
/// out-of-range indices, on floats, integers, bf16 and pred. The device
/// kernels (ranks, inverse permutation, gathers; per-element reductions over
/// the updates) must give the host library's results bit for bit where the
/// spec is exact (sort, top_k, set, max, min, integers), within its
/// tolerance elsewhere.
#[test]
fn sort_top_k_and_scatter_device_kernels_match_the_interpreter() {
    let mut failures = vec![];
    check_with(
        "sort",
        common::ranked::SORT,
        &[
            floats(DType::F32, &[5, 7], 31, true),
            ints(DType::I32, &[5, 7], &[3, -1, 3, 0, 7]),
            Tensor::new(vec![5, 7], Buf::Pred((0..35).map(|i| i % 3 == 1).collect())),
            floats(DType::BF16, &[3, 6], 32, true),
            ints(DType::U16, &[6, 4], &[65535, 0, 7, 0, 7]),
            ints(DType::I64, &[6, 4], &[i64::MIN as i128, 5, -5, i64::MAX as i128]),
        ],
        true,
        &mut failures,
    );
    check_with(
        "top_k",
        common::ranked::TOP_K,
        &[
            floats(DType::F32, &[4, 9], 33, true),
            ints(DType::I8, &[2, 3, 5], &[-128, 127, 4, 4, 0]),
            floats(DType::F16, &[6], 34, true),
        ],
        true,
        &mut failures,
    );
    // set, max and min pick an element; integers and pred are exact.
    let scatter_args = [
        floats(DType::F32, &[5, 3], 35, true),
        ints(DType::I32, &[4], &[1, 4, 1, 9, -1]),
        floats(DType::F32, &[4, 3], 36, true),
        ints(DType::I32, &[2, 6], &[i32::MAX as i128, 1, -7]),
        ints(DType::U8, &[2, 2], &[5, 0, 200, 5]),
        ints(DType::I32, &[2, 2, 2], &[1, i32::MAX as i128, -3]),
        floats(DType::BF16, &[4], 37, true),
        ints(DType::I64, &[3], &[3, -4, 3]),
        floats(DType::BF16, &[3], 38, true),
        Tensor::new(vec![5], Buf::Pred(vec![true, false, true, false, false])),
        Tensor::new(vec![4], Buf::Pred(vec![false, true, true, false])),
    ];
    check_with(
        "scatter_exact_kinds",
        common::ranked::SCATTER_EXACT,
        &scatter_args,
        true,
        &mut failures,
    );
    // Float products reassociate (the spec's tolerance).
    // NaN payloads (signalling ones too), both signs of NaN and of zero move
    // bit for bit through sort, top_k and scatter set.
    let bits32: Vec<u32> = vec![0x7fa0_0001, 0x8000_0000, 0x3f80_0000, 0xffc0_0000, 0x0000_0000, 0x7f80_0001, 0xbf80_0000, 0x7fc0_1234];
    let bits16: Vec<u16> = vec![0xff81, 0x8000, 0x3f80, 0x7fc1, 0x0000, 0x7f81, 0xbf80, 0xffc0];
    let f = Tensor::new(vec![2, 4], pjc_tensor::buf_from_le_bytes(DType::F32, &bits32.iter().flat_map(|b| b.to_le_bytes()).collect::<Vec<_>>()).unwrap());
    let h = Tensor::new(vec![2, 4], pjc_tensor::buf_from_le_bytes(DType::BF16, &bits16.iter().flat_map(|b| b.to_le_bytes()).collect::<Vec<_>>()).unwrap());
    check_with(
        "nan_payloads",
        "func @main(%f: f32[2,4], %h: bf16[2,4], %i: i32[4], %g: f32[2,4], %k: bf16[2,4]) -> (a: f32[2,4], b: bf16[2,4], c: bf16[2,4], t: f32[2,3], ti: i32[2,3], s: f32[2,4], sh: bf16[2,4]) {
  %a = sort %f {dim=1}
  %b, %c = sort %h, %h {dim=0, descending=true}
  %t, %ti = top_k %f {k=3}
  %s = scatter %f, %i, %g {axis=1, kind=set}
  %sh = scatter %h, %i, %k {axis=1, kind=set}
  return %a, %b, %c, %t, %ti, %s, %sh
}",
        &[f.clone(), h.clone(), ints(DType::I32, &[4], &[3, 0, 3, 9]), pjc_tensor::reverse(&f, &[1]).unwrap(), pjc_tensor::reverse(&h, &[0, 1]).unwrap()],
        true,
        &mut failures,
    );
    check(
        "scatter_mul",
        common::ranked::SCATTER_MUL,
        &scatter_args,
        &mut failures,
    );
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
