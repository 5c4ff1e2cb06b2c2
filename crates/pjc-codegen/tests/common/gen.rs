//! Generated test programs: every dtype × odd sizes × (elementwise chain,
//! broadcast + transpose, reductions over several dims, conversions and
//! bitcasts), with inputs that include the edge cases of spec section 11.

use pjc_ir::DType;
use pjc_tensor::{Buf, Tensor};

pub const SIZES: [usize; 4] = [1, 3, 783, 4097];

pub struct Gen {
    pub name: String,
    pub src: String,
    #[allow(dead_code)]
    pub args: Vec<Tensor>,
}

/// xorshift64*: deterministic inputs.
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const FLOAT_SPECIALS: [f64; 20] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    -0.0,
    0.0,
    1e-40,
    -3e-310,
    6e-8,
    2.5,
    -2.5,
    0.5,
    65520.0,
    -1e10,
    3e38,
    16777217.0,
    9.3e18,
    -9.3e18,
    1.9e19,
    300.0,
    -129.5,
];

/// Float inputs: mostly uniform in [-4, 4], every 7th an edge case (`wild`)
/// or NaN/inf/-0.0 only (`!wild`, for reductions, where huge finite values
/// would make the result depend on the summation order beyond the spec's
/// tolerance).
fn floats(r: &mut Rng, n: usize, wild: bool) -> Vec<f64> {
    (0..n)
        .map(|i| {
            if i % 7 == 3 {
                if wild {
                    FLOAT_SPECIALS[(r.next() % FLOAT_SPECIALS.len() as u64) as usize]
                } else {
                    [f64::NAN, f64::INFINITY, -0.0, 0.0, 1e-40][(r.next() % 5) as usize]
                }
            } else {
                (r.unit() * 8.0 - 4.0) * if r.next() & 3 == 0 { 0.01 } else { 1.0 }
            }
        })
        .collect()
}

fn ints(r: &mut Rng, d: DType, n: usize, small: bool) -> Vec<i128> {
    let (lo, hi) = d.int_range().unwrap();
    let bits = d.bits() as i128;
    (0..n)
        .map(|i| {
            if i % 5 == 2 {
                [0, 1, -1, 2, -2, lo, hi, bits, bits - 1][(r.next() % 9) as usize]
            } else if small || r.next() & 1 == 0 {
                (r.next() % (bits as u64 + 7)) as i128 - 3
            } else {
                r.next() as i128
            }
        })
        .collect()
}

pub fn input(r: &mut Rng, d: DType, shape: &[usize], kind: &str) -> Tensor {
    let n: usize = shape.iter().product();
    let buf = if d.is_float() {
        Buf::from_f64(d, &floats(r, n, kind != "tame"))
    } else if d.is_int() {
        Buf::from_i128(d, &ints(r, d, n, kind == "small"))
    } else {
        Buf::Pred((0..n).map(|_| r.next() & 1 == 0).collect())
    };
    Tensor::new(shape.to_vec(), buf)
}

