//! Modules, functions, instructions and values.
//!
//! Invariants (established by the parser and checked by the verifier):
//! - every value is defined exactly once, by a parameter or an instruction, and
//!   every use comes after its definition in `Function::body` order;
//! - after verification every value's `ty` is its real type (the parser leaves a
//!   placeholder where the source omitted a result type, and the verifier's type
//!   inference fills it in).

use crate::entity::{FuncId, Inst, PrimaryMap, Value};
use crate::types::{Mesh, Sharding, Span, TensorType};
use pjc_dialects::Opcode;

/// Source comments attached to an entity, kept so `pjc fmt` can print them back.
#[derive(Clone, PartialEq, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Comments {
    /// Full-line comments above the entity (text after `//`, untrimmed).
    pub before: Vec<String>,
    /// A comment at the end of the entity's (last) line.
    pub eol: Option<String>,
}

/// A number in a literal, already checked against and rounded to its dtype.
#[derive(Copy, Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum Number {
    Int(i128),
    Float(f64),
    Bool(bool),
}

/// Structural equality: floats compare by bit pattern, so a `nan` literal equals
/// itself (IR equality must be reflexive) and `-0.0` differs from `0.0`.
impl PartialEq for Number {
    fn eq(&self, other: &Number) -> bool {
        match (self, other) {
            (Number::Int(a), Number::Int(b)) => a == b,
            (Number::Float(a), Number::Float(b)) => a.to_bits() == b.to_bits(),
            (Number::Bool(a), Number::Bool(b)) => a == b,
            _ => false,
        }
    }
}

/// The literal of a `constant`: a scalar (fills the type) or a nested list.
#[derive(Clone, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub struct Literal {
    /// Shape of the nesting (`[]` for a bare scalar).
    pub shape: Vec<u64>,
    /// Elements in row-major order.
    pub elems: Vec<Number>,
}

/// An attribute value as written.
#[derive(Clone, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub enum AttrValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Ident(String),
    Str(String),
    List(Vec<AttrValue>),
}

