//! Clean-up after expansion: trivial arithmetic, common subexpressions and dead
//! code, so that `--emit pir` of generated functions stays readable.
//!
//! Every rewrite is exact (bit for bit, NaN payloads aside) on every input, so
//! this pass may run on any function: `x * 1`, `x / 1`, `x - 0` and `x + (-0.0)`
//! become `x`, but `x + 0.0` stays (it turns `-0.0` into `+0.0`) and `x * 0`
//! stays (NaN and infinities). All ops are pure, so an instruction none of
//! whose results is used (by a live instruction or `return`) is removed, and
//! two identical instructions compute the same values. A value carrying a
//! sharding constraint is never replaced by one without the same constraint.
//! A function in which nothing changes is left exactly as it was.

use pjc_ir::{
    AttrValue, EntityRef, DType, FuncId, Function, Inst, InstData, Literal, Module, Number, Opcode, PrimaryMap, Value, ValueDef,
};
use std::collections::HashMap;

/// Simplifies every function of the module in place.
pub fn run(m: &mut Module) {
    let ids: Vec<FuncId> = m.funcs.keys().collect();
    for id in ids {
        function(&mut m.funcs[id]);
    }
}

/// Simplifies one function in place.
pub fn function(f: &mut Function) {
    let mut any = false;
    for _ in 0..32 {
        let mut changed = fold(f);
        changed |= cse(f);
        changed |= dce(f);
        any |= changed;
        if !changed {
            break;
        }
    }
    if any {
        compact(f);
    }
}

/// The number filling `v` when it is a `constant` with one value everywhere.
fn splat(f: &Function, v: Value) -> Option<Number> {
    let ValueDef::Result(i, _) = f.values[v].def else { return None };
    let d = &f.insts[i];
    if d.op != Opcode::Constant {
        return None;
    }
    let lit = d.literal.as_ref()?;
    let first = *lit.elems.first()?;
    lit.elems.iter().all(|e| *e == first).then_some(first)
}

fn is_zero(n: Number) -> bool {
    matches!(n, Number::Int(0) | Number::Bool(false)) || matches!(n, Number::Float(x) if x == 0.0)
}

/// Zero whose addition is exact: -0.0 for floats (x + -0.0 == x for every x).
fn is_additive_identity(n: Number) -> bool {
    matches!(n, Number::Int(0) | Number::Bool(false))
        || matches!(n, Number::Float(x) if x == 0.0 && x.is_sign_negative())
}

fn is_one(n: Number) -> bool {
    matches!(n, Number::Int(1) | Number::Bool(true)) || matches!(n, Number::Float(x) if x == 1.0)
}

fn def_inst(f: &Function, v: Value) -> Option<&InstData> {
    match f.values[v].def {
        ValueDef::Result(i, _) => Some(&f.insts[i]),
        ValueDef::Param(_) => None,
    }
}

/// What to do with one instruction.
enum Rewrite {
    /// Its result is this existing value.
    Value(Value),
    /// It becomes a constant filled with this number.
    Splat(Number),
    /// Its operands and attributes change (same op, same result type).
    Operands(Vec<Value>, Vec<(String, AttrValue)>),
    /// It becomes another instruction with these operands and attributes
    /// (same result type).
    Inst(Opcode, Vec<Value>, Vec<(String, AttrValue)>),
}

/// `transpose(dot_general(a, b))` whose permutation swaps the lhs-free and
/// rhs-free groups of the product (batch dimensions first and in place) is
/// `dot_general(b, a)` with the roles swapped, when the product has no other
/// use and no sharding constraint: the result comes out in the transposed
/// order, with the same sums of the same products (exact), and no transposing
/// kernel reads it strided (the gradient of `x @ w` read as `w`'s layout).
fn swapped_product(f: &Function, d: &InstData, uses: &[usize]) -> Option<Rewrite> {
    let g = d.operands[0];
    let dot = def_inst(f, g).filter(|i| i.op == Opcode::DotGeneral)?;
    if uses[g.index()] != 1 || f.values[g].sharding.is_some() {
        return None;
    }
    let perm = ints_attr(d, "perm")?;
    let get = |n: &str| ints_attr(dot, n).unwrap_or_default();
    let (lb, rb, lc, rc) = (get("lhs_batch"), get("rhs_batch"), get("lhs_contract"), get("rhs_contract"));
    let (ra, rbk) = (f.values[dot.operands[0]].ty.rank() as i64, f.values[dot.operands[1]].ty.rank() as i64);
    let nb = lb.len() as i64;
    let (na, nf) = (ra - nb - lc.len() as i64, rbk - nb - rc.len() as i64);
    let want: Vec<i64> = (0..nb).chain(nb + na..nb + na + nf).chain(nb..nb + na).collect();
    if perm != want || na == 0 || nf == 0 {
        return None;
    }
    let mut attrs = vec![];
    for (n, v) in [("lhs_batch", rb), ("rhs_batch", lb), ("lhs_contract", rc), ("rhs_contract", lc)] {
        if !v.is_empty() {
            attrs.push((n.to_string(), AttrValue::int_list(&v)));
        }
    }
    Some(Rewrite::Inst(Opcode::DotGeneral, vec![dot.operands[1], dot.operands[0]], attrs))
}