fn ty(d: DType, shape: &[usize]) -> String {
    format!(
        "{}[{}]",
        d.name(),
        shape
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// Every generated program.
pub fn programs() -> Vec<Gen> {
    let mut out = vec![];
    for (di, &d) in DType::ALL.iter().enumerate() {
        for &n in &SIZES {
            let mut r = Rng::new((di * 100 + n) as u64);
            let tag = format!("{}_{n}", d.name());
            out.push(chain(d, n, &mut r, &tag));
            out.push(bcast_transpose(d, n, &mut r, &tag));
            out.push(reductions(d, n, &mut r, &tag));
            out.push(conversions(d, n, &mut r, &tag));
        }
    }
    for (i, d) in [DType::F32, DType::BF16, DType::I32, DType::U8, DType::Pred]
        .into_iter()
        .enumerate()
    {
        out.push(threaded(d, &mut Rng::new(7000 + i as u64)));
    }
    out
}

/// Big enough (300 x 333 points) for the JIT to split kernels over threads at
/// points that are not row starts.
fn threaded(d: DType, r: &mut Rng) -> Gen {
    let (op, k1, k2) = if d.is_pred() {
        ("or", "or", "and")
    } else {
        ("add", "sum", "max")
    };
    let x = ty(d, &[300, 333]);
    let src = format!(
        "func @main(%x: {x}, %v: {v}) -> (a: {x}, b: {xt}, r0: {v}, r1: {r1}) {{\n  %vb = broadcast %v {{dims=[1]}} : {x}\n  %a = {op} %x, %vb\n  %b = transpose %a {{perm=[1, 0]}} : {xt}\n  %r0 = reduce %x {{dims=[0], kind={k2}}} : {v}\n  %r1 = reduce %x {{dims=[1], kind={k1}}} : {r1}\n  return %a, %b, %r0, %r1\n}}\n",
        v = ty(d, &[333]),
        xt = ty(d, &[333, 300]),
        r1 = ty(d, &[300]),
    );
    let args = vec![
        input(r, d, &[300, 333], "tame"),
        input(r, d, &[333], "tame"),
    ];
    Gen {
        name: format!("threaded_{}", d.name()),
        src,
        args,
    }
}

fn chain(d: DType, n: usize, r: &mut Rng, tag: &str) -> Gen {
    let t = ty(d, &[n]);
    let (body, rets, kind_y) = if d.is_float() {
        (
            format!(
                "  %t1 = mul %x, %y\n  %t2 = sub %t1, %x\n  %t3 = max %t2, %y\n  %t4 = tanh %t3\n  %c = compare %t4, %x {{dir=lt}}\n  %t5 = select %c, %t4, %y\n  %m = min %x, %y\n  %q = div %x, %y\n  %rm = rem %x, %y\n  %s = sign %x\n  %re = round_even %y\n  %ro = round %y\n  %e = exp %x\n  %l = log1p %y\n  %fi = is_finite %t1\n  %i = convert %t5 : {}\n",
                ty(DType::I32, &[n])
            ),
            vec!["t5", "m", "q", "rm", "s", "re", "ro", "e", "l", "fi", "i"],
            "wild",
        )
    } else if d.is_int() {
        (
            "  %t1 = mul %x, %y\n  %t2 = add %t1, %x\n  %t3 = div %t2, %y\n  %t4 = rem %x, %y\n  %t5 = shl %t3, %y\n  %t6 = shr %t4, %y\n  %t7 = xor %t5, %t6\n  %t8 = max %t7, %x\n  %t9 = min %t8, %y\n  %p = pow %x, %y\n  %sg = sign %x\n  %ab = abs %x\n  %ng = neg %x\n  %nt = not %x\n  %sh = shr %x, %y\n  %sl = shl %x, %y\n".to_string(),
            vec!["t9", "p", "sg", "ab", "ng", "nt", "t3", "t4", "sh", "sl"],
            "small",
        )
    } else {
        (
            "  %t1 = and %x, %y\n  %nx = not %x\n  %t2 = or %t1, %nx\n  %t3 = xor %t2, %y\n  %t4 = select %t3, %x, %y\n  %c = compare %x, %y {dir=lt}\n  %mx = max %x, %y\n  %mn = mul %x, %y\n".to_string(),
            vec!["t4", "c", "mx", "mn"],
            "",
        )
    };
    let ret_tys: Vec<String> = rets
        .iter()
        .map(|v| match *v {
            "fi" => format!("{v}: {}", ty(DType::Pred, &[n])),
            "i" => format!("{v}: {}", ty(DType::I32, &[n])),
            "c" => format!("{v}: {}", ty(DType::Pred, &[n])),
            _ => format!("{v}: {t}"),
        })
        .collect();
    let src = format!(
        "func @main(%x: {t}, %y: {t}) -> ({}) {{\n{body}  return {}\n}}\n",
        ret_tys.join(", "),
        rets.iter()
            .map(|v| format!("%{v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let args = vec![input(r, d, &[n], "wild"), input(r, d, &[n], kind_y)];
    Gen {
        name: format!("chain_{tag}"),
        src,
        args,
    }
}

fn bcast_transpose(d: DType, n: usize, r: &mut Rng, tag: &str) -> Gen {
    let op = if d.is_pred() { "or" } else { "add" };
    let op2 = if d.is_pred() {
        "xor"
    } else if d.is_float() {
        "mul"
    } else {
        "sub"
    };
    let src = format!(
        "func @main(%x: {x}, %v: {v}, %s: {s}) -> (a: {x}, b: {xt}, c: {xt}, d: {x}) {{\n  %vb = broadcast %v {{dims=[1]}} : {x}\n  %a = {op} %x, %vb\n  %xt = transpose %x {{perm=[1, 0]}} : {xt}\n  %vt = broadcast %v {{dims=[0]}} : {xt}\n  %b = {op2} %xt, %vt\n  %sb = broadcast %s : {xt}\n  %c = {op} %b, %sb\n  %rv = reverse %x {{dims=[1]}} : {x}\n  %d = {op2} %rv, %a\n  return %a, %b, %c, %d\n}}\n",
        x = ty(d, &[3, n]),
        xt = ty(d, &[n, 3]),
        v = ty(d, &[n]),
        s = ty(d, &[]),
    );
    let args = vec![
        input(r, d, &[3, n], "wild"),
        input(r, d, &[n], "wild"),
        input(r, d, &[], "wild"),
    ];
    Gen {
        name: format!("bcast_transpose_{tag}"),
        src,
        args,
    }
}

fn reductions(d: DType, n: usize, r: &mut Rng, tag: &str) -> Gen {
    let x = ty(d, &[3, n, 2]);
    let (k1, k2, k3, k4) = if d.is_pred() {
        ("or", "and", "max", "min")
    } else if d.is_float() {
        ("sum", "max", "min", "prod")
    } else {
        ("sum", "max", "min", "and")
    };
    let k5 = if d.is_int() { "or" } else { k1 };
    let sq = if d.is_pred() { "and" } else { "mul" };
    let src = format!(
        "func @main(%x: {x}) -> (r1: {t1}, r2: {t2}, r3: {t3}, r4: {t4}, r5: {t5}, r6: {t6}) {{\n  %r1 = reduce %x {{dims=[0, 2], kind={k1}}} : {t1}\n  %r2 = reduce %x {{dims=[1], kind={k2}}} : {t2}\n  %r3 = reduce %x {{dims=[0, 1, 2], kind={k3}}} : {t3}\n  %r4 = reduce %x {{dims=[2], kind={k4}}} : {t4}\n  %r5 = reduce %x {{dims=[0], kind={k5}}} : {t5}\n  %xx = {sq} %x, %x\n  %r6 = reduce %xx {{dims=[1, 2], kind={k1}}} : {t6}\n  return %r1, %r2, %r3, %r4, %r5, %r6\n}}\n",
        t1 = ty(d, &[n]),
        t2 = ty(d, &[3, 2]),
        t3 = ty(d, &[]),
        t4 = ty(d, &[3, n]),
        t5 = ty(d, &[n, 2]),
        t6 = ty(d, &[3]),
    );
    let args = vec![input(r, d, &[3, n, 2], "tame")];
    Gen {
        name: format!("reduce_{tag}"),
        src,
        args,
    }
}

fn conversions(d: DType, n: usize, r: &mut Rng, tag: &str) -> Gen {
    let mut body = String::new();
    let mut rets = vec![];
    for &to in DType::ALL.iter() {
        if to == d {
            continue;
        }
        body.push_str(&format!(
            "  %c_{0} = convert %x : {1}\n",
            to.name(),
            ty(to, &[n])
        ));
        rets.push((format!("c_{}", to.name()), to));
        if !d.is_pred() && !to.is_pred() && to.bits() == d.bits() {
            body.push_str(&format!(
                "  %b_{0} = bitcast_convert %x : {1}\n",
                to.name(),
                ty(to, &[n])
            ));
            rets.push((format!("b_{}", to.name()), to));
        }
    }
    let src = format!(
        "func @main(%x: {}) -> ({}) {{\n{body}  return {}\n}}\n",
        ty(d, &[n]),
        rets.iter()
            .map(|(v, t)| format!("{v}: {}", ty(*t, &[n])))
            .collect::<Vec<_>>()
            .join(", "),
        rets.iter()
            .map(|(v, _)| format!("%{v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let args = vec![input(r, d, &[n], "wild")];
    Gen {
        name: format!("convert_{tag}"),
        src,
        args,
    }
}