impl AttrValue {
    pub fn as_int(&self) -> Option<i64> {
        match self {
            AttrValue::Int(i) => Some(*i),
            _ => None,
        }
    }
    pub fn as_ident(&self) -> Option<&str> {
        match self {
            AttrValue::Ident(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            AttrValue::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_list(&self) -> Option<&[AttrValue]> {
        match self {
            AttrValue::List(l) => Some(l),
            _ => None,
        }
    }
    /// A list of integers.
    pub fn as_ints(&self) -> Option<Vec<i64>> {
        self.as_list()?.iter().map(|v| v.as_int()).collect()
    }
    /// A list of `[lo, hi]` pairs.
    pub fn as_pairs(&self) -> Option<Vec<(i64, i64)>> {
        self.as_list()?
            .iter()
            .map(|p| match p.as_ints()?.as_slice() {
                [lo, hi] => Some((*lo, *hi)),
                _ => None,
            })
            .collect()
    }
    /// A list of identifiers.
    pub fn as_idents(&self) -> Option<Vec<String>> {
        self.as_list()?.iter().map(|v| v.as_ident().map(str::to_string)).collect()
    }
    pub fn int_list(v: &[i64]) -> AttrValue {
        AttrValue::List(v.iter().map(|&i| AttrValue::Int(i)).collect())
    }
}

/// One `name=value` attribute of an instruction.
#[derive(Clone, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub struct Attr {
    pub name: String,
    pub value: AttrValue,
    pub span: Span,
}

/// One instruction: `%r = op %a, %b {attrs} : type`.
#[derive(Clone, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub struct InstData {
    pub op: Opcode,
    pub operands: Vec<Value>,
    pub operand_spans: Vec<Span>,
    pub results: Vec<Value>,
    pub attrs: Vec<Attr>,
    /// The functions it names: `@f` for `call`, `grad`, `vmap` and `scan`;
    /// `@cond, @body` for `while`; the branches of `switch`, in order.
    pub callees: Vec<String>,
    /// Where each callee is written.
    pub callee_spans: Vec<Span>,
    /// The literal of a `constant`.
    pub literal: Option<Literal>,
    /// Whether the source wrote the result type(s).
    pub types_written: bool,
    /// The written result type(s), for diagnostics.
    pub types_span: Span,
    /// The whole statement.
    pub span: Span,
    /// The op name.
    pub op_span: Span,
    pub comments: Comments,
}

impl InstData {
    pub fn new(op: Opcode) -> InstData {
        InstData {
            op,
            operands: vec![],
            operand_spans: vec![],
            results: vec![],
            attrs: vec![],
            callees: vec![],
            callee_spans: vec![],
            literal: None,
            types_written: true,
            types_span: Span::NONE,
            span: Span::NONE,
            op_span: Span::NONE,
            comments: Comments::default(),
        }
    }
    /// The instruction without its place in a function: op, attributes,
    /// callee and literal only (no operand or result handles, spans or
    /// comments). What a kernel plan keeps of a library call or collective.
    pub fn detached(&self) -> InstData {
        InstData {
            attrs: self.attrs.iter().map(|a| Attr { span: Span::NONE, ..a.clone() }).collect(),
            callees: self.callees.clone(),
            literal: self.literal.clone(),
            ..InstData::new(self.op)
        }
    }
    /// The one function `call`, `grad`, `vmap` and `scan` name (the first callee).
    pub fn callee(&self) -> Option<&str> {
        self.callees.first().map(String::as_str)
    }
    /// Where the first callee is written.
    pub fn callee_span(&self) -> Span {
        self.callee_spans.first().copied().unwrap_or(self.span)
    }
    /// Names the single callee (call-like ops built by passes).
    pub fn set_callee(&mut self, name: impl Into<String>) {
        self.callees = vec![name.into()];
        self.callee_spans = vec![Span::NONE];
    }
    /// The operands the bodies receive: all of them except `switch`'s index.
    pub fn operands_of_bodies(&self) -> &[Value] {
        if self.op == Opcode::Switch {
            &self.operands[1..]
        } else {
            &self.operands
        }
    }
    pub fn attr(&self, name: &str) -> Option<&AttrValue> {
        self.attrs.iter().find(|a| a.name == name).map(|a| &a.value)
    }
    pub fn attr_span(&self, name: &str) -> Span {
        self.attrs.iter().find(|a| a.name == name).map_or(self.span, |a| a.span)
    }
    pub fn set_attr(&mut self, name: &str, value: AttrValue) {
        match self.attrs.iter_mut().find(|a| a.name == name) {
            Some(a) => a.value = value,
            None => self.attrs.push(Attr { name: name.to_string(), value, span: Span::NONE }),
        }
    }
}

/// Where a value comes from.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum ValueDef {
    /// The function's parameter at this position.
    Param(usize),
    /// Result `n` of an instruction.
    Result(Inst, usize),
}

/// An SSA value.
#[derive(Clone, PartialEq, Debug)]
pub struct ValueData {
    /// Name as written, without `%`.
    pub name: String,
    pub ty: TensorType,
    /// `on [...]` where written (a constraint in bodies, the split on signatures).
    pub sharding: Option<Sharding>,
    pub def: ValueDef,
    pub span: Span,
}

/// A function result in the signature.
#[derive(Clone, PartialEq, Debug)]
pub struct ResultDecl {
    /// The written name; `None` means the default `outK`.
    pub name: Option<String>,
    pub ty: TensorType,
    pub sharding: Option<Sharding>,
    pub span: Span,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum FuncKind {
    /// `func`: global view; the compiler inserts communication.
    Global,
    /// `spmd func`: per-device view with explicit collectives.
    Spmd,
}

/// A function: signature, value and instruction arenas, and the body order.
#[derive(Clone, PartialEq, Debug)]
pub struct Function {
    pub name: String,
    pub kind: FuncKind,
    /// Parameter values in order (their `ValueData` holds name, type, sharding).
    pub params: Vec<Value>,
    pub results: Vec<ResultDecl>,
    pub values: PrimaryMap<Value, ValueData>,
    pub insts: PrimaryMap<Inst, InstData>,
    /// Program order of the instructions.
    pub body: Vec<Inst>,
    /// The operands of `return`.
    pub ret: Vec<Value>,
    pub ret_spans: Vec<Span>,
    pub ret_span: Span,
    pub ret_comments: Comments,
    /// Full-line comments between `return` and `}`.
    pub end_comments: Vec<String>,
    pub comments: Comments,
    pub span: Span,
    pub name_span: Span,
}

impl Function {
    pub fn new(name: &str, kind: FuncKind) -> Function {
        Function {
            name: name.to_string(),
            kind,
            params: vec![],
            results: vec![],
            values: PrimaryMap::new(),
            insts: PrimaryMap::new(),
            body: vec![],
            ret: vec![],
            ret_spans: vec![],
            ret_span: Span::NONE,
            ret_comments: Comments::default(),
            end_comments: vec![],
            comments: Comments::default(),
            span: Span::NONE,
            name_span: Span::NONE,
        }
    }

