//! Recursive-descent parser from PIR text to `pjc_ir::Module`.
//!
//! Names are resolved while parsing (SSA: a use must follow its definition), so
//! "defined once, before use" is enforced here; everything else is the
//! verifier's. After an error the parser skips to the next statement and keeps
//! going, so one run reports many errors. Result types the source omitted are
//! left as placeholders for the verifier's inference (`InstData::types_written`).

use crate::diag::Diag;
use crate::lexer::{lex, Comment, Tok, Token};
use pjc_ir::{
    Attr, AttrValue, Comments, DType, DimSharding, FuncKind, Function, InstData, Literal, Mesh, MeshAxis, Module,
    Number, Opcode, ResultDecl, Sharding, Span, TensorType, Value, ValueDef,
};
use std::collections::{HashMap, HashSet};
use pjc_dialects::Callees;

/// Parses a module. On failure returns every error found.
pub fn parse(src: &str) -> Result<Module, Vec<Diag>> {
    let (toks, comments, diags) = lex(src);
    // The parser's diagnostics follow the lexer's (so it knows about them).
    let mut p = Parser { toks, pos: 0, comments, cpos: 0, diags, broken: HashSet::new() };
    let m = p.module();
    let diags = p.diags;
    if diags.is_empty() {
        Ok(m)
    } else {
        Err(diags)
    }
}

/// Raised to abandon the current statement; the diagnostic is already recorded.
struct Bail;
type P<T> = Result<T, Bail>;

/// A literal before its dtype is known.
enum RawLit {
    Num(Tok, Span),
    Bool(bool, Span),
    List(Vec<RawLit>, Span),
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    comments: Vec<Comment>,
    cpos: usize,
    diags: Vec<Diag>,
    /// Names of the current function whose defining statement had a syntax error:
    /// their uses are not reported again.
    broken: HashSet<String>,
}

const PLACEHOLDER: DType = DType::Pred;

