//! Building instructions from passes: operands in, result values out, with
//! result types from [`crate::infer`] so that no pass guesses a type, and fresh
//! readable names derived from the value's origin.

use crate::infer::{infer, CalleeSig, InferCtx, InferError};
use crate::module::{Attr, AttrValue, Comments, Function, InstData, Literal, Module, Number, ValueDef};
use crate::types::{Mesh, Span, TensorType};
use crate::{Opcode, Value};
use std::collections::{HashMap, HashSet};

/// Signatures of every function of a module, by name (what `call`, `grad` and
/// `vmap` need for inference).
pub fn signatures(m: &Module) -> HashMap<String, CalleeSig> {
    m.funcs
        .values()
        .map(|f| {
            let sig = CalleeSig {
                name: f.name.clone(),
                kind: f.kind,
                params: f.params.iter().map(|&p| (f.values[p].ty.clone(), f.values[p].sharding.clone())).collect(),
                results: f.results.iter().map(|r| (r.ty.clone(), r.sharding.clone())).collect(),
            };
            (f.name.clone(), sig)
        })
        .collect()
}

/// The value names of one function, for making fresh ones. Kept up to date
/// incrementally (the value arena only grows), so a pass that builds many
/// instructions keeps one `Names` for the whole function
/// ([`Builder::with_names`]) instead of collecting every name per builder:
/// building is then linear in the program's size.
#[derive(Default, Debug)]
pub struct Names {
    used: HashSet<String>,
    /// For each base, the suffix to try next: every smaller one is taken.
    next: HashMap<String, usize>,
    /// Values of the function already in `used`.
    indexed: usize,
}

impl Names {
    fn sync(&mut self, func: &Function) {
        for v in func.values.values().skip(self.indexed) {
            self.used.insert(v.name.clone());
        }
        self.indexed = func.values.len();
    }

    /// A name not yet used in `func`: `base`, else `base.1`, `base.2`, ...
    /// (the first free one; names are never freed, so resuming the search
    /// where it last stopped finds the same one).
    pub fn fresh(&mut self, func: &Function, base: &str) -> String {
        self.sync(func);
        let base = if base.is_empty() { "v" } else { base };
        let mut name = base.to_string();
        let mut k = self.next.get(base).copied().unwrap_or(0);
        if k > 0 {
            name = format!("{base}.{k}");
        }
        while self.used.contains(&name) {
            k += 1;
            name = format!("{base}.{k}");
        }
        self.next.insert(base.to_string(), k + 1);
        self.used.insert(name.clone());
        name
    }
}

enum NamesRef<'a> {
    Own(Names),
    Borrowed(&'a mut Names),
}

/// Appends instructions to the end of a function's body.
pub struct Builder<'a> {
    pub func: &'a mut Function,
    pub mesh: &'a Mesh,
    pub sigs: &'a HashMap<String, CalleeSig>,
    names: NamesRef<'a>,
}

impl<'a> Builder<'a> {
    /// A builder for a few instructions (it indexes the function's names once).
    pub fn new(func: &'a mut Function, mesh: &'a Mesh, sigs: &'a HashMap<String, CalleeSig>) -> Builder<'a> {
        Builder { func, mesh, sigs, names: NamesRef::Own(Names::default()) }
    }

    /// A builder that shares `names`, which the caller keeps for `func` across
    /// many builders.
    pub fn with_names(
        func: &'a mut Function,
        mesh: &'a Mesh,
        sigs: &'a HashMap<String, CalleeSig>,
        names: &'a mut Names,
    ) -> Builder<'a> {
        Builder { func, mesh, sigs, names: NamesRef::Borrowed(names) }
    }

    /// A name not yet used in the function: `base`, else `base.1`, `base.2`, ...
    pub fn fresh(&mut self, base: &str) -> String {
        let names = match &mut self.names {
            NamesRef::Own(n) => n,
            NamesRef::Borrowed(n) => &mut **n,
        };
        names.fresh(self.func, base)
    }