    /// The external name of result `i` (`outK` when unnamed).
    pub fn result_name(&self, i: usize) -> String {
        self.results[i].name.clone().unwrap_or_else(|| format!("out{i}"))
    }

    /// The external name of parameter `i`.
    pub fn param_name(&self, i: usize) -> &str {
        &self.values[self.params[i]].name
    }

    pub fn ty(&self, v: Value) -> &TensorType {
        &self.values[v].ty
    }

    /// Add a value to the arena (the caller wires its definition).
    pub fn add_value(&mut self, name: &str, ty: TensorType, def: ValueDef, span: Span) -> Value {
        self.values.push(ValueData { name: name.to_string(), ty, sharding: None, def, span })
    }

    /// Appends a parameter `name` of type `ty` (no sharding, no span): what
    /// transforms building a function call for each of its inputs.
    pub fn add_param(&mut self, name: &str, ty: TensorType) -> Value {
        let v = self.add_value(name, ty, ValueDef::Param(self.params.len()), Span::NONE);
        self.params.push(v);
        v
    }
}

/// A module: an optional mesh and its functions.
#[derive(Clone, PartialEq, Debug, Default)]
pub struct Module {
    pub mesh: Option<Mesh>,
    pub mesh_span: Span,
    pub mesh_comments: Comments,
    pub funcs: PrimaryMap<FuncId, Function>,
    /// Full-line comments after the last function.
    pub end_comments: Vec<String>,
}

impl Module {
    pub fn func_by_name(&self, name: &str) -> Option<FuncId> {
        self.funcs.iter().find(|(_, f)| f.name == name).map(|(id, _)| id)
    }

    /// The mesh, or the one-device mesh when none is declared.
    pub fn mesh_or_single(&self) -> Mesh {
        self.mesh.clone().unwrap_or_default()
    }
}

impl Module {
    /// A copy with every span cleared and every result type marked as written:
    /// what stays equal when a module is printed and parsed back
    /// (`parse(print(m)).without_spans() == m.without_spans()`).
    pub fn without_spans(&self) -> Module {
        let mut m = self.clone();
        m.mesh_span = Span::NONE;
        if let Some(mesh) = &mut m.mesh {
            for a in &mut mesh.axes {
                a.span = Span::NONE;
            }
        }
        let ids: Vec<FuncId> = m.funcs.keys().collect();
        for id in ids {
            let f = &mut m.funcs[id];
            f.span = Span::NONE;
            f.name_span = Span::NONE;
            f.ret_span = Span::NONE;
            f.ret_spans.iter_mut().for_each(|s| *s = Span::NONE);
            f.results.iter_mut().for_each(|r| r.span = Span::NONE);
            let vals: Vec<Value> = f.values.keys().collect();
            for v in vals {
                f.values[v].span = Span::NONE;
            }
            let insts: Vec<Inst> = f.insts.keys().collect();
            for i in insts {
                let d = &mut f.insts[i];
                d.span = Span::NONE;
                d.op_span = Span::NONE;
                d.types_span = Span::NONE;
                d.callee_spans.iter_mut().for_each(|s| *s = Span::NONE);
                d.types_written = true;
                d.operand_spans.iter_mut().for_each(|s| *s = Span::NONE);
                d.attrs.iter_mut().for_each(|a| a.span = Span::NONE);
            }
        }
        m
    }
}
