//! `--accumulate K` (`accumulate/`): the K-micro-batch form of a training
//! step computes the full-batch step's loss and updated weights (interpreter,
//! spec section 11's reassociation tolerance), and what would not add up over
//! micro-batches is a clear error naming the op.

use pjc_ir::Module;
use pjc_tensor::compare::{close, Tolerance};
use pjc_tensor::{Buf, Tensor};
use pjc_transforms::{accumulate, Accumulate, AccumulateError};

fn load(src: &str) -> Module {
    pjc_front::load(src).unwrap_or_else(|d| panic!("{}", pjc_front::render("<test>", src, &d)))
}

fn repo_file(p: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(p)).unwrap()
}

fn random(shape: &[u64], seed: &mut u64) -> Tensor {
    let n: u64 = shape.iter().product();
    let v = (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            (*seed % 2001) as f32 / 1000.0 - 1.0
        })
        .collect();
    Tensor::new(shape.iter().map(|&d| d as usize).collect(), Buf::F32(v))
}

/// The step's results, after `--accumulate k` when given.
fn step(src: &str, k: Option<u64>, batch: Option<&[&str]>, args: &[Tensor]) -> Vec<Tensor> {
    let mut m = load(src);
    let entry = m.func_by_name("main").unwrap();
    if let Some(k) = k {
        let opts = Accumulate { k, batch_params: batch.map(|b| b.iter().map(|s| s.to_string()).collect()) };
        let done = accumulate(&mut m, entry, &opts).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(done.len(), 1);
        // The rewritten program verifies, and so does its expansion.
        let text = pjc_front::print_module(&m);
        pjc_front::load(&text).unwrap_or_else(|d| panic!("{}", pjc_front::render("<accumulated>", &text, &d)));
    }
    pjc_transforms::expand(&mut m).unwrap();
    pjc_interp::eval(&m, entry, args.to_vec()).unwrap()
}

fn inputs(src: &str) -> Vec<Tensor> {
    let m = load(src);
    let f = &m.funcs[m.func_by_name("main").unwrap()];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    f.params.iter().map(|&p| random(&f.values[p].ty.shape, &mut seed)).collect()
}

#[test]
fn micro_batches_add_up_to_the_full_batch_step() {
    let src = repo_file("tests/accumulate/mlp_dp.pir");
    let args = inputs(&src);
    let full = step(&src, None, None, &args);
    for k in [1, 2, 4, 8] {
        let acc = step(&src, Some(k), None, &args);
        for (q, (w, g)) in full.iter().zip(&acc).enumerate() {
            // f32 sums of a few hundred terms, regrouped: the spec's 1e-5.
            close(w, g, Tolerance::spec(pjc_ir::DType::F32)).unwrap_or_else(|e| panic!("K={k}, result {q}: {e}"));
        }
    }
    // Not vacuous: the updated weights differ from the inputs.
    assert!(close(&args[0], &full[1], Tolerance::spec(pjc_ir::DType::F32)).is_err());
}

/// One micro-batch's program: a relu's zeros constant and a broadcast bias
/// are retyped with the batch; `--batch-params` picks unsplit inputs.
#[test]
fn batch_params_by_name_and_retyped_constants() {
    let src = "func @loss(%w: f32[4,8], %x: f32[12,4], %y: f32[12]) -> (l: f32[]) {
  %h = dot_general %x, %w {lhs_contract=[1], rhs_contract=[0]} : f32[12,8]
  %z = constant 0.0 : f32[12,8]
  %r = max %h, %z
  %s = reduce %r {dims=[1], kind=sum} : f32[12]
  %c = constant 2.0 : f32[]
  %cb = broadcast %c : f32[12]
  %e = sub %s, %y
  %e2 = mul %e, %cb
  %q = mul %e2, %e
  %t = reduce %q {dims=[0], kind=sum} : f32[]
  %n = constant 12.0 : f32[]
  %l = div %t, %n
  return %l
}