/// How many times each value is used (by instructions and `return`), by
/// value index: a dense table, not a hash map, because on large functions
/// the random accesses of a map keyed by value miss the cache (issue 17).
fn use_counts(f: &Function) -> Vec<usize> {
    let mut n = vec![0usize; f.values.len()];
    for &i in &f.body {
        for &v in &f.insts[i].operands {
            n[v.index()] += 1;
        }
    }
    for &v in &f.ret {
        n[v.index()] += 1;
    }
    n
}

fn ints_attr(d: &InstData, name: &str) -> Option<Vec<i64>> {
    d.attr(name).and_then(|a| a.as_ints())
}

/// A float number converted to another float dtype, or an integer to another
/// integer dtype that holds it.
fn convert_number(n: Number, to: DType) -> Option<Number> {
    match n {
        Number::Float(x) if to.is_float() => Some(Number::Float(to.round_f64(x))),
        Number::Int(i) if to.is_int() => {
            let (lo, hi) = to.int_range()?;
            (lo..=hi).contains(&i).then_some(Number::Int(i))
        }
        _ => None,
    }
}

fn rewrite(f: &Function, d: &InstData, uses: &[usize]) -> Option<Rewrite> {
    use Opcode::*;
    if d.results.len() != 1 {
        return None;
    }
    let r = d.results[0];
    let rt = &f.values[r].ty;
    let ops = &d.operands;
    let s = |k: usize| ops.get(k).and_then(|&v| splat(f, v));
    let same_type = |v: Value| f.values[v].ty == *rt;
    match d.op {
        Add if s(1).is_some_and(is_additive_identity) => Some(Rewrite::Value(ops[0])),
        Add if s(0).is_some_and(is_additive_identity) => Some(Rewrite::Value(ops[1])),
        Sub if s(1).is_some_and(|n| is_zero(n) && !matches!(n, Number::Float(x) if x.is_sign_negative())) => {
            Some(Rewrite::Value(ops[0]))
        }
        Mul if s(1).is_some_and(is_one) => Some(Rewrite::Value(ops[0])),
        Mul if s(0).is_some_and(is_one) => Some(Rewrite::Value(ops[1])),
        Div if s(1).is_some_and(is_one) => Some(Rewrite::Value(ops[0])),
        Neg => match def_inst(f, ops[0]) {
            Some(inner) if inner.op == Neg => Some(Rewrite::Value(inner.operands[0])),
            _ => None,
        },
        Select if ops[1] == ops[2] => Some(Rewrite::Value(ops[1])),
        Select => match s(0) {
            Some(Number::Bool(true)) => Some(Rewrite::Value(ops[1])),
            Some(Number::Bool(false)) => Some(Rewrite::Value(ops[2])),
            _ => None,
        },
        // Data movement of a constant filled with one number is that constant.
        Broadcast | Reshape | Transpose | Reverse | Slice | DynamicSlice if s(0).is_some() => {
            Some(Rewrite::Splat(s(0).unwrap()))
        }
        Pad if s(0).is_some() && s(0) == s(1) => Some(Rewrite::Splat(s(0).unwrap())),
        Concat if ops.iter().all(|&v| splat(f, v).is_some() && splat(f, v) == s(0)) => {
            Some(Rewrite::Splat(s(0).unwrap()))
        }
        Convert if same_type(ops[0]) => Some(Rewrite::Value(ops[0])),
        Convert => s(0).and_then(|n| convert_number(n, rt.dtype)).map(Rewrite::Splat),
        Reshape | Broadcast | Slice | Pad | Concat | Reverse | Transpose | Reduce
            if same_type(ops[0]) && identity(f, d) =>
        {
            Some(Rewrite::Value(ops[0]))
        }
        Reshape => match def_inst(f, ops[0]) {
            Some(inner) if inner.op == Reshape => Some(Rewrite::Operands(vec![inner.operands[0]], vec![])),
            _ => None,
        },
        Transpose if def_inst(f, ops[0]).is_some_and(|i| i.op == DotGeneral) => swapped_product(f, d, uses),
        Transpose => {
            let inner = def_inst(f, ops[0]).filter(|i| i.op == Transpose)?;
            let p1 = ints_attr(inner, "perm")?;
            let p2 = ints_attr(d, "perm")?;
            let p: Vec<i64> = p2.iter().map(|&i| p1[i as usize]).collect();
            Some(Rewrite::Operands(vec![inner.operands[0]], vec![("perm".into(), AttrValue::int_list(&p))]))
        }
        Reduce => {
            let n = s(0)?;
            let kind = d.attr("kind").and_then(|a| a.as_ident())?;
            match kind {
                "max" | "min" | "and" | "or" => Some(Rewrite::Splat(n)),
                "sum" if is_zero(n) => Some(Rewrite::Splat(n)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether a shape op of an operand of the result's type is the identity.
fn identity(f: &Function, d: &InstData) -> bool {
    use Opcode::*;
    let t = &f.values[d.operands[0]].ty;
    let seq = |v: Option<Vec<i64>>| v.is_none_or(|v| v.iter().enumerate().all(|(i, &x)| i as i64 == x));
    let all = |name: &str, x: i64| ints_attr(d, name).is_none_or(|v| v.iter().all(|&y| y == x));
    match d.op {
        Reshape => true,
        Broadcast => seq(ints_attr(d, "dims")),
        Transpose => seq(ints_attr(d, "perm")),
        Slice => all("start", 0) && all("stride", 1),
        Pad => all("low", 0) && all("high", 0) && all("interior", 0),
        Concat => d.operands.len() == 1,
        Reverse => ints_attr(d, "dims").is_some_and(|v| v.iter().all(|&k| t.shape.get(k as usize) == Some(&1))),
        Reduce => ints_attr(d, "dims").is_some_and(|v| v.is_empty()),
        _ => false,
    }
}

/// Replaces uses (operands and `return`) through `rep`, following chains.
fn apply(f: &mut Function, rep: &HashMap<Value, Value>) {
    let resolve = |mut v: Value| {
        while let Some(&w) = rep.get(&v) {
            v = w;
        }
        v
    };
    let body = f.body.clone();
    for i in body {
        for o in f.insts[i].operands.iter_mut() {
            *o = resolve(*o);
        }
    }
    for o in f.ret.iter_mut() {
        *o = resolve(*o);
    }
}

/// May uses of `r` read `v` instead? Not when that would drop `r`'s constraint.
fn may_replace(f: &Function, r: Value, v: Value) -> bool {
    f.values[r].ty == f.values[v].ty && (f.values[r].sharding.is_none() || f.values[r].sharding == f.values[v].sharding)
}

fn fold(f: &mut Function) -> bool {
    let mut changed = false;
    let mut rep: HashMap<Value, Value> = HashMap::new();
    let body = f.body.clone();
    let uses = use_counts(f);
    for i in body {
        // Operands first, so rewrites see through earlier ones.
        let resolve = |mut v: Value| {
            while let Some(&w) = rep.get(&v) {
                v = w;
            }
            v
        };
        let ops: Vec<Value> = f.insts[i].operands.iter().map(|&v| resolve(v)).collect();
        if ops != f.insts[i].operands {
            f.insts[i].operands = ops;
        }
        let Some(rw) = rewrite(f, &f.insts[i], &uses) else { continue };
        let r = f.insts[i].results[0];
        match rw {
            Rewrite::Value(v) if v != r && may_replace(f, r, v) => {
                rep.insert(r, v);
                changed = true;
            }
            Rewrite::Value(_) => {}
            Rewrite::Splat(n) => {
                let d = &mut f.insts[i];
                d.op = Opcode::Constant;
                d.operands.clear();
                d.operand_spans.clear();
                d.attrs.clear();
                d.literal = Some(Literal { shape: vec![], elems: vec![n] });
                d.types_written = true;
                changed = true;
            }
            Rewrite::Operands(ops, attrs) => {
                let d = &mut f.insts[i];
                d.operand_spans = vec![pjc_ir::Span::NONE; ops.len()];
                d.operands = ops;
                for (n, v) in attrs {
                    d.set_attr(&n, v);
                }
                changed = true;
            }
            Rewrite::Inst(op, ops, attrs) => {
                let d = &mut f.insts[i];
                d.op = op;
                d.operand_spans = vec![pjc_ir::Span::NONE; ops.len()];
                d.operands = ops;
                d.attrs.clear();
                for (n, v) in attrs {
                    d.set_attr(&n, v);
                }
                d.types_written = true;
                changed = true;
            }
        }
    }
    if !rep.is_empty() {
        apply(f, &rep);
    }
    changed
}

/// Common-subexpression elimination: an instruction identical to an earlier
/// one (op, operands, attributes, callee, literal, result types) reuses its results.
fn cse(f: &mut Function) -> bool {
    let mut seen: HashMap<String, Vec<Value>> = HashMap::new();
    let mut rep: HashMap<Value, Value> = HashMap::new();
    let body = f.body.clone();
    for i in body {
        let resolve = |mut v: Value| {
            while let Some(&w) = rep.get(&v) {
                v = w;
            }
            v
        };
        let ops: Vec<Value> = f.insts[i].operands.iter().map(|&v| resolve(v)).collect();
        f.insts[i].operands = ops;
        let d = &f.insts[i];
        if d.results.iter().any(|&r| f.values[r].sharding.is_some()) {
            continue;
        }
        let attrs: Vec<(&str, &AttrValue)> = d.attrs.iter().map(|a| (a.name.as_str(), &a.value)).collect();
        let types: Vec<String> = d.results.iter().map(|&r| f.values[r].ty.to_string()).collect();
        let key = format!("{:?}|{:?}|{:?}|{:?}|{:?}|{:?}", d.op, d.operands, attrs, d.callees, d.literal, types);
        match seen.get(&key) {
            Some(prev) => {
                for (&r, &p) in d.results.iter().zip(prev) {
                    rep.insert(r, p);
                }
            }
            None => {
                seen.insert(key, d.results.clone());
            }
        }
    }
    if rep.is_empty() {
        return false;
    }
    apply(f, &rep);
    true
}

/// Removes instructions whose results are all unused.
fn dce(f: &mut Function) -> bool {
    // Liveness by value index (dense: see `use_counts`).
    let mut live = vec![false; f.values.len()];
    for &v in &f.ret {
        live[v.index()] = true;
    }
    let mut keep: Vec<Inst> = vec![];
    for &i in f.body.iter().rev() {
        let d = &f.insts[i];
        if d.results.iter().any(|r| live[r.index()]) {
            for &o in &d.operands {
                live[o.index()] = true;
            }
            keep.push(i);
        }
    }
    keep.reverse();
    let changed = keep.len() != f.body.len();
    f.body = keep;
    changed
}

/// Rebuilds the value and instruction arenas with only what the body uses, in
/// the order the parser creates them (parameters, then results in body order).
/// Rebuilds `f`'s arenas with only its parameters and the values and
/// instructions of its body (in body order), renumbering the handles.
pub(crate) fn compact(f: &mut Function) {
    // Old value index -> new value (dense: see `use_counts`).
    let mut map: Vec<Option<Value>> = vec![None; f.values.len()];
    let mut values = PrimaryMap::new();
    let mut insts: PrimaryMap<Inst, InstData> = PrimaryMap::new();
    let mut params = vec![];
    for (k, &p) in f.params.iter().enumerate() {
        let mut v = f.values[p].clone();
        v.def = ValueDef::Param(k);
        let nv = values.push(v);
        map[p.index()] = Some(nv);
        params.push(nv);
    }
    let mut body = vec![];
    for &i in &f.body {
        let mut d = f.insts[i].clone();
        d.operands = d.operands.iter().map(|v| map[v.index()].expect("defined before use")).collect();
        let old_results = std::mem::take(&mut d.results);
        let ni = insts.push(d);
        let mut results = vec![];
        for (k, &r) in old_results.iter().enumerate() {
            let mut v = f.values[r].clone();
            v.def = ValueDef::Result(ni, k);
            let nv = values.push(v);
            map[r.index()] = Some(nv);
            results.push(nv);
        }
        insts[ni].results = results;
        body.push(ni);
    }
    f.ret = f.ret.iter().map(|v| map[v.index()].expect("defined before use")).collect();
    f.params = params;
    f.values = values;
    f.insts = insts;
    f.body = body;
}

#[cfg(test)]
mod tests {
    use super::*;
    use pjc_ir::{FuncKind, Span, TensorType};

    fn constant(f: &mut Function, n: Number, ty: TensorType, name: &str) -> Value {
        let mut d = InstData::new(Opcode::Constant);
        d.literal = Some(Literal { shape: vec![], elems: vec![n] });
        let i = f.insts.push(d);
        let v = f.add_value(name, ty, ValueDef::Result(i, 0), Span::NONE);
        f.insts[i].results = vec![v];
        f.body.push(i);
        v
    }

    fn op(f: &mut Function, op: Opcode, operands: &[Value], ty: TensorType, name: &str) -> Value {
        let mut d = InstData::new(op);
        d.operands = operands.to_vec();
        d.operand_spans = vec![Span::NONE; operands.len()];
        let i = f.insts.push(d);
        let v = f.add_value(name, ty, ValueDef::Result(i, 0), Span::NONE);
        f.insts[i].results = vec![v];
        f.body.push(i);
        v
    }

    #[test]
    fn exact_identities_and_dead_code() {
        let t = TensorType::new(DType::F32, vec![3]);
        let mut f = Function::new("f", FuncKind::Global);
        let x = f.add_value("x", t.clone(), ValueDef::Param(0), Span::NONE);
        f.params.push(x);
        let one = constant(&mut f, Number::Float(1.0), t.clone(), "one");
        let pz = constant(&mut f, Number::Float(0.0), t.clone(), "pz");
        let nz = constant(&mut f, Number::Float(-0.0), t.clone(), "nz");
        let a = op(&mut f, Opcode::Mul, &[x, one], t.clone(), "a");
        let b = op(&mut f, Opcode::Add, &[a, nz], t.clone(), "b");
        let c = op(&mut f, Opcode::Add, &[b, pz], t.clone(), "c"); // kept: -0.0 + 0.0 is +0.0
        let _dead = op(&mut f, Opcode::Exp, &[x], t.clone(), "dead");
        f.ret = vec![c];
        function(&mut f);
        let ops: Vec<Opcode> = f.body.iter().map(|&i| f.insts[i].op).collect();
        assert_eq!(ops, vec![Opcode::Constant, Opcode::Add]);
        let add = &f.insts[f.body[1]];
        assert_eq!(add.operands[0], f.params[0]);
        assert_eq!(f.values.len(), 3);
    }

    #[test]
    fn common_subexpressions_merge_and_untouched_functions_stay() {
        let t = TensorType::new(DType::F64, vec![2]);
        let mut f = Function::new("f", FuncKind::Global);
        let x = f.add_value("x", t.clone(), ValueDef::Param(0), Span::NONE);
        f.params.push(x);
        let a = op(&mut f, Opcode::Exp, &[x], t.clone(), "a");
        let b = op(&mut f, Opcode::Exp, &[x], t.clone(), "b");
        let c = op(&mut f, Opcode::Add, &[a, b], t.clone(), "c");
        f.ret = vec![c];
        let g = f.clone();
        function(&mut f);
        assert_eq!(f.body.len(), 2);
        let add = &f.insts[f.body[1]];
        assert_eq!(add.operands[0], add.operands[1]);
        // Nothing to do: the function is left as it was.
        let mut h = Function::new("h", FuncKind::Global);
        let x = h.add_value("x", t.clone(), ValueDef::Param(0), Span::NONE);
        h.params.push(x);
        let e = op(&mut h, Opcode::Exp, &[x], t.clone(), "e");
        h.ret = vec![e];
        let before = h.clone();
        function(&mut h);
        assert_eq!(h, before);
        let _ = g;
    }

    #[test]
    fn a_transposed_product_is_the_product_with_its_operands_swapped() {
        // The weight gradient of y = x @ w read in w's layout: one product,
        // operands swapped, equal to the interpreter's transpose exactly.
        let src = "func @f(%x: f32[4,3], %dy: f32[4,5], %a: f32[2,6,3], %b: f32[2,3,7]) -> (f32[5,3], f32[2,7,6]) {
  %g = dot_general %x, %dy {lhs_contract=[0], rhs_contract=[0]} : f32[3,5]
  %t = transpose %g {perm=[1,0]}
  %h = dot_general %a, %b {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]} : f32[2,6,7]
  %u = transpose %h {perm=[0,2,1]}
  return %t, %u
}
";
        let text = simplified(src);
        assert!(!text.contains("transpose"), "{text}");
        assert!(text.contains("dot_general %dy, %x {lhs_contract=[0], rhs_contract=[0]} : f32[5,3]"), "{text}");
        assert!(text.contains("dot_general %b, %a {lhs_batch=[0], rhs_batch=[0], lhs_contract=[1], rhs_contract=[2]} : f32[2,7,6]"), "{text}");
        let (m0, m1) = (pjc_front::load(src).unwrap(), pjc_front::load(&text).unwrap());
        let args: Vec<pjc_tensor::Tensor> = [vec![4usize, 3], vec![4, 5], vec![2, 6, 3], vec![2, 3, 7]]
            .iter()
            .enumerate()
            .map(|(k, sh)| {
                let n: usize = sh.iter().product();
                pjc_tensor::Tensor::new(sh.clone(), pjc_tensor::Buf::F32((0..n).map(|i| ((i * 37 + k * 11) % 23) as f32 * 0.173 - 1.9).collect()))
            })
            .collect();
        let e0 = pjc_interp::eval(&m0, m0.func_by_name("f").unwrap(), args.clone()).unwrap();
        let e1 = pjc_interp::eval(&m1, m1.func_by_name("f").unwrap(), args).unwrap();
        assert_eq!(e0, e1);
        // A product with another use, or another permutation, stays.
        let kept = simplified("func @f(%x: f32[4,3], %dy: f32[4,5]) -> (f32[5,3], f32[3,5]) {
  %g = dot_general %x, %dy {lhs_contract=[0], rhs_contract=[0]} : f32[3,5]
  %t = transpose %g {perm=[1,0]}
  return %t, %g
}
");
        assert!(kept.contains("transpose"), "{kept}");
    }

    fn simplified(src: &str) -> String {
        let mut m = pjc_front::load(src).unwrap_or_else(|d| panic!("{d:?}"));
        run(&mut m);
        let text = pjc_front::print_module(&m);
        pjc_front::load(&text).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
        text
    }

    #[test]
    fn shape_ops_of_constants_and_chains_fold() {
        let text = simplified(
            "func @f(%y: f32[2,3]) -> (f32[2,3], f32[3,2]) {
  %c = constant 2.0 : f32[]
  %cb = broadcast %c : f32[2,3]
  %r1 = reshape %y : f32[3,2]
  %r2 = reshape %r1 : f32[6]
  %r3 = reshape %r2 : f32[2,3]
  %t1 = transpose %y {perm=[1,0]}
  %t2 = transpose %t1 {perm=[1,0]}
  %s = add %r3, %t2
  %m = mul %s, %cb
  %one = constant 1.0 : f32[2,3]
  %m1 = mul %one, %m
  %n1 = neg %m1
  %n2 = neg %n1
  %b = constant true : pred[]
  %p = select %b, %n2, %y
  return %p, %r1
}
",
        );
        let want = "func @f(%y: f32[2,3]) -> (f32[2,3], f32[3,2]) {
  %cb = constant 2.0 : f32[2,3]
  %r1 = reshape %y : f32[3,2]
  %s = add %y, %y : f32[2,3]
  %m = mul %s, %cb : f32[2,3]
  return %m, %r1
}
";
        assert_eq!(text, want);
    }

    #[test]
    fn inexact_rewrites_and_constrained_values_are_kept() {
        let src = "mesh [d=2]
func @f(%x: f32[4]) -> (f32[4], f32[4], f32[4]) {
  %z = constant 0.0 : f32[4]
  %a = add %x, %z
  %b = mul %x, %z
  %one = constant 1.0 : f32[4]
  %c = mul %x, %one : f32[4] on [d]
  return %a, %b, %c
}
";
        let text = simplified(src);
        assert!(text.contains("%a = add %x, %z"), "{text}");
        assert!(text.contains("%b = mul %x, %z"), "{text}");
        assert!(text.contains("%c = mul %x, %one : f32[4] on [d]"), "{text}");
    }
}