    /// Adds `op` with the given operands and attributes (those equal to their
    /// default are dropped). `written` gives the
    /// result types for ops whose type must be written (constant, iota,
    /// broadcast, reshape, convert, bitcast_convert, axis_index) or that pick
    /// their result dtype from it (dot_general, convolution, argmax/argmin).
    /// Results are named `name`, `name.1`, ... (made unique).
    pub fn try_build(
        &mut self,
        op: Opcode,
        operands: &[Value],
        attrs: Vec<(&str, AttrValue)>,
        callees: &[String],
        written: Option<Vec<TensorType>>,
        name: &str,
    ) -> Result<Vec<Value>, InferError> {
        let mut inst = InstData::new(op);
        inst.operands = operands.to_vec();
        inst.operand_spans = vec![Span::NONE; operands.len()];
        // One IR form per program (as the verifier keeps it): attributes equal
        // to their default are absent.
        let wr = {
            let operand_types: Vec<&TensorType> = operands.iter().map(|&v| &self.func.values[v].ty).collect();
            crate::attrs::window_rank(op, &operand_types)
        };
        inst.attrs = attrs
            .into_iter()
            .filter(|(n, v)| {
                let def = op.def().attrs.iter().find(|d| d.name == *n);
                def.and_then(|d| crate::attrs::default_value(d, wr)).as_ref() != Some(v)
            })
            .map(|(n, v)| Attr { name: n.to_string(), value: v, span: Span::NONE })
            .collect();
        inst.callees = callees.to_vec();
        inst.callee_spans = vec![Span::NONE; callees.len()];
        inst.comments = Comments::default();
        let types = {
            let operand_types: Vec<&TensorType> = operands.iter().map(|&v| &self.func.values[v].ty).collect();
            let ctx = InferCtx { mesh: self.mesh, caller: self.func.kind, callees: callees.iter().filter_map(|c| self.sigs.get(c)).collect() };
            infer(&inst, &operand_types, written.as_deref(), &ctx)?
        };
        let id = self.func.insts.push(inst);
        let mut results = vec![];
        for (k, t) in types.into_iter().enumerate() {
            let n = self.fresh(name);
            let v = self.func.add_value(&n, t, ValueDef::Result(id, k), Span::NONE);
            results.push(v);
        }
        self.func.insts[id].results = results.clone();
        self.func.body.push(id);
        Ok(results)
    }

    /// Like [`Builder::try_build`] for a single-result op whose operands the pass
    /// knows to be valid; an inference failure is a bug in the pass.
    pub fn build(&mut self, op: Opcode, operands: &[Value], attrs: Vec<(&str, AttrValue)>, name: &str) -> Value {
        match self.try_build(op, operands, attrs, &[], None, name) {
            Ok(v) => v[0],
            Err(e) => panic!("pass built an invalid '{op}': {}", e.msg),
        }
    }

    /// A single-result op whose result type must be written.
    pub fn build_typed(
        &mut self,
        op: Opcode,
        operands: &[Value],
        attrs: Vec<(&str, AttrValue)>,
        ty: TensorType,
        name: &str,
    ) -> Value {
        match self.try_build(op, operands, attrs, &[], Some(vec![ty]), name) {
            Ok(v) => v[0],
            Err(e) => panic!("pass built an invalid '{op}': {}", e.msg),
        }
    }

    /// `constant` filling `ty` with one number.
    pub fn splat(&mut self, n: Number, ty: TensorType, name: &str) -> Value {
        let lit = Literal { shape: vec![], elems: vec![n] };
        let v = self.build_typed(Opcode::Constant, &[], vec![], ty, name);
        let ValueDef::Result(id, _) = self.func.values[v].def else { unreachable!() };
        self.func.insts[id].literal = Some(lit);
        v
    }
}
