//! PIR to MLIR text in upstream dialects (docs/mlir.md has the mapping table).
//!
//! Every PIR instruction becomes one MLIR op that carries the PIR result names
//! (`pir.names`); the helper ops some mappings need (an `index`/`tensor.empty`
//! init, a shape constant, `tensor.extract` of a scalar predicate) carry none.
//! Ops without an exact upstream equivalent are a `func.call` of a private
//! declaration `@pir.OP.N` with the op's name (`pir.op`) and attributes
//! (`pir.attrs`) on the call. In the global view every value is followed by a
//! `shard.shard` to its propagated sharding (`pir.written` where the source wrote
//! it); result shardings are a `shard.shard` before `return` marked `pir.result`.

use pjc_dialects::{DType, Opcode};
use pjc_ir::{
    AttrValue, DimSharding, FuncKind, Function, InstData, Mesh, Module, Number, Sharding,
    TensorType, Value,
};
use std::collections::HashMap;
use std::fmt::Write;

/// The MLIR element type of a dtype (integers are signless; unsignedness is the
/// `pir.dtypes` attribute's and the ops' business).
pub fn elem(d: DType) -> &'static str {
    match d {
        DType::F64 => "f64",
        DType::F32 => "f32",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::I64 | DType::U64 => "i64",
        DType::I32 | DType::U32 => "i32",
        DType::I16 | DType::U16 => "i16",
        DType::I8 | DType::U8 => "i8",
        DType::Pred => "i1",
    }
}

/// `tensor<4x8xf32>`, `tensor<f32>` for a scalar.
pub fn ty(t: &TensorType) -> String {
    let mut s = String::from("tensor<");
    for d in &t.shape {
        let _ = write!(s, "{d}x");
    }
    s.push_str(elem(t.dtype));
    s.push('>');
    s
}