/// How deeply literal and attribute lists may nest. The parser recurses on
/// nesting, so without a bound a line of `[[[[...` overflows the stack.
const MAX_NESTING: usize = 256;

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }
    fn peek_at(&self, k: usize) -> &Tok {
        &self.toks[(self.pos + k).min(self.toks.len() - 1)].tok
    }
    fn span(&self) -> Span {
        self.toks[self.pos].span
    }
    fn prev_span(&self) -> Span {
        self.toks[self.pos.saturating_sub(1)].span
    }
    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }
    fn is(&self, t: &Tok) -> bool {
        self.peek() == t
    }
    fn is_ident(&self, s: &str) -> bool {
        matches!(self.peek(), Tok::Ident(i) if i == s)
    }
    fn eat(&mut self, t: &Tok) -> bool {
        if self.is(t) {
            self.bump();
            true
        } else {
            false
        }
    }
    fn error<T>(&mut self, span: Span, msg: impl Into<String>) -> P<T> {
        self.diags.push(Diag::new(span, msg));
        Err(Bail)
    }
    /// "expected X, found Y". When Y starts a new line with what begins the next
    /// statement or function (or closes the body), X is missing at the end of the
    /// previous line, so the error points just after the previous token; otherwise
    /// at Y. A token the lexer rejected was already reported.
    fn expected<T>(&mut self, what: &str) -> P<T> {
        let cur = &self.toks[self.pos];
        let next_construct = cur.line_start
            && match &cur.tok {
                Tok::Eof | Tok::RBrace | Tok::Value(_) => true,
                Tok::Ident(s) => matches!(s.as_str(), "return" | "func" | "spmd" | "mesh"),
                _ => false,
            };
        let span = match self.pos.checked_sub(1).map(|i| &self.toks[i]) {
            Some(prev) if prev.line < cur.line && next_construct => Span { start: prev.span.end, end: prev.span.end },
            _ => cur.span,
        };
        self.expected_at(span, what)
    }
    /// "expected X, found Y" pointing at Y (where Y itself is out of place).
    fn expected_here<T>(&mut self, what: &str) -> P<T> {
        self.expected_at(self.span(), what)
    }
    fn expected_at<T>(&mut self, span: Span, what: &str) -> P<T> {
        if self.is(&Tok::Error) {
            return Err(Bail);
        }
        let got = self.peek().describe();
        // `(%a, %b,)`, `sort %a, {dim=0}`, `switch %i, @b0, (%x)`: the list was
        // over at the comma.
        let after_comma = self.pos > 0 && self.toks[self.pos - 1].tok == Tok::Comma;
        let closing = matches!(self.peek(), Tok::RParen | Tok::RBrace | Tok::RBracket | Tok::LParen | Tok::LBrace);
        let hint = if after_comma && closing { " (a list has no trailing ',')" } else { "" };
        self.error(span, format!("expected {what}, found {got}{hint}"))
    }
    fn expect(&mut self, t: &Tok, what: &str) -> P<Span> {
        if self.is(t) {
            Ok(self.bump().span)
        } else {
            self.expected(what)
        }
    }
    fn ident(&mut self, what: &str) -> P<(String, Span)> {
        match self.peek().clone() {
            Tok::Ident(s) => {
                let sp = self.bump().span;
                Ok((s, sp))
            }
            _ => self.expected(what),
        }
    }

    /// A use of `%name` that is not in scope: reported as used before its
    /// definition when the function defines it further down, and not reported at
    /// all when its definition had an error of its own.
    fn undefined<T>(&mut self, name: &str, sp: Span) -> P<T> {
        if self.broken.contains(name) {
            return Err(Bail);
        }
        // Looking ahead for a later definition costs a scan of the rest of the
        // function; only do it for the first few errors so that inputs full of
        // undefined uses stay linear.
        let scan_limit = if self.diags.len() < 20 { self.toks.len() } else { self.pos };
        let later = self.toks[self.pos..scan_limit]
            .iter()
            .zip(self.toks[self.pos..scan_limit].iter().skip(1))
            .take_while(|(t, _)| !(t.line_start && matches!(&t.tok, Tok::Ident(s) if s == "func" || s == "spmd")))
            .find(|(t, next)| t.tok == Tok::Value(name.to_string()) && (t.line_start || next.tok == Tok::Eq))
            .map(|(t, _)| t.line + 1);
        match later {
            Some(line) => self.error(sp, format!("use of '%{name}' before its definition (on line {line})")),
            None => self.error(sp, format!("use of undefined value '%{name}'")),
        }
    }

    // ---- comments -------------------------------------------------------------

    /// Every comment before `offset` not yet attached, as full-line comments.
    fn take_comments_before(&mut self, offset: u32) -> Vec<String> {
        let mut out = vec![];
        while self.cpos < self.comments.len() && self.comments[self.cpos].span.start < offset {
            out.push(self.comments[self.cpos].text.clone());
            self.cpos += 1;
        }
        out
    }
    /// An end-of-line comment on the line of the previous token.
    fn take_eol(&mut self) -> Option<String> {
        let line = self.toks[self.pos.saturating_sub(1)].line;
        let c = self.comments.get(self.cpos)?;
        if !c.full_line && c.line == line {
            self.cpos += 1;
            return Some(c.text.clone());
        }
        None
    }

    // ---- recovery -------------------------------------------------------------

    /// Skip to the start of the next statement in a body (`%x ... =`, `return`, `}`).
    fn skip_statement(&mut self, from: usize) {
        if self.pos == from {
            self.bump();
        }
        loop {
            let t = &self.toks[self.pos];
            if t.tok == Tok::Eof || (t.line_start && matches!(t.tok, Tok::Value(_) | Tok::RBrace))
                || (t.line_start && matches!(&t.tok, Tok::Ident(s) if s == "return" || s == "func" || s == "spmd"))
            {
                return;
            }
            self.bump();
        }
    }

    /// Skip to the next function (staying put when already at its start: a failed
    /// function has always consumed at least its `func`).
    fn skip_function(&mut self) {
        let t = &self.toks[self.pos];
        if !(t.line_start && matches!(&t.tok, Tok::Ident(s) if s == "func" || s == "spmd")) {
            self.bump();
        }
        loop {
            let t = &self.toks[self.pos];
            if t.tok == Tok::Eof || (t.line_start && matches!(&t.tok, Tok::Ident(s) if s == "func" || s == "spmd")) {
                return;
            }
            self.bump();
        }
    }

    // ---- module ---------------------------------------------------------------

    fn module(&mut self) -> Module {
        let mut m = Module::default();
        if self.is_ident("mesh") {
            let before = self.take_comments_before(self.span().start);
            let start = self.span();
            match self.mesh() {
                Ok(mesh) => {
                    m.mesh = Some(mesh);
                    m.mesh_span = start.to(self.prev_span());
                    m.mesh_comments = Comments { before, eol: self.take_eol() };
                }
                Err(Bail) => self.skip_function(),
            }
        }
        while !self.is(&Tok::Eof) {
            if self.is_ident("mesh") {
                let sp = self.span();
                self.diags.push(Diag::new(sp, "the mesh must be declared once, before any function"));
                self.skip_function();
                continue;
            }
            if !self.is_ident("func") && !self.is_ident("spmd") {
                let _ = self.expected_here::<()>("'func' or 'spmd func'");
                self.skip_function();
                continue;
            }
            match self.function(&m) {
                Ok(f) => {
                    m.funcs.push(f);
                }
                Err(Bail) => self.skip_function(),
            }
        }
        m.end_comments = self.take_comments_before(u32::MAX);
        if m.funcs.is_empty() && self.diags.is_empty() {
            self.diags.push(Diag::new(self.span(), "a module needs at least one function"));
        }
        m
    }

    fn mesh(&mut self) -> P<Mesh> {
        self.bump();
        self.expect(&Tok::LBracket, "'[' after 'mesh'")?;
        let mut mesh = Mesh::default();
        // Kept alongside, so that a mesh of many axes parses in linear time.
        let mut seen = std::collections::HashSet::new();
        let mut devices = 1u64;
        loop {
            let (name, span) = self.ident("a mesh axis name")?;
            self.expect(&Tok::Eq, "'=' after the axis name")?;
            let size = self.positive_int("the axis size")?;
            if !seen.insert(name.clone()) {
                return self.error(span, format!("mesh axis '{name}' is declared twice"));
            }
            let Some(d) = devices.checked_mul(size) else {
                return self.error(span, format!("the mesh has too many devices: the product of the axis sizes must be at most {}", u64::MAX));
            };
            devices = d;
            mesh.axes.push(MeshAxis { name, size, span });
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(&Tok::RBracket, "',' or ']' in the mesh")?;
        Ok(mesh)
    }

    fn positive_int(&mut self, what: &str) -> P<u64> {
        match self.peek().clone() {
            Tok::Int(s) => {
                let sp = self.bump().span;
                match s.parse::<u64>() {
                    Ok(v) if v > 0 => Ok(v),
                    _ => self.error(sp, format!("{what} must be a positive integer, got {s}")),
                }
            }
            _ => self.expected(&format!("{what} (a positive integer)")),
        }
    }

    // ---- types and shardings --------------------------------------------------

    fn ty(&mut self) -> P<TensorType> {
        let (name, sp) = self.ident("a type like f32[4,4]")?;
        let Some(dtype) = DType::from_name(&name) else {
            return self.error(sp, format!("unknown dtype '{name}' (expected one of f64 f32 f16 bf16 i64 i32 i16 i8 u64 u32 u16 u8 pred)"));
        };
        self.expect(&Tok::LBracket, &format!("'[' and the shape after the dtype (a scalar is {name}[])"))?;
        let mut shape = vec![];
        if !self.eat(&Tok::RBracket) {
            loop {
                shape.push(self.positive_int("a dimension")?);
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
            self.expect(&Tok::RBracket, "',' or ']' in the shape")?;
        }
        Ok(TensorType::new(dtype, shape))
    }

    /// `on [...]` if present.
    fn opt_sharding(&mut self) -> P<Option<(Sharding, Span)>> {
        if !self.is_ident("on") {
            return Ok(None);
        }
        let start = self.bump().span;
        self.expect(&Tok::LBracket, "'[' after 'on'")?;
        let mut dims = vec![];
        if !self.eat(&Tok::RBracket) {
            loop {
                let d = match self.peek().clone() {
                    Tok::Question => {
                        self.bump();
                        DimSharding::Open
                    }
                    Tok::Ident(s) if s == "_" => {
                        self.bump();
                        DimSharding::Replicated
                    }
                    Tok::Ident(s) => {
                        self.bump();
                        DimSharding::Axes(vec![s])
                    }
                    Tok::LParen => {
                        self.bump();
                        let mut axes = vec![];
                        loop {
                            axes.push(self.ident("a mesh axis name")?.0);
                            if !self.eat(&Tok::Comma) {
                                break;
                            }
                        }
                        self.expect(&Tok::RParen, "',' or ')' in the axis group")?;
                        DimSharding::Axes(axes)
                    }
                    _ => return self.expected("a sharding entry ('_', '?', an axis or '(a, b)')"),
                };
                dims.push(d);
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
            self.expect(&Tok::RBracket, "',' or ']' in the sharding")?;
        }
        Ok(Some((Sharding { dims }, start.to(self.prev_span()))))
    }

    // ---- functions ------------------------------------------------------------

    fn function(&mut self, _m: &Module) -> P<Function> {
        let before = self.take_comments_before(self.span().start);
        let start = self.span();
        let kind = if self.is_ident("spmd") {
            self.bump();
            if !self.is_ident("func") {
                return self.expected("'func' after 'spmd'");
            }
            FuncKind::Spmd
        } else {
            FuncKind::Global
        };
        self.bump(); // func
        let (name, name_span) = match self.peek().clone() {
            Tok::Func(n) => (n, self.bump().span),
            _ => return self.expected("a function name like @main"),
        };
        let mut f = Function::new(&name, kind);
        f.name_span = name_span;
        f.span = start;
        let mut scope: HashMap<String, Value> = HashMap::new();
        self.broken.clear();
        self.expect(&Tok::LParen, "'(' after the function name")?;
        if !self.eat(&Tok::RParen) {
            loop {
                let (pname, psp) = match self.peek().clone() {
                    Tok::Value(n) => (n, self.bump().span),
                    _ => return self.expected("a parameter like %x: f32[4]"),
                };
                self.expect(&Tok::Colon, "':' after the parameter name")?;
                let ty = self.ty()?;
                let sh = self.opt_sharding()?;
                let idx = f.params.len();
                if scope.contains_key(&pname) {
                    return self.error(psp, format!("parameter '%{pname}' is defined twice"));
                }
                let v = f.add_value(&pname, ty, ValueDef::Param(idx), psp.to(self.prev_span()));
                f.values[v].sharding = sh.map(|s| s.0);
                scope.insert(pname, v);
                f.params.push(v);
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
            self.expect(&Tok::RParen, "',' or ')' after the parameters")?;
        }
        self.expect(&Tok::Arrow, "'->' and the result list")?;
        self.expect(&Tok::LParen, "'(' to start the result list")?;
        if !self.eat(&Tok::RParen) {
            loop {
                let rstart = self.span();
                let mut rname = None;
                if matches!(self.peek(), Tok::Ident(_)) && self.peek_at(1) == &Tok::Colon {
                    rname = Some(self.bump());
                    self.bump();
                }
                let ty = self.ty()?;
                let sh = self.opt_sharding()?;
                let name = rname.map(|t| match t.tok {
                    Tok::Ident(s) => s,
                    _ => unreachable!(),
                });
                f.results.push(ResultDecl { name, ty, sharding: sh.map(|s| s.0), span: rstart.to(self.prev_span()) });
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
            self.expect(&Tok::RParen, "',' or ')' after the results")?;
        }
        let brace = self.span();
        self.expect(&Tok::LBrace, "'{' to start the body")?;
        let mut before = before;
        before.extend(self.take_comments_before(brace.start));
        f.comments = Comments { before, eol: self.take_eol() };
        // Body.
        loop {
            if self.is_ident("return") {
                let before = self.take_comments_before(self.span().start);
                let rs = self.bump().span;
                let mut ok = true;
                if !self.is(&Tok::RBrace) {
                    loop {
                        match self.peek().clone() {
                            Tok::Value(n) => {
                                let sp = self.bump().span;
                                match scope.get(&n) {
                                    Some(&v) => {
                                        f.ret.push(v);
                                        f.ret_spans.push(sp);
                                    }
                                    None => {
                                        let _ = self.undefined::<()>(&n, sp);
                                        ok = false;
                                    }
                                }
                            }
                            _ => {
                                let _ = self.expected::<()>("a value to return");
                                ok = false;
                                break;
                            }
                        }
                        if !self.eat(&Tok::Comma) {
                            break;
                        }
                    }
                }
                f.ret_span = rs.to(self.prev_span());
                f.ret_comments = Comments { before, eol: self.take_eol() };
                if !ok {
                    self.skip_function();
                    return Err(Bail);
                }
                f.end_comments = self.take_comments_before(self.span().start);
                self.expect(&Tok::RBrace, "'}' after 'return'")?;
                return Ok(f);
            }
            match self.peek() {
                Tok::Value(_) => {
                    let from = self.pos;
                    if self.statement(&mut f, &mut scope).is_err() {
                        // The names it defines: `%a, %b =`.
                        let mut k = from;
                        while let Tok::Value(n) = &self.toks[k].tok {
                            self.broken.insert(n.clone());
                            if self.toks[k + 1].tok != Tok::Comma {
                                break;
                            }
                            k += 2;
                        }
                        self.skip_statement(from);
                    }
                }
                Tok::RBrace => {
                    let sp = self.span();
                    return self.error(sp, format!("function @{} has no 'return'", f.name));
                }
                Tok::Eof => return self.expected("'return' and '}' to end the function"),
                _ => {
                    let _ = self.expected_here::<()>("a statement like '%x = op ...' or 'return'");
                    let from = self.pos;
                    self.skip_statement(from);
                    if self.is_ident("func") || self.is_ident("spmd") {
                        return Err(Bail);
                    }
                }
            }
        }
    }

    fn statement(&mut self, f: &mut Function, scope: &mut HashMap<String, Value>) -> P<()> {
        let before = self.take_comments_before(self.span().start);
        let start = self.span();
        let mut names = vec![];
        loop {
            match self.peek().clone() {
                Tok::Value(n) => {
                    let sp = self.bump().span;
                    names.push((n, sp));
                }
                _ => return self.expected("a result name like %x"),
            }
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(&Tok::Eq, "'=' after the result names")?;
        let (opname, op_span) = self.ident("an op name")?;
        let Some(op) = Opcode::from_name(&opname) else {
            return self.error(op_span, format!("unknown op '{opname}'"));
        };
        let mut inst = InstData::new(op);
        inst.op_span = op_span;
        let def = op.def();
        let mut raw_lit = None;
        if def.literal {
            raw_lit = Some(self.raw_literal(0)?);
        } else if def.callee {
            // `switch %i, @b0, @b1(...)`: the index operand comes first.
            if def.callees == Callees::Branches {
                match self.peek().clone() {
                    Tok::Value(n) => self.operand(&n, &mut inst, scope)?,
                    _ => return self.expected(&format!("the index operand after '{opname}' like %i (the index comes first: '{opname} %i, @b0, @b1(...)')")),
                }
                self.expect(&Tok::Comma, &format!("',' and at least one branch after the index like '{opname} %i, @b0(...)'"))?;
            }
            loop {
                match self.peek().clone() {
                    Tok::Func(n) => {
                        inst.callee_spans.push(self.bump().span);
                        inst.callees.push(n);
                    }
                    _ => {
                        let what = match def.callees {
                            Callees::CondBody if inst.callees.len() == 1 => format!("the body after '{opname} @{},' like @body", inst.callees[0]),
                            Callees::CondBody => format!("the condition after '{opname}' like @cond"),
                            Callees::Branches => format!("a branch after '{opname}' like @b0"),
                            _ => format!("a function name after '{opname}' like @f"),
                        };
                        return self.expected(&what);
                    }
                }
                let more = match def.callees {
                    Callees::CondBody => inst.callees.len() < 2,
                    Callees::Branches if matches!(self.peek(), Tok::Func(_)) => return self.expected("',' between the branches"),
                    Callees::Branches => self.is(&Tok::Comma),
                    _ => false,
                };
                if !more {
                    break;
                }
                let what = format!("',' and the body after '{opname} @{}' ('{opname}' names a condition and a body: '{opname} @cond, @body(...)')", inst.callees[0]);
                self.expect(&Tok::Comma, &what)?;
            }
            if self.is(&Tok::Comma) {
                let names = match def.callees {
                    Callees::CondBody => "a condition and a body, no more",
                    _ if op == Opcode::Scan => "one step function",
                    _ => "one function",
                };
                return self.expected_here(&format!("'(' and the arguments after @{} ('{opname}' names {names})", inst.callees.last().map_or("", String::as_str)));
            }
            self.expect(&Tok::LParen, "'(' and the arguments")?;
            if !self.is(&Tok::RParen) {
                self.operands(&mut inst, scope)?;
            }
            self.expect(&Tok::RParen, "',' or ')' after the arguments")?;
        } else if matches!(self.peek(), Tok::Value(_)) {
            self.operands(&mut inst, scope)?;
        }
        if self.is(&Tok::LBrace) {
            self.attrs(&mut inst)?;
        }
        // `scatter {kind=add}` is `scatter_add` (one IR form; printed as `scatter_add`).
        if inst.op == Opcode::Scatter && inst.attr("kind").and_then(|k| k.as_ident()) == Some("add") {
            inst.op = Opcode::ScatterAdd;
            inst.attrs.retain(|a| a.name != "kind");
        }
        // Result types.
        let mut types: Vec<(TensorType, Option<Sharding>, Span)> = vec![];
        let mut types_start = self.span();
        if self.eat(&Tok::Colon) {
            types_start = self.span();
            if self.eat(&Tok::LParen) {
                loop {
                    let s = self.span();
                    let t = self.ty()?;
                    let sh = self.opt_sharding()?;
                    types.push((t, sh.map(|x| x.0), s.to(self.prev_span())));
                    if !self.eat(&Tok::Comma) {
                        break;
                    }
                }
                self.expect(&Tok::RParen, "',' or ')' after the result types")?;
            } else {
                let s = self.span();
                let t = self.ty()?;
                let sh = self.opt_sharding()?;
                types.push((t, sh.map(|x| x.0), s.to(self.prev_span())));
            }
            if types.len() != names.len() {
                return self.error(
                    start.to(self.prev_span()),
                    format!("{} result name{} but {} result type{}", names.len(), if names.len() == 1 { "" } else { "s" }, types.len(), if types.len() == 1 { "" } else { "s" }),
                );
            }
        } else if self.is_ident("on") {
            let sp = self.span();
            return self.error(sp, "a sharding constraint needs the type first: ': TYPE on [...]'");
        }
        inst.types_written = !types.is_empty();
        if inst.types_written {
            inst.types_span = types_start.to(self.prev_span());
        }
        inst.span = start.to(self.prev_span());
        if let Some(raw) = raw_lit {
            let Some((t, _, _)) = types.first() else {
                return self.error(inst.op_span, "'constant' needs its result type written (': TYPE')");
            };
            let t = t.clone();
            inst.literal = Some(self.literal(raw, &t)?);
        }
        // Define the results.
        let inst_id = f.insts.push(inst);
        for (i, (n, sp)) in names.iter().enumerate() {
            if scope.contains_key(n) {
                self.diags.push(Diag::new(*sp, format!("value '%{n}' is defined twice")));
            }
            let (ty, sh) = match types.get(i) {
                Some((t, s, _)) => (t.clone(), s.clone()),
                None => (TensorType::scalar(PLACEHOLDER), None),
            };
            let v = f.add_value(n, ty, ValueDef::Result(inst_id, i), *sp);
            f.values[v].sharding = sh;
            f.insts[inst_id].results.push(v);
            scope.insert(n.clone(), v);
        }
        f.insts[inst_id].comments = Comments { before, eol: self.take_eol() };
        f.body.push(inst_id);
        Ok(())
    }

    /// Takes the value token `%n` (the next token) as the next operand of `inst`.
    fn operand(&mut self, n: &str, inst: &mut InstData, scope: &HashMap<String, Value>) -> P<()> {
        let sp = self.bump().span;
        match scope.get(n) {
            Some(&v) => {
                inst.operands.push(v);
                inst.operand_spans.push(sp);
                Ok(())
            }
            None => self.undefined(n, sp),
        }
    }

    fn operands(&mut self, inst: &mut InstData, scope: &HashMap<String, Value>) -> P<()> {
        loop {
            match self.peek().clone() {
                Tok::Value(n) => self.operand(&n, inst, scope)?,
                _ => return self.expected("an operand like %x"),
            }
            if !self.eat(&Tok::Comma) {
                // `add %x %y`: a value on the same line that does not start the
                // next statement (`%z =` or `%z, ...`) is a missing comma.
                let t = &self.toks[self.pos];
                if matches!(t.tok, Tok::Value(_)) && !t.line_start && !matches!(self.peek_at(1), Tok::Eq | Tok::Comma) {
                    return self.expected("',' between operands");
                }
                return Ok(());
            }
        }
    }

    fn attrs(&mut self, inst: &mut InstData) -> P<()> {
        self.bump(); // {
        if self.eat(&Tok::RBrace) {
            return Ok(());
        }
        loop {
            let (name, sp) = self.ident("an attribute name")?;
            self.expect(&Tok::Eq, "'=' after the attribute name")?;
            let value = self.attr_value(0)?;
            if inst.attrs.iter().any(|a| a.name == name) {
                return self.error(sp, format!("attribute '{name}' is given twice"));
            }
            inst.attrs.push(Attr { name, value, span: sp.to(self.prev_span()) });
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(&Tok::RBrace, "',' or '}' after the attributes")?;
        Ok(())
    }

    fn attr_value(&mut self, depth: usize) -> P<AttrValue> {
        let sp = self.span();
        match self.peek().clone() {
            Tok::Int(s) => {
                self.bump();
                match s.parse::<i64>() {
                    Ok(v) => Ok(AttrValue::Int(v)),
                    Err(_) => self.error(sp, format!("integer {s} is out of range")),
                }
            }
            Tok::Float(s) => {
                self.bump();
                Ok(AttrValue::Float(s.parse::<f64>().unwrap_or(f64::NAN)))
            }
            Tok::Minus => {
                self.bump();
                if self.is_ident("inf") {
                    self.bump();
                    Ok(AttrValue::Float(f64::NEG_INFINITY))
                } else {
                    self.expected("a number after '-'")
                }
            }
            Tok::Ident(s) => {
                self.bump();
                Ok(match s.as_str() {
                    "true" => AttrValue::Bool(true),
                    "false" => AttrValue::Bool(false),
                    "inf" => AttrValue::Float(f64::INFINITY),
                    "nan" => AttrValue::Float(f64::NAN),
                    _ => AttrValue::Ident(s),
                })
            }
            Tok::Str(s) => {
                self.bump();
                Ok(AttrValue::Str(s))
            }
            Tok::LBracket => {
                if depth >= MAX_NESTING {
                    return self.error(sp, format!("attribute lists nest more than {MAX_NESTING} deep"));
                }
                self.bump();
                let mut items = vec![];
                if !self.eat(&Tok::RBracket) {
                    loop {
                        items.push(self.attr_value(depth + 1)?);
                        if !self.eat(&Tok::Comma) {
                            break;
                        }
                    }
                    self.expect(&Tok::RBracket, "',' or ']' in the list")?;
                }
                Ok(AttrValue::List(items))
            }
            _ => self.expected("an attribute value"),
        }
    }

    // ---- literals -------------------------------------------------------------

    fn raw_literal(&mut self, depth: usize) -> P<RawLit> {
        let sp = self.span();
        match self.peek().clone() {
            t @ (Tok::Int(_) | Tok::Float(_)) => {
                self.bump();
                Ok(RawLit::Num(t, sp))
            }
            Tok::Minus => {
                self.bump();
                if self.is_ident("inf") {
                    let end = self.bump().span;
                    Ok(RawLit::Num(Tok::Float("-inf".into()), sp.to(end)))
                } else {
                    self.expected("a number after '-'")
                }
            }
            Tok::Ident(s) if s == "inf" || s == "nan" => {
                self.bump();
                Ok(RawLit::Num(Tok::Float(s), sp))
            }
            Tok::Ident(s) if s == "true" || s == "false" => {
                self.bump();
                Ok(RawLit::Bool(s == "true", sp))
            }
            Tok::LBracket => {
                if depth >= MAX_NESTING {
                    return self.error(sp, format!("literal lists nest more than {MAX_NESTING} deep"));
                }
                self.bump();
                let mut items = vec![];
                if !self.eat(&Tok::RBracket) {
                    loop {
                        items.push(self.raw_literal(depth + 1)?);
                        if !self.eat(&Tok::Comma) {
                            break;
                        }
                    }
                    self.expect(&Tok::RBracket, "',' or ']' in the literal")?;
                }
                Ok(RawLit::List(items, sp.to(self.prev_span())))
            }
            _ => self.expected("a literal (a number, true/false, or a nested list)"),
        }
    }

    /// Checks a literal against its type and converts its elements to the dtype.
    fn literal(&mut self, raw: RawLit, ty: &TensorType) -> P<Literal> {
        let mut shape = vec![];
        let mut elems = vec![];
        fn walk(p: &mut Parser, r: &RawLit, depth: usize, shape: &mut Vec<u64>, out: &mut Vec<(Tok, bool, Span)>) -> P<()> {
            match r {
                RawLit::Num(t, sp) => {
                    if depth != shape.len() {
                        return p.error(*sp, "ragged literal: nesting depths differ");
                    }
                    out.push((t.clone(), false, *sp));
                }
                RawLit::Bool(b, sp) => {
                    if depth != shape.len() {
                        return p.error(*sp, "ragged literal: nesting depths differ");
                    }
                    out.push((Tok::Ident(b.to_string()), true, *sp));
                }
                RawLit::List(items, sp) => {
                    if items.is_empty() {
                        return p.error(*sp, "empty list in literal; PIR arrays have positive dimensions");
                    }
                    if depth == shape.len() {
                        if depth > 0 && out.len() > 0 {
                            return p.error(*sp, "ragged literal: nesting depths differ");
                        }
                        shape.push(items.len() as u64);
                    } else if depth > shape.len() || shape[depth] != items.len() as u64 {
                        return p.error(*sp, format!("ragged literal: expected {} elements here, found {}", shape.get(depth).copied().unwrap_or(0), items.len()));
                    }
                    for it in items {
                        walk(p, it, depth + 1, shape, out)?;
                    }
                }
            }
            Ok(())
        }
        let lit_span = match &raw {
            RawLit::Num(_, s) | RawLit::Bool(_, s) | RawLit::List(_, s) => *s,
        };
        let mut flat = vec![];
        walk(self, &raw, 0, &mut shape, &mut flat)?;
        if !shape.is_empty() && shape != ty.shape {
            let shape: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            return self.error(lit_span, format!("literal has shape [{}] but the type is {ty}", shape.join(",")));
        }
        for (tok, is_bool, sp) in flat {
            elems.push(self.number(&tok, is_bool, ty.dtype, sp)?);
        }
        Ok(Literal { shape, elems })
    }

    fn number(&mut self, tok: &Tok, is_bool: bool, d: DType, sp: Span) -> P<Number> {
        if is_bool {
            if !d.is_pred() {
                return self.error(sp, format!("'true'/'false' are pred literals, the type is {d}"));
            }
            return Ok(Number::Bool(matches!(tok, Tok::Ident(s) if s == "true")));
        }
        if d.is_pred() {
            return self.error(sp, "a pred literal is 'true' or 'false'");
        }
        match tok {
            Tok::Int(s) => {
                let Ok(v) = s.parse::<i128>() else {
                    return self.error(sp, format!("integer literal {s} is out of range"));
                };
                if let Some((lo, hi)) = d.int_range() {
                    if v < lo || v > hi {
                        return self.error(sp, format!("integer literal {s} is out of range for {d} ({lo}..={hi})"));
                    }
                    Ok(Number::Int(v))
                } else {
                    Ok(Number::Float(round_decimal(s, d)))
                }
            }
            Tok::Float(s) => {
                if !d.is_float() {
                    return self.error(sp, format!("float literal {s} for integer type {d}"));
                }
                Ok(Number::Float(round_decimal(s, d)))
            }
            _ => self.error(sp, "expected a number"),
        }
    }
}

/// A decimal (or `inf`/`-inf`/`nan`) rounded to the nearest value of float dtype `d`
/// (ties to even), returned as the exact f64 of that value.
pub fn round_decimal(s: &str, d: DType) -> f64 {
    match s {
        "inf" => return f64::INFINITY,
        "-inf" => return f64::NEG_INFINITY,
        "nan" => return f64::NAN,
        _ => {}
    }
    match d {
        // Rust parses decimals correctly rounded, straight to the type.
        DType::F64 => s.parse::<f64>().unwrap_or(f64::NAN),
        DType::F32 => s.parse::<f32>().unwrap_or(f32::NAN) as f64,
        _ => {
            // f16/bf16: parse to f64 (one correct rounding), then round to the type.
            // That second rounding is only wrong when the f64 lands exactly on a
            // tie of the narrow type while the decimal was not exactly there: then
            // decide the tie by the decimal itself.
            let x = s.parse::<f64>().unwrap_or(f64::NAN);
            let (down, up) = (d.round_f64(next_toward_zero(x)), d.round_f64(next_away(x)));
            if !x.is_finite() || down == up {
                return d.round_f64(x);
            }
            let exact = format!("{:.1100e}", x.abs());
            match cmp_decimal(s.trim_start_matches('-'), &exact) {
                std::cmp::Ordering::Greater => up,
                std::cmp::Ordering::Less => down,
                std::cmp::Ordering::Equal => d.round_f64(x),
            }
        }
    }
}

fn next_away(x: f64) -> f64 {
    if x == 0.0 {
        return x;
    }
    f64::from_bits(x.to_bits() + 1)
}

fn next_toward_zero(x: f64) -> f64 {
    if x == 0.0 {
        return x;
    }
    f64::from_bits(x.to_bits() - 1)
}

/// Compares two non-negative decimals (`123.45`, `1.5e-3`) exactly.
fn cmp_decimal(a: &str, b: &str) -> std::cmp::Ordering {
    // Normalise to (significant digits without leading/trailing zeros, exponent of
    // the first digit).
    fn norm(s: &str) -> (String, i64) {
        let (mant, exp) = match s.find(['e', 'E']) {
            Some(i) => (&s[..i], s[i + 1..].parse::<i64>().unwrap_or(0)),
            None => (s, 0),
        };
        let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
        let digits = format!("{int}{frac}");
        let lead = digits.len() - digits.trim_start_matches('0').len();
        let sig = digits.trim_start_matches('0').trim_end_matches('0').to_string();
        (sig, exp + int.len() as i64 - 1 - lead as i64)
    }
    let (da, ea) = norm(a);
    let (db, eb) = norm(b);
    match (da.is_empty(), db.is_empty()) {
        (true, true) => return std::cmp::Ordering::Equal,
        (true, false) => return std::cmp::Ordering::Less,
        (false, true) => return std::cmp::Ordering::Greater,
        _ => {}
    }
    // Digit strings compare as if the shorter were padded with zeros (no
    // `{:0<n$}` padding: a format width above 65535 panics).
    ea.cmp(&eb).then_with(|| {
        let n = da.len().max(db.len());
        let pad = |d: &str| d.bytes().chain(std::iter::repeat(b'0')).take(n).collect::<Vec<u8>>();
        pad(&da).cmp(&pad(&db))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_literals_round_once_from_the_decimal() {
        // 1.00390625 is the bf16 tie between 1.0 and 1.0078125; the f64 parse lands on it.
        assert_eq!(round_decimal("1.00390625000000000001", DType::BF16), 1.0078125);
        assert_eq!(round_decimal("1.00390625", DType::BF16), 1.0);
        assert_eq!(round_decimal("1.00390624999999999999", DType::BF16), 1.0);
        assert_eq!(round_decimal("-1.00390625000000000001", DType::BF16), -1.0078125);
        assert_eq!(round_decimal("1.00048828125000000001", DType::F16), 1.0009765625);
        assert_eq!(round_decimal("0.1", DType::BF16), half::bf16::from_f32(0.1).to_f64());
    }

    #[test]
    fn decimal_comparison_is_exact() {
        use std::cmp::Ordering::*;
        assert_eq!(cmp_decimal("1.5e-3", "0.0015"), Equal);
        assert_eq!(cmp_decimal("100", "1e2"), Equal);
        assert_eq!(cmp_decimal("0.00150000001", "1.5e-3"), Greater);
        assert_eq!(cmp_decimal("0", "0.0e5"), Equal);
        assert_eq!(cmp_decimal("9.99", "10"), Less);
    }
}