func @main(%w: f32[4,8], %x: f32[12,4], %y: f32[12]) -> (l: f32[], g: f32[4,8]) {
  %l, %g = grad @loss(%w, %x, %y) {wrt=[0]} : (f32[], f32[4,8])
  return %l, %g
}
";
    let args = inputs(src);
    let full = step(src, None, None, &args);
    for k in [2, 3, 4, 6] {
        let acc = step(src, Some(k), Some(&["x", "y"]), &args);
        for (q, (w, g)) in full.iter().zip(&acc).enumerate() {
            close(w, g, Tolerance::spec(pjc_ir::DType::F32)).unwrap_or_else(|e| panic!("K={k}, result {q}: {e}"));
        }
    }
    // Without a sharded dimension 0 and without --batch-params there is no
    // batch parameter.
    let mut m = load(src);
    let entry = m.func_by_name("main").unwrap();
    let e = accumulate(&mut m, entry, &Accumulate { k: 2, batch_params: None }).unwrap_err();
    assert!(matches!(&e, AccumulateError::Program(t) if t.msg.contains("no grad of @main takes a batch parameter")), "{e:?}");
}

fn error(src: &str, k: u64, batch: Option<&[&str]>) -> String {
    let mut m = load(src);
    let entry = m.func_by_name("main").unwrap();
    let opts = Accumulate { k, batch_params: batch.map(|b| b.iter().map(|s| s.to_string()).collect()) };
    match accumulate(&mut m, entry, &opts) {
        Ok(_) => panic!("--accumulate {k} should fail"),
        Err(AccumulateError::Program(e)) => e.msg,
        Err(AccumulateError::Flag(m)) => format!("flag: {m}"),
    }
}

#[test]
fn what_does_not_add_up_over_micro_batches_is_an_error() {
    let step = |body: &str| {
        format!(
            "mesh [data=2]

func @loss(%w: f32[4], %x: f32[8,4] on [data, _]) -> (l: f32[]) {{
{body}
  return %l
}}

func @main(%w: f32[4], %x: f32[8,4] on [data, _]) -> (l: f32[], g: f32[4]) {{
  %l, %g = grad @loss(%w, %x) {{wrt=[0]}} : (f32[], f32[4])
  return %l, %g
}}
"
        )
    };
    let mean = "  %wb = broadcast %w {dims=[1]} : f32[8,4]
  %p = mul %x, %wb
  %s = reduce %p {dims=[0,1], kind=sum} : f32[]";
    // A max over the batch.
    let e = error(&step(&format!("{mean}\n  %m = reduce %p {{dims=[0,1], kind=max}} : f32[]\n  %l = add %s, %m")), 2, None);
    assert!(e.contains("%m = reduce reduces over the batch with another kind than sum"), "{e}");
    // A batch-independent term (a weight penalty) added to the loss.
    let e = error(&step(&format!("{mean}\n  %w2 = mul %w, %w\n  %r = reduce %w2 {{dims=[0], kind=sum}} : f32[]\n  %l = add %s, %r")), 2, None);
    assert!(e.contains("%l = add adds a term that does not depend on the batch"), "{e}");
    // Batch statistics: the sum over the batch used per example.
    let e = error(&step(&format!("{mean}\n  %sb = broadcast %s : f32[8,4]\n  %c = sub %p, %sb\n  %l = reduce %c {{dims=[0,1], kind=sum}} : f32[]")), 2, None);
    assert!(e.contains("%c = sub uses a sum over the batch non-linearly"), "{e}");
    // B = 8 rows in 3 micro-batches; 8/4 = 2 rows over data=2 is fine, 8/8 = 1 is not.
    let e = error(&step(&format!("{mean}\n  %l = add %s, %s")), 3, None);
    assert!(e.contains("dimension 0 of batch parameter %x has size 8, which is not divisible by 3"), "{e}");
    let e = error(&step(&format!("{mean}\n  %l = add %s, %s")), 8, None);
    assert!(e.contains("a micro-batch of batch parameter %x has 8/8 = 1 rows, which do not split over [data]"), "{e}");
    // The flags.
    let e = error(&step(&format!("{mean}\n  %l = add %s, %s")), 2, Some(&["q"]));
    assert!(e.starts_with("flag: --batch-params names 'q', but @main has no parameter 'q' (its parameters: w, x)"), "{e}");
    // No grad at all.
    let e = error("func @main(%x: f32[8] on [_]) -> (y: f32[8]) {\n  return %x\n}\n", 2, None);
    assert!(e.contains("needs a training step that takes its gradient with grad, and @main has no grad"), "{e}");
    // Differentiating with respect to the batch.
    let src = step(&format!("{mean}\n  %l = add %s, %s")).replace("{wrt=[0]} : (f32[], f32[4])", "{wrt=[0,1]} : (f32[], f32[4], f32[8,4])").replace("%l, %g = grad", "%l, %g, %gx = grad");
    let e = error(&src, 2, None);
    assert!(e.contains("differentiates with respect to batch parameter %x"), "{e}");
}