fn quote(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\{:02X}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A PIR attribute value as an MLIR attribute (identifiers and strings are
/// string attributes; import tells them apart by the op's attribute kinds).
fn attr_value(v: &AttrValue) -> String {
    match v {
        AttrValue::Int(i) => format!("{i} : i64"),
        AttrValue::Float(f) => format!("{} : f64", float_text(*f, DType::F64)),
        AttrValue::Bool(b) => b.to_string(),
        AttrValue::Ident(s) | AttrValue::Str(s) => quote(s),
        AttrValue::List(l) => format!(
            "[{}]",
            l.iter().map(attr_value).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A float as an MLIR literal: decimal with a `.` (exact: Rust prints the
/// shortest f64 that reads back, and the value is already of the dtype), hex
/// bits for inf and NaN.
pub fn float_text(f: f64, d: DType) -> String {
    if f.is_finite() {
        let s = format!("{f:e}");
        let (m, e) = s.split_once('e').expect("exponent");
        let m = if m.contains('.') {
            m.to_string()
        } else {
            format!("{m}.0")
        };
        return format!("{m}e{e}");
    }
    match d {
        DType::F64 => format!("0x{:016X}", f.to_bits()),
        DType::F32 => format!("0x{:08X}", (f as f32).to_bits()),
        DType::F16 => format!("0x{:04X}", half::f16::from_f64(f).to_bits()),
        _ => format!("0x{:04X}", half::bf16::from_f64(f).to_bits()),
    }
}

fn number_text(n: &Number, d: DType) -> String {
    match n {
        Number::Int(i) if d.is_float() => float_text(*i as f64, d),
        Number::Int(i) if d == DType::Pred => (*i != 0).to_string(),
        Number::Int(i) => {
            // Signless: an unsigned value past the signed range is written as its
            // two's-complement signed value of the width.
            let bits = d.bits();
            let v = if d.is_unsigned_int() && bits < 128 && *i >= (1i128 << (bits - 1)) {
                *i - (1i128 << bits)
            } else {
                *i
            };
            v.to_string()
        }
        Number::Float(f) => float_text(*f, d),
        Number::Bool(b) if d == DType::Pred => b.to_string(),
        Number::Bool(b) => (*b as i32).to_string(),
    }
}

/// Which view of the program.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum View {
    /// Global arrays with `shard.shard` annotations (functions as written).
    Global,
    /// The per-device program: local shapes and `shard` collectives.
    Spmd,
}

struct Emitter<'m> {
    out: String,
    decls: String,
    decl_count: usize,
    mesh: Mesh,
    /// The propagated module (every value's sharding), global view only.
    sharded: Option<&'m Module>,
    /// The names of the module's `spmd func`s.
    spmd_funcs: Vec<String>,
}

/// The MLIR text of a module. `sharded` is the same module with every value's
/// propagated sharding (pjc_sharding::annotate), for the global view.
pub fn module_text(m: &Module, sharded: Option<&Module>, view: View) -> String {
    let mut e = Emitter {
        out: String::new(),
        decls: String::new(),
        decl_count: 0,
        mesh: m.mesh_or_single(),
        sharded,
        spmd_funcs: m
            .funcs
            .values()
            .filter(|f| f.kind == FuncKind::Spmd)
            .map(|f| f.name.clone())
            .collect(),
    };
    let axes = e
        .mesh
        .axes
        .iter()
        .map(|a| quote(&a.name))
        .collect::<Vec<_>>()
        .join(", ");
    let view_name = if view == View::Global {
        "global"
    } else {
        "spmd"
    };
    let _ = writeln!(
        e.out,
        "module attributes {{pir.view = \"{view_name}\", pir.mesh = {}}} {{",
        m.mesh.is_some()
    );
    let shape = if e.mesh.axes.is_empty() {
        "1".to_string()
    } else {
        e.mesh
            .axes
            .iter()
            .map(|a| a.size.to_string())
            .collect::<Vec<_>>()
            .join("x")
    };
    let _ = writeln!(
        e.out,
        "  shard.grid @mesh(shape = {shape}) {{pir.axes = [{}]}}",
        if e.mesh.axes.is_empty() {
            quote("_")
        } else {
            axes
        }
    );
    for (id, f) in m.funcs.iter() {
        let sf = sharded.map(|s| &s.funcs[id]);
        e.func(f, sf);
    }
    let mut text = e.out;
    text.push_str(&e.decls);
    text.push_str("}\n");
    text
}

/// Per-function state: the MLIR name of each PIR value.
struct FnState {
    names: HashMap<Value, String>,
    next: usize,
}

impl FnState {
    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("%{prefix}{}", self.next)
    }
    fn get(&self, v: Value) -> &str {
        &self.names[&v]
    }
}

fn names_attr(f: &Function, vals: &[Value]) -> String {
    let names = vals
        .iter()
        .map(|&v| quote(&f.values[v].name))
        .collect::<Vec<_>>()
        .join(", ");
    let mut s = format!("pir.names = [{names}]");
    if vals.iter().any(|&v| f.ty(v).dtype.is_unsigned_int()) {
        let d = vals
            .iter()
            .map(|&v| quote(f.ty(v).dtype.name()))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = write!(s, ", pir.dtypes = [{d}]");
    }
    s
}

impl Emitter<'_> {
    fn split_axes(&self, s: &Sharding) -> String {
        let dims = s
            .dims
            .iter()
            .map(|d| match d {
                DimSharding::Axes(a) => {
                    format!(
                        "[{}]",
                        a.iter()
                            .map(|n| self.mesh.axis(n).map_or("0".into(), |i| i.to_string()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
                _ => "[]".to_string(),
            })
            .collect::<Vec<_>>();
        // A scalar's sharding lists no dimension; MLIR wants one list.
        if dims.is_empty() {
            return "[[]]".to_string();
        }
        format!("[{}]", dims.join(", "))
    }

    /// `shard.shard` of `name` (of type `t`) to `s`; returns the annotated value.
    fn annotate(
        &mut self,
        st: &mut FnState,
        name: &str,
        t: &TensorType,
        s: &Sharding,
        extra: &[String],
    ) -> String {
        let sh = st.fresh("s");
        let _ = writeln!(
            self.out,
            "    {sh} = shard.sharding @mesh split_axes = {} : !shard.sharding",
            self.split_axes(s)
        );
        let r = st.fresh("a");
        let attrs = if extra.is_empty() {
            String::new()
        } else {
            format!(" {{{}}}", extra.join(", "))
        };
        let _ = writeln!(
            self.out,
            "    {r} = shard.shard {name} to {sh}{attrs} : {}",
            ty(t)
        );
        r
    }

    fn func(&mut self, f: &Function, sf: Option<&Function>) {
        let global = self.sharded.is_some() && f.kind == FuncKind::Global;
        let mut st = FnState {
            names: HashMap::new(),
            next: 0,
        };
        let mut params = vec![];
        for (i, &p) in f.params.iter().enumerate() {
            let v = &f.values[p];
            let mut a = vec![format!("pir.name = {}", quote(&v.name))];
            if v.ty.dtype.is_unsigned_int() {
                a.push(format!("pir.dtype = {}", quote(v.ty.dtype.name())));
            }
            if let (FuncKind::Spmd, Some(s)) = (f.kind, &v.sharding) {
                a.push(format!("pir.on = {}", quote(&s.to_string())));
            }
            params.push(format!("%arg{i}: {} {{{}}}", ty(&v.ty), a.join(", ")));
            st.names.insert(p, format!("%arg{i}"));
        }
        let mut results = vec![];
        for r in &f.results {
            let mut a = vec![];
            if let Some(n) = &r.name {
                a.push(format!("pir.name = {}", quote(n)));
            }
            if r.ty.dtype.is_unsigned_int() {
                a.push(format!("pir.dtype = {}", quote(r.ty.dtype.name())));
            }
            if let (FuncKind::Spmd, Some(s)) = (f.kind, &r.sharding) {
                a.push(format!("pir.on = {}", quote(&s.to_string())));
            }
            results.push(if a.is_empty() {
                ty(&r.ty)
            } else {
                format!("{} {{{}}}", ty(&r.ty), a.join(", "))
            });
        }
        let kind = if f.kind == FuncKind::Spmd {
            " attributes {pir.spmd}"
        } else {
            ""
        };
        let _ = writeln!(
            self.out,
            "  func.func @{}({}) -> ({}){kind} {{",
            sym(&f.name),
            params.join(", "),
            results.join(", ")
        );
        if global {
            for &p in &f.params {
                self.after_def(&mut st, f, sf, p);
            }
        }
        for &i in &f.body {
            let d = &f.insts[i];
            self.inst(&mut st, f, d);
            if global {
                for &r in &d.results {
                    self.after_def(&mut st, f, sf, r);
                }
            }
        }
        let mut rets = vec![];
        for (k, &v) in f.ret.iter().enumerate() {
            let mut name = st.get(v).to_string();
            if global {
                let r = &f.results[k];
                let s = sf
                    .and_then(|sf| sf.results[k].sharding.clone())
                    .or_else(|| r.sharding.clone());
                if let Some(s) = s {
                    let mut extra = vec![format!("pir.result = {k} : i64")];
                    extra.extend(written(r.sharding.as_ref()));
                    name = self.annotate(&mut st, &name, &r.ty, &s, &extra);
                }
            }
            rets.push(name);
        }
        let types = f
            .ret
            .iter()
            .map(|&v| ty(f.ty(v)))
            .collect::<Vec<_>>()
            .join(", ");
        if rets.is_empty() {
            let _ = writeln!(self.out, "    func.return");
        } else {
            let _ = writeln!(self.out, "    func.return {} : {types}", rets.join(", "));
        }
        let _ = writeln!(self.out, "  }}");
    }

    /// The global view's annotation of a value with its propagated sharding.
    fn after_def(&mut self, st: &mut FnState, f: &Function, sf: Option<&Function>, v: Value) {
        let data = &f.values[v];
        let Some(s) = sf
            .and_then(|sf| sf.values[v].sharding.clone())
            .or_else(|| data.sharding.clone())
        else {
            return;
        };
        let name = st.get(v).to_string();
        let extra = written(data.sharding.as_ref());
        let r = self.annotate(st, &name, &data.ty, &s, &extra);
        st.names.insert(v, r);
    }

    fn inst(&mut self, st: &mut FnState, f: &Function, d: &InstData) {
        let res: Vec<String> = d.results.iter().map(|_| st.fresh("v")).collect();
        let ops: Vec<String> = d.operands.iter().map(|&v| st.get(v).to_string()).collect();
        let rty: Vec<&TensorType> = d.results.iter().map(|&v| f.ty(v)).collect();
        let oty: Vec<&TensorType> = d.operands.iter().map(|&v| f.ty(v)).collect();
        let names = names_attr(f, &d.results);
        let lhs = res.join(", ");
        // A call of a spmd func from a func (shard_map) passes global arrays to
        // a function typed per device: no func.call types that; the encoding does.
        let spmd_callee = d.op == Opcode::Call
            && f.kind == FuncKind::Global
            && self
                .spmd_funcs
                .iter()
                .any(|n| Some(n.as_str()) == d.callee());
        let native = if spmd_callee {
            None
        } else {
            native(d, &oty, &rty, &self.mesh)
        };
        match native {
            Some(Native::Constant) => {
                let lit = d.literal.as_ref().expect("constant has a literal");
                let dt = rty[0].dtype;
                let body = if lit.shape.is_empty() {
                    number_text(&lit.elems[0], dt)
                } else {
                    nested(&lit.shape, &lit.elems, dt)
                };
                // A written list whose elements are all equal is a splat to MLIR:
                // `pir.list` says it was a list.
                let list = !lit.shape.is_empty() && lit.elems.windows(2).all(|w| w[0] == w[1]);
                let names = if list {
                    format!("{names}, pir.list")
                } else {
                    names
                };
                let _ = writeln!(
                    self.out,
                    "    {lhs} = arith.constant {{{names}}} dense<{body}> : {}",
                    ty(rty[0])
                );
            }
            Some(Native::Same(op)) => {
                let _ = writeln!(
                    self.out,
                    "    {lhs} = {op} {} {{{names}}} : {}",
                    ops.join(", "),
                    ty(rty[0])
                );
            }
            Some(Native::Cmp(op, pred)) => {
                let _ = writeln!(
                    self.out,
                    "    {lhs} = {op} {pred}, {} {{{names}}} : {}",
                    ops.join(", "),
                    ty(oty[0])
                );
            }
            Some(Native::Cast(op)) => {
                let _ = writeln!(
                    self.out,
                    "    {lhs} = {op} {} {{{names}}} : {} to {}",
                    ops[0],
                    ty(oty[0]),
                    ty(rty[0])
                );
            }
            Some(Native::Select) => {
                let c = if oty[0].is_scalar() && !rty[0].is_scalar() {
                    let c = st.fresh("c");
                    let _ = writeln!(
                        self.out,
                        "    {c} = tensor.extract {}[] : {}",
                        ops[0],
                        ty(oty[0])
                    );
                    let _ = writeln!(
                        self.out,
                        "    {lhs} = arith.select {c}, {}, {} {{{names}}} : {}",
                        ops[1],
                        ops[2],
                        ty(rty[0])
                    );
                    st.names.insert(d.results[0], res[0].clone());
                    return;
                } else {
                    ops[0].clone()
                };
                let _ = writeln!(
                    self.out,
                    "    {lhs} = arith.select {c}, {}, {} {{{names}}} : {}, {}",
                    ops[1],
                    ops[2],
                    ty(oty[0]),
                    ty(rty[0])
                );
            }
            Some(Native::Transpose(perm)) => {
                let init = self.empty(st, rty[0]);
                let _ = writeln!(self.out, "    {lhs} = linalg.transpose ins({} : {}) outs({init} : {}) permutation = {} {{{names}}}", ops[0], ty(oty[0]), ty(rty[0]), list(&perm));
            }
            Some(Native::Broadcast(added)) => {
                let init = self.empty(st, rty[0]);
                let _ = writeln!(self.out, "    {lhs} = linalg.broadcast ins({} : {}) outs({init} : {}) dimensions = {} {{{names}}}", ops[0], ty(oty[0]), ty(rty[0]), list(&added));
            }
            Some(Native::Reshape) => {
                let shape = st.fresh("c");
                let dims = rty[0]
                    .shape
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                let _ = writeln!(
                    self.out,
                    "    {shape} = arith.constant dense<[{dims}]> : tensor<{}xi64>",
                    rty[0].rank()
                );
                let _ = writeln!(self.out, "    {lhs} = tensor.reshape {}({shape}) {{{names}}} : ({}, tensor<{}xi64>) -> {}", ops[0], ty(oty[0]), rty[0].rank(), ty(rty[0]));
            }
            Some(Native::Slice(start, stride)) => {
                let sizes = rty[0].shape.iter().map(|&d| d as i64).collect::<Vec<_>>();
                // PIR's limit is any end in the last stride's step: kept when not the least one.
                let limit = d
                    .attr("limit")
                    .and_then(|a| a.as_ints())
                    .unwrap_or_default();
                let least: Vec<i64> = start
                    .iter()
                    .zip(&sizes)
                    .zip(&stride)
                    .map(|((s, n), t)| s + (n - 1) * t + 1)
                    .collect();
                let names = if limit != least {
                    format!("{names}, pir.limit = {}", list(&limit))
                } else {
                    names
                };
                let _ = writeln!(
                    self.out,
                    "    {lhs} = tensor.extract_slice {}{}{}{} {{{names}}} : {} to {}",
                    ops[0],
                    list(&start),
                    list(&sizes),
                    list(&stride),
                    ty(oty[0]),
                    ty(rty[0])
                );
            }
            Some(Native::Reduce(dims, op, id)) => {
                let init = self.filled(st, rty[0], &id);
                let e = elem(oty[0].dtype);
                let _ = writeln!(self.out, "    {lhs} = linalg.reduce ins({} : {}) outs({init} : {}) dimensions = {} {{{names}}}", ops[0], ty(oty[0]), ty(rty[0]), list(&dims));
                let _ = writeln!(self.out, "      (%in: {e}, %acc: {e}) {{\n        %r = {op} %in, %acc : {e}\n        linalg.yield %r : {e}\n      }}");
            }
            Some(Native::Dot { rank, reductions, maps }) => {
                let e = elem(rty[0].dtype);
                let zero = if rty[0].dtype.is_float() { "0.0" } else { "0" };
                let init = self.filled(st, rty[0], zero);
                let dims = (0..rank).map(|i| format!("d{i}")).collect::<Vec<_>>().join(", ");
                let amap = |m: &[usize]| format!("affine_map<({dims}) -> ({})>", m.iter().map(|i| format!("d{i}")).collect::<Vec<_>>().join(", "));
                let iters = (0..rank).map(|i| if i + reductions >= rank { "\"reduction\"" } else { "\"parallel\"" }).collect::<Vec<_>>().join(", ");
                let (mul, add) = if rty[0].dtype.is_float() { ("arith.mulf", "arith.addf") } else { ("arith.muli", "arith.addi") };
                let _ = writeln!(
                    self.out,
                    "    {lhs} = linalg.generic {{indexing_maps = [{}, {}, {}], iterator_types = [{iters}]}} ins({}, {} : {}, {}) outs({init} : {}) attrs = {{{names}}} {{\n      ^bb0(%a: {e}, %b: {e}, %acc: {e}):\n        %m = {mul} %a, %b : {e}\n        %s = {add} %acc, %m : {e}\n        linalg.yield %s : {e}\n    }} -> {}",
                    amap(&maps[0]), amap(&maps[1]), amap(&maps[2]), ops[0], ops[1], ty(oty[0]), ty(oty[1]), ty(rty[0]), ty(rty[0])
                );
            }
            Some(Native::Concat(dim)) => {
                let tys = oty.iter().map(|t| ty(t)).collect::<Vec<_>>().join(", ");
                let _ = writeln!(
                    self.out,
                    "    {lhs} = tensor.concat dim({dim}) {} {{{names}}} : ({tys}) -> {}",
                    ops.join(", "),
                    ty(rty[0])
                );
            }
            Some(Native::Call) => {
                let lhs = multi(&res, &lhs);
                let tys = oty.iter().map(|t| ty(t)).collect::<Vec<_>>().join(", ");
                let rtys = rty.iter().map(|t| ty(t)).collect::<Vec<_>>().join(", ");
                let assign = if res.is_empty() {
                    String::new()
                } else {
                    format!("{lhs} = ")
                };
                let _ = writeln!(
                    self.out,
                    "    {assign}func.call @{}({}) {{{names}}} : ({tys}) -> ({rtys})",
                    sym(d.callee().unwrap_or("")),
                    ops.join(", ")
                );
                self.rebind_multi(st, &d.results, &res, &lhs);
                return;
            }
            Some(Native::Collective(text)) => {
                let text = text.replacen("OPERAND", &ops[0], 1);
                let _ = writeln!(
                    self.out,
                    "    {lhs} = {text} {{{names}}} : {} -> {}",
                    ty(oty[0]),
                    ty(rty[0])
                );
            }
            Some(Native::Test(op)) => {
                let _ = writeln!(
                    self.out,
                    "    {lhs} = {op} {} {{{names}}} : {}",
                    ops[0],
                    ty(oty[0])
                );
            }
            Some(Native::AxisIndex(axis)) => {
                let i = st.fresh("c");
                let c = st.fresh("c");
                let _ = writeln!(
                    self.out,
                    "    {i} = shard.process_multi_index on @mesh axes = [{axis}] : index"
                );
                let _ = writeln!(self.out, "    {c} = arith.index_cast {i} : index to i32");
                let _ = writeln!(
                    self.out,
                    "    {lhs} = tensor.from_elements {c} {{{names}}} : tensor<i32>"
                );
            }
            None => {
                // The encoding: a call of a private declaration named after the op.
                self.decl_count += 1;
                let callee = format!("pir.{}.{}", d.op.name(), self.decl_count);
                let tys = oty.iter().map(|t| ty(t)).collect::<Vec<_>>().join(", ");
                let rtys = rty.iter().map(|t| ty(t)).collect::<Vec<_>>().join(", ");
                let _ = writeln!(
                    self.decls,
                    "  func.func private @{}({tys}) -> ({rtys}) attributes {{pir.op = {}}}",
                    quote(&callee),
                    quote(d.op.name())
                );
                let mut a = vec![format!("pir.op = {}", quote(d.op.name())), names.clone()];
                if !d.attrs.is_empty() {
                    let attrs = d
                        .attrs
                        .iter()
                        .map(|a| format!("{} = {}", a.name, attr_value(&a.value)))
                        .collect::<Vec<_>>()
                        .join(", ");
                    a.push(format!("pir.attrs = {{{attrs}}}"));
                }
                if !d.callees.is_empty() {
                    a.push(format!(
                        "pir.callees = [{}]",
                        d.callees
                            .iter()
                            .map(|c| format!("@{}", sym(c)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                let lhs = multi(&res, &lhs);
                let _ = writeln!(
                    self.out,
                    "    {lhs} = func.call @{}({}) {{{}}} : ({tys}) -> ({rtys})",
                    quote(&callee),
                    ops.join(", "),
                    a.join(", ")
                );
                self.rebind_multi(st, &d.results, &res, &lhs);
                return;
            }
        }
        for (k, &r) in d.results.iter().enumerate() {
            st.names.insert(r, res[k].clone());
        }
    }

    fn rebind_multi(&mut self, st: &mut FnState, results: &[Value], res: &[String], lhs: &str) {
        if results.len() == 1 {
            st.names.insert(results[0], res[0].clone());
        } else {
            for (k, &r) in results.iter().enumerate() {
                st.names
                    .insert(r, format!("{}#{k}", lhs.split(':').next().unwrap_or(lhs)));
            }
        }
    }

    /// `linalg.fill` of a fresh tensor with a scalar literal (an init).
    fn filled(&mut self, st: &mut FnState, t: &TensorType, value: &str) -> String {
        let e = self.empty(st, t);
        let c = st.fresh("c");
        let f = st.fresh("f");
        let el = elem(t.dtype);
        // A boolean literal is i1 already (`true : i1` does not parse).
        if matches!(value, "true" | "false") {
            let _ = writeln!(self.out, "    {c} = arith.constant {value}");
        } else {
            let _ = writeln!(self.out, "    {c} = arith.constant {value} : {el}");
        }
        let _ = writeln!(self.out, "    {f} = linalg.fill ins({c} : {el}) outs({e} : {}) -> {}", ty(t), ty(t));
        f
    }

    fn empty(&mut self, st: &mut FnState, t: &TensorType) -> String {
        let e = st.fresh("e");
        let _ = writeln!(self.out, "    {e} = tensor.empty() : {}", ty(t));
        e
    }
}

fn written(s: Option<&Sharding>) -> Vec<String> {
    let Some(s) = s else { return vec![] };
    let mut a = vec!["pir.written".to_string()];
    let open: Vec<i64> = s
        .dims
        .iter()
        .enumerate()
        .filter(|(_, d)| **d == DimSharding::Open)
        .map(|(i, _)| i as i64)
        .collect();
    if !open.is_empty() {
        a.push(format!("pir.open = {}", list(&open)));
    }
    a
}

/// `%r:2` for several results (uses are `%r#k`).
fn multi(res: &[String], lhs: &str) -> String {
    if res.len() > 1 {
        format!("{}:{}", res[0], res.len())
    } else {
        lhs.to_string()
    }
}

/// A function name as an MLIR symbol (quoted unless a bare identifier).
pub fn sym(name: &str) -> String {
    let bare = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_$.".contains(c));
    if bare {
        name.to_string()
    } else {
        quote(name)
    }
}

fn list(v: &[i64]) -> String {
    format!(
        "[{}]",
        v.iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

fn nested(shape: &[u64], elems: &[Number], d: DType) -> String {
    if shape.is_empty() {
        return number_text(&elems[0], d);
    }
    let inner: usize = shape[1..].iter().product::<u64>() as usize;
    let parts: Vec<String> = (0..shape[0] as usize)
        .map(|i| nested(&shape[1..], &elems[i * inner..(i + 1) * inner], d))
        .collect();
    format!("[{}]", parts.join(", "))
}

enum Native {
    Constant,
    /// An elementwise op whose operands and result share one type.
    Same(&'static str),
    Cmp(&'static str, &'static str),
    /// A test written with the operand's type (the result is its i1 shape).
    Test(&'static str),
    Cast(&'static str),
    Select,
    Transpose(Vec<i64>),
    Broadcast(Vec<i64>),
    Reshape,
    Slice(Vec<i64>, Vec<i64>),
    Concat(i64),
    /// `linalg.reduce` over these dims with this combiner and identity.
    Reduce(Vec<i64>, &'static str, String),
    /// `linalg.generic`: iteration rank, the reduction dims' count, the lhs,
    /// rhs and result maps, and the element types to multiply in.
    Dot { rank: usize, reductions: usize, maps: [Vec<usize>; 3] },
    Call,
    /// The op's text up to the types, with `OPERAND` for the operand.
    Collective(String),
    AxisIndex(usize),
}

/// The upstream op an instruction maps to exactly, if any (else the encoding).
fn native(d: &InstData, oty: &[&TensorType], rty: &[&TensorType], mesh: &Mesh) -> Option<Native> {
    use Opcode as O;
    let dt = oty.first().map(|t| t.dtype);
    let f = dt.is_some_and(|d| d.is_float());
    let int = dt.is_some_and(|d| d.is_int());
    let uns = dt.is_some_and(|d| d.is_unsigned_int());
    let pred = dt == Some(DType::Pred);
    let s = |x: &'static str| Some(Native::Same(x));
    match d.op {
        O::Constant => Some(Native::Constant),
        O::Neg if f => s("arith.negf"),
        O::Abs if f => s("math.absf"),
        O::Abs if int && !uns => s("math.absi"),
        O::Exp => s("math.exp"),
        O::Log => s("math.log"),
        O::Log1p => s("math.log1p"),
        O::Expm1 => s("math.expm1"),
        O::Sqrt => s("math.sqrt"),
        O::Rsqrt => s("math.rsqrt"),
        O::Tanh => s("math.tanh"),
        O::Erf => s("math.erf"),
        O::Sin => s("math.sin"),
        O::Cos => s("math.cos"),
        O::Floor => s("math.floor"),
        O::Ceil => s("math.ceil"),
        O::Round => s("math.round"),
        O::RoundEven => s("math.roundeven"),
        O::IsFinite => Some(Native::Test("math.isfinite")),
        O::Add if f => s("arith.addf"),
        O::Add if int => s("arith.addi"),
        O::Sub if f => s("arith.subf"),
        O::Sub if int => s("arith.subi"),
        O::Mul if f => s("arith.mulf"),
        O::Mul if int => s("arith.muli"),
        O::Div if f => s("arith.divf"),
        O::Rem if f => s("arith.remf"),
        O::Max if f => s("arith.maximumf"),
        O::Max if int && uns => s("arith.maxui"),
        O::Max if int => s("arith.maxsi"),
        O::Min if f => s("arith.minimumf"),
        O::Min if int && uns => s("arith.minui"),
        O::Min if int => s("arith.minsi"),
        O::Pow if f => s("math.powf"),
        O::Atan2 => s("math.atan2"),
        O::And => s("arith.andi"),
        O::Or => s("arith.ori"),
        O::Xor => s("arith.xori"),
        O::Compare => {
            let dir = d.attr("dir")?.as_ident()?;
            if f {
                let p = match dir {
                    "eq" => "oeq",
                    "ne" => "une",
                    "lt" => "olt",
                    "le" => "ole",
                    "gt" => "ogt",
                    _ => "oge",
                };
                Some(Native::Cmp("arith.cmpf", p))
            } else {
                let u = uns || pred;
                let p = match (dir, u) {
                    ("eq", _) => "eq",
                    ("ne", _) => "ne",
                    ("lt", true) => "ult",
                    ("le", true) => "ule",
                    ("gt", true) => "ugt",
                    ("ge", true) => "uge",
                    ("lt", false) => "slt",
                    ("le", false) => "sle",
                    ("gt", false) => "sgt",
                    _ => "sge",
                };
                Some(Native::Cmp("arith.cmpi", p))
            }
        }
        O::Select => Some(Native::Select),
        O::Convert => {
            let (a, b) = (oty[0].dtype, rty[0].dtype);
            let op = if a.is_float() && b.is_float() && a != b {
                if b.bits() > a.bits()
                    || (a == DType::F16 && b == DType::BF16)
                    || (a == DType::BF16 && b == DType::F16)
                {
                    if b.bits() == a.bits() {
                        return None;
                    }
                    "arith.extf"
                } else {
                    "arith.truncf"
                }
            } else if b.is_float() && (a.is_int() || a == DType::Pred) {
                if a.is_unsigned_int() || a == DType::Pred {
                    "arith.uitofp"
                } else {
                    "arith.sitofp"
                }
            } else if b.is_int() && (a.is_int() || a == DType::Pred) && a.bits() != b.bits() {
                if b.bits() < a.bits() {
                    "arith.trunci"
                } else if a.is_unsigned_int() || a == DType::Pred {
                    "arith.extui"
                } else {
                    "arith.extsi"
                }
            } else {
                return None;
            };
            Some(Native::Cast(op))
        }
        O::BitcastConvert if !pred && oty[0].rank() == rty[0].rank() => {
            Some(Native::Cast("arith.bitcast"))
        }
        O::Transpose => Some(Native::Transpose(d.attr("perm")?.as_ints()?)),
        O::Broadcast => {
            let dims = d.attr("dims").and_then(|a| a.as_ints()).unwrap_or_default();
            let (o, r) = (oty[0], rty[0]);
            let increasing = dims.windows(2).all(|w| w[0] < w[1]);
            let exact = dims
                .iter()
                .enumerate()
                .all(|(i, &k)| r.shape.get(k as usize) == Some(&o.shape[i]));
            if !increasing || !exact || dims.len() == r.rank() {
                return None;
            }
            Some(Native::Broadcast(
                (0..r.rank() as i64).filter(|k| !dims.contains(k)).collect(),
            ))
        }
        O::Reshape if !rty[0].is_scalar() && !oty[0].is_scalar() => Some(Native::Reshape),
        O::Slice => {
            let start = d.attr("start")?.as_ints()?;
            let stride = d
                .attr("stride")
                .and_then(|a| a.as_ints())
                .unwrap_or_else(|| vec![1; start.len()]);
            Some(Native::Slice(start, stride)).filter(|_| !oty[0].is_scalar())
        }
        O::Concat if !oty[0].is_scalar() => Some(Native::Concat(d.attr("dim")?.as_int()?)),
        O::Reduce => {
            let dims = d.attr("dims")?.as_ints()?;
            let kind = d.attr("kind")?.as_ident()?;
            let dt = oty[0].dtype;
            // bf16/f16 sums and products accumulate in f32 in PIR: not this.
            let narrow = matches!(dt, DType::F16 | DType::BF16) && matches!(kind, "sum" | "prod");
            // MLIR's dimensions are increasing; PIR's as written (an order
            // `pjc import` could not give back): those are encoded.
            if narrow || dims.is_empty() || dims.windows(2).any(|w| w[0] >= w[1]) {
                return None;
            }
            let (op, id) = match (kind, dt) {
                ("and", DType::Pred) => ("arith.andi", "true".to_string()),
                ("or", DType::Pred) => ("arith.ori", "false".to_string()),
                (_, DType::Pred) => return None,
                ("sum", d) if d.is_float() => ("arith.addf", "0.0".to_string()),
                ("prod", d) if d.is_float() => ("arith.mulf", "1.0".to_string()),
                ("max", d) if d.is_float() => ("arith.maximumf", float_text(f64::NEG_INFINITY, d)),
                ("min", d) if d.is_float() => ("arith.minimumf", float_text(f64::INFINITY, d)),
                ("sum", _) => ("arith.addi", "0".to_string()),
                ("prod", _) => ("arith.muli", "1".to_string()),
                ("max", d) if d.is_unsigned_int() => ("arith.maxui", "0".to_string()),
                ("min", d) if d.is_unsigned_int() => ("arith.minui", "-1".to_string()),
                ("max", d) => ("arith.maxsi", (-(1i128 << (d.bits() - 1))).to_string()),
                ("min", d) => ("arith.minsi", ((1i128 << (d.bits() - 1)) - 1).to_string()),
                _ => return None,
            };
            Some(Native::Reduce(dims, op, id))
        }
        O::DotGeneral => {
            let ints = |n: &str| d.attr(n).and_then(|a| a.as_ints()).unwrap_or_default();
            let (lb, rb, lc, rc) = (ints("lhs_batch"), ints("rhs_batch"), ints("lhs_contract"), ints("rhs_contract"));
            let (a, b, r) = (oty[0], oty[1], rty[0]);
            // Same element type in and out, f32/f64 or integers: the body is exact.
            if a.dtype != b.dtype || a.dtype != r.dtype || !matches!(a.dtype, DType::F32 | DType::F64 | DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U64 | DType::U32 | DType::U16 | DType::U8) {
                return None;
            }
            let lf: Vec<usize> = (0..a.rank()).filter(|i| !lb.contains(&(*i as i64)) && !lc.contains(&(*i as i64))).collect();
            let rf: Vec<usize> = (0..b.rank()).filter(|i| !rb.contains(&(*i as i64)) && !rc.contains(&(*i as i64))).collect();
            let (nb, nl, nr, nc) = (lb.len(), lf.len(), rf.len(), lc.len());
            let map = |rank: usize, batch: &[i64], contract: &[i64], free: &[usize], free_base: usize| -> Vec<usize> {
                (0..rank)
                    .map(|i| {
                        if let Some(p) = batch.iter().position(|&x| x as usize == i) {
                            p
                        } else if let Some(p) = contract.iter().position(|&x| x as usize == i) {
                            nb + nl + nr + p
                        } else {
                            free_base + free.iter().position(|&x| x == i).expect("free dim")
                        }
                    })
                    .collect()
            };
            let lm = map(a.rank(), &lb, &lc, &lf, nb);
            let rm = map(b.rank(), &rb, &rc, &rf, nb + nl);
            let om: Vec<usize> = (0..nb + nl + nr).collect();
            Some(Native::Dot { rank: nb + nl + nr + nc, reductions: nc, maps: [lm, rm, om] })
        }
        O::Call => Some(Native::Call),
        O::AllReduce | O::AllGather | O::ReduceScatter | O::AllToAll | O::CollectivePermute
            if !oty[0].is_scalar() =>
        {
            let axes = d.attr("axes")?.as_idents()?;
            let idx: Vec<i64> = axes
                .iter()
                .map(|a| mesh.axis(a).map(|i| i as i64))
                .collect::<Option<_>>()?;
            let ga = list(&idx);
            let kind = |k: &str| match k {
                "sum" => Some("sum"),
                "prod" => Some("product"),
                "max" => Some("max"),
                "min" => Some("min"),
                _ => None,
            };
            let head = |op: &str| format!("shard.{op} OPERAND on @mesh grid_axes = {ga}");
            let text = match d.op {
                O::AllReduce => format!(
                    "{} reduction = {}",
                    head("all_reduce"),
                    kind(d.attr("kind")?.as_ident()?)?
                ),
                O::AllGather => format!(
                    "{} gather_axis = {}",
                    head("all_gather"),
                    d.attr("dim")?.as_int()?
                ),
                O::ReduceScatter => format!(
                    "{} reduction = {} scatter_axis = {}",
                    head("reduce_scatter"),
                    kind(d.attr("kind")?.as_ident()?)?,
                    d.attr("dim")?.as_int()?
                ),
                O::AllToAll => format!(
                    "{} split_axis = {} concat_axis = {}",
                    head("all_to_all"),
                    d.attr("split_dim")?.as_int()?,
                    d.attr("concat_dim")?.as_int()?
                ),
                _ if idx.len() == 1 => format!(
                    "{} shift_axis = {} offset = {} rotate",
                    head("shift"),
                    idx[0],
                    d.attr("shift")?.as_int()?
                ),
                _ => return None,
            };
            Some(Native::Collective(text))
        }
        O::AxisIndex => Some(Native::AxisIndex(mesh.axis(d.attr("axis")?.as_ident()?)?)),
        _ => None,
    }
}

/// The view as an `spmd` module: the per-device program, each function in the
/// per-device view.
pub fn view_name(v: View) -> &'static str {
    match v {
        View::Global => "mlir",
        View::Spmd => "mlir-spmd",
    }
}
