//! MLIR back to PIR text, for the subset `pjc compile --emit mlir` writes
//! (global view). melior parses and verifies the module; this walks it into a
//! plain tree ([`Op`]) and writes PIR text, which the caller parses and verifies
//! like any PIR source. Anything outside the subset is one error line naming
//! the MLIR op.

use crate::emit::elem;
use melior::ir::block::BlockLike;
use melior::ir::operation::OperationLike;
use melior::ir::{attribute::AttributeLike, ValueLike};
use melior::ir::{OperationRef, RegionLike};
use pjc_dialects::{attr::AttrKind, DType, Opcode};
use std::collections::HashMap;
use std::fmt::Write;

/// An operation as plain data.
struct Op {
    name: String,
    /// The op as MLIR prints it (one line for ops without regions).
    text: String,
    attrs: HashMap<String, String>,
    operands: Vec<usize>,
    results: Vec<(usize, String)>,
    /// The entry block's arguments and operations of each region.
    regions: Vec<(Vec<(usize, String)>, Vec<Op>)>,
    /// The elements of an `arith.constant`'s dense value, as PIR literals.
    dense: Option<(bool, Vec<String>)>,
}

fn tree(op: &OperationRef) -> Op {
    let name = op.name().as_string_ref().as_str().unwrap_or("").to_string();
    let mut attrs = HashMap::new();
    for (k, v) in op.attributes() {
        attrs.insert(
            k.as_string_ref().as_str().unwrap_or("").to_string(),
            v.to_string(),
        );
    }
    let operands = op.operands().map(|v| v.to_raw().ptr as usize).collect();
    let results = op
        .results()
        .map(|r| (r.to_raw().ptr as usize, r.r#type().to_string()))
        .collect();
    let mut regions = vec![];
    for r in op.regions() {
        let Some(b) = r.first_block() else {
            regions.push((vec![], vec![]));
            continue;
        };
        let args = (0..b.argument_count())
            .filter_map(|i| b.argument(i).ok())
            .map(|a| (a.to_raw().ptr as usize, a.r#type().to_string()))
            .collect();
        let mut ops = vec![];
        let mut cur = b.first_operation();
        while let Some(o) = cur {
            ops.push(tree(&o));
            cur = o.next_in_block();
        }
        regions.push((args, ops));
    }
    // Local scope: printing one op must not name every value of the module.
    let flags = melior::ir::operation::OperationPrintingFlags::new().use_local_scope();
    let text = if op.region_count() == 0 {
        op.to_string_with_flags(flags).unwrap_or_default()
    } else {
        String::new()
    };
    let dense = if name == "arith.constant" {
        op.attribute("value").ok().and_then(|a| dense(a))
    } else {
        None
    };
    Op {
        name,
        text,
        attrs,
        operands,
        results,
        regions,
        dense,
    }
}

/// The elements of a dense attribute as PIR literal text: (splat, elements).
fn dense(a: melior::ir::Attribute) -> Option<(bool, Vec<String>)> {
    use mlir_sys::*;
    let raw = a.to_raw();
    unsafe {
        if !mlirAttributeIsADenseElements(raw) {
            return None;
        }
        let ty = mlirAttributeGetType(raw);
        let et = mlirShapedTypeGetElementType(ty);
        let splat = mlirDenseElementsAttrIsSplat(raw);
        let n = if splat {
            1
        } else {
            mlirElementsAttrGetNumElements(raw) as isize
        };
        let data = mlirDenseElementsAttrGetRawData(raw) as *const u8;
        let mut out = vec![];
        for i in 0..n {
            let s = if mlirTypeIsAF64(et) {
                float(mlirDenseElementsAttrGetDoubleValue(raw, i))
            } else if mlirTypeIsAF32(et) {
                float(mlirDenseElementsAttrGetFloatValue(raw, i) as f64)
            } else if mlirTypeIsAF16(et) || mlirTypeIsABF16(et) {
                let bits = u16::from_le_bytes([*data.offset(2 * i), *data.offset(2 * i + 1)]);
                float(if mlirTypeIsAF16(et) {
                    half::f16::from_bits(bits).to_f64()
                } else {
                    half::bf16::from_bits(bits).to_f64()
                })
            } else if mlirTypeIsAInteger(et) {
                match mlirIntegerTypeGetWidth(et) {
                    1 => mlirDenseElementsAttrGetBoolValue(raw, i).to_string(),
                    8 => mlirDenseElementsAttrGetInt8Value(raw, i).to_string(),
                    16 => mlirDenseElementsAttrGetInt16Value(raw, i).to_string(),
                    32 => mlirDenseElementsAttrGetInt32Value(raw, i).to_string(),
                    64 => mlirDenseElementsAttrGetInt64Value(raw, i).to_string(),
                    _ => return None,
                }
            } else {
                return None;
            };
            out.push(s);
        }
        Some((splat, out))
    }
}

/// A float as PIR prints it (shortest form with a `.` or exponent).
fn float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let s = format!("{f:?}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

/// An MLIR tensor type as a PIR type (`dtype` overrides the signless element type).
fn pir_type(t: &str, dtype: Option<&str>) -> Result<String, String> {
    let inner = t
        .strip_prefix("tensor<")
        .and_then(|s| s.strip_suffix('>'))
        .ok_or_else(|| format!("unsupported: type {t} (only ranked static tensors)"))?;
    let parts: Vec<&str> = inner.split('x').collect();
    let (e, dims) = parts.split_last().expect("split gives one part");
    let d = match (*e, dtype) {
        (_, Some(d)) => DType::from_name(d).ok_or_else(|| format!("unsupported: dtype {d}"))?,
        ("i1", _) => DType::Pred,
        (e, _) => DType::ALL
            .iter()
            .copied()
            .find(|&d| elem(d) == e && !d.is_unsigned_int())
            .ok_or_else(|| format!("unsupported: element type {e} in {t}"))?,
    };
    for x in dims {
        if x.parse::<u64>().is_err() {
            return Err(format!("unsupported: type {t} (only static shapes)"));
        }
    }
    Ok(format!("{}[{}]", d.name(), dims.join(",")))
}

/// Strings of an MLIR array of strings (`["a", "b"]`).
fn strings(s: &str) -> Vec<String> {
    let mut out = vec![];
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '"' {
            let mut cur = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => {
                        let a = chars.next().unwrap_or('\\');
                        if a == '"' || a == '\\' {
                            cur.push(a);
                        } else {
                            let b = chars.next().unwrap_or('0');
                            if let Ok(v) = u8::from_str_radix(&format!("{a}{b}"), 16) {
                                cur.push(v as char);
                            }
                        }
                    }
                    '"' => break,
                    c => cur.push(c),
                }
            }
            out.push(cur);
        }
    }
    out
}

/// The integers in a text (`array<i64: 1, 0>`, `[[0], []]` flattened).
fn ints(s: &str) -> Vec<i64> {
    let s = s
        .split_once(':')
        .filter(|_| s.starts_with("array<"))
        .map_or(s, |(_, r)| r);
    s.split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter(|t| !t.is_empty() && *t != "-")
        .filter_map(|t| t.parse().ok())
        .collect()
}

/// `[[0], [], [1, 2]]` as one list of integers per entry.
fn nested_ints(s: &str) -> Vec<Vec<i64>> {
    let s = s.trim();
    let s = s
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or(s);
    let mut out = vec![];
    let mut depth = 0;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '[' => {
                depth += 1;
                cur.clear();
            }
            ']' => {
                depth -= 1;
                out.push(ints(&cur));
            }
            c if depth > 0 => cur.push(c),
            _ => {}
        }
    }
    out
}

/// The value after `key = ` in an op's printed text (a balanced `[..]`, or up
/// to the next space).
fn keyword<'t>(text: &'t str, key: &str) -> Option<&'t str> {
    let i = text.find(&format!(" {key} = "))? + key.len() + 4;
    let rest = text[i..].trim_start();
    if rest.starts_with('[') {
        let mut depth = 0;
        for (j, c) in rest.char_indices() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(&rest[..=j]);
                    }
                }
                _ => {}
            }
        }
        return None;
    }
    Some(rest.split([' ', ',', '}']).next().unwrap_or(""))
}

/// A PIR attribute value from an MLIR attribute's text (`1 : i64`, `"sum"`,
/// `true`, `[..]`); identifiers and strings are told apart by the attribute kind.
fn attr_text(s: &str, is_str: bool) -> String {
    let s = s.trim();
    if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        return format!(
            "[{}]",
            split_top(inner)
                .iter()
                .map(|p| attr_text(p, is_str))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if s.starts_with('"') {
        let v = strings(s).pop().unwrap_or_default();
        return if is_str { format!("{:?}", v) } else { v };
    }
    let v = s.split(" : ").next().unwrap_or(s).trim();
    if let Some(f) = v
        .parse::<f64>()
        .ok()
        .filter(|_| v.contains('.') || v.contains('e'))
    {
        return float(f);
    }
    v.to_string()
}

/// Splits at top-level commas (outside brackets, braces and strings).
fn split_top(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth, mut in_str, mut esc) =
        (vec![], String::new(), 0, false, false);
    for c in s.chars() {
        if in_str {
            cur.push(c);
            match (esc, c) {
                (true, _) => esc = false,
                (false, '\\') => esc = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                cur.push(c)
            }
            '[' | '{' | '<' | '(' => {
                depth += 1;
                cur.push(c)
            }
            ']' | '}' | '>' | ')' => {
                depth -= 1;
                cur.push(c)
            }
            ',' if depth == 0 => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out.into_iter().map(|p| p.trim().to_string()).collect()
}

/// `{a = 1 : i64, b = "x"}` as (name, value text) pairs.
fn dict(s: &str) -> Vec<(String, String)> {
    let s = s.trim();
    let inner = s
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or(s);
    split_top(inner)
        .into_iter()
        .map(|p| match p.split_once(" = ") {
            Some((k, v)) => (k.trim().to_string(), v.trim().to_string()),
            None => (p.trim().to_string(), "unit".to_string()),
        })
        .collect()
}

struct Importer {
    /// PIR name of each MLIR value (after `shard.shard`, the annotated value's).
    names: HashMap<usize, String>,
    /// The split axes of each `shard.sharding` value.
    shardings: HashMap<usize, Vec<Vec<i64>>>,
    /// The defining op of each helper value (name, operands, text).
    helpers: HashMap<usize, (String, Vec<usize>, String)>,
    axes: Vec<String>,
    fresh: usize,
}

impl Importer {
    fn name(&self, v: usize, op: &str) -> Result<String, String> {
        self.names.get(&v).cloned().ok_or_else(|| format!("unsupported: an operand of {op} that is not a PIR value (a helper op pjc does not write)"))
    }

    fn sharding(&self, s: &[Vec<i64>], rank: usize, open: &[i64]) -> String {
        let mut dims = vec![];
        for d in 0..rank {
            if open.contains(&(d as i64)) {
                dims.push("?".to_string());
                continue;
            }
            let a: Vec<String> = s
                .get(d)
                .map(|a| {
                    a.iter()
                        .map(|&i| {
                            self.axes
                                .get(i as usize)
                                .cloned()
                                .unwrap_or_else(|| format!("a{i}"))
                        })
                        .collect()
                })
                .unwrap_or_default();
            dims.push(match a.len() {
                0 => "_".to_string(),
                1 => a[0].clone(),
                _ => format!("({})", a.join(", ")),
            });
        }
        format!("[{}]", dims.join(", "))
    }
}

/// PIR text of an MLIR module in pjc's subset (global view).
pub fn import(text: &str) -> Result<String, String> {
    let context = crate::context();
    let module =
        crate::parse_verified(&context, text).map_err(|e| format!("not valid MLIR: {e}"))?;
    let body = module.body();
    let mut ops = vec![];
    let mut cur = body.first_operation();
    while let Some(o) = cur {
        ops.push(tree(&o));
        cur = o.next_in_block();
    }
    drop(module);
    let module_attrs = text
        .lines()
        .find(|l| l.trim_start().starts_with("module"))
        .unwrap_or("");
    if module_attrs.contains("pir.view = \"spmd\"") {
        return Err("unsupported: the per-device view (--emit mlir-spmd); import reads the global view (--emit mlir)".into());
    }
    let mut imp = Importer {
        names: HashMap::new(),
        shardings: HashMap::new(),
        helpers: HashMap::new(),
        axes: vec![],
        fresh: 0,
    };
    let mut out = String::new();
    let mut funcs = vec![];
    for op in &ops {
        match op.name.as_str() {
            "shard.grid" => {
                let shape: Vec<String> = op
                    .text
                    .split("shape = ")
                    .nth(1)
                    .and_then(|s| s.split(')').next())
                    .map(|s| s.split('x').map(str::to_string).collect())
                    .unwrap_or_default();
                let axes = op
                    .attrs
                    .get("pir.axes")
                    .map(|a| strings(a))
                    .unwrap_or_else(|| (0..shape.len()).map(|i| format!("a{i}")).collect());
                let declared = !module_attrs.contains("pir.mesh = false");
                if declared {
                    let list: Vec<String> = axes
                        .iter()
                        .zip(&shape)
                        .map(|(a, s)| format!("{a}={s}"))
                        .collect();
                    let _ = writeln!(out, "mesh [{}]\n", list.join(", "));
                }
                imp.axes = axes;
            }
            "func.func"
                if op.attrs.contains_key("pir.op")
                    || op.regions.first().is_none_or(|r| r.1.is_empty()) => {}
            "func.func" => funcs.push(op),
            other => return Err(format!("unsupported: {other} at module level")),
        }
    }
    let mut texts = vec![];
    for f in funcs {
        texts.push(imp.func(f)?);
    }
    out.push_str(&texts.join("\n"));
    Ok(out)
}

impl Importer {
    fn func(&mut self, f: &Op) -> Result<String, String> {
        let name = f
            .attrs
            .get("sym_name")
            .map(|s| strings(s).pop().unwrap_or_default())
            .unwrap_or_default();
        let spmd = f.attrs.contains_key("pir.spmd");
        // `[{pir.name = "x"}, ...]`: one dictionary per argument or result.
        let dicts = |key: &str| -> Vec<Vec<(String, String)>> {
            f.attrs
                .get(key)
                .map(|s| split_top(s.trim().trim_start_matches('[').trim_end_matches(']')).iter().map(|d| dict(d)).collect())
                .unwrap_or_default()
        };
        let (arg_attrs, res_attrs) = (dicts("arg_attrs"), dicts("res_attrs"));
        let get = |a: &[Vec<(String, String)>], i: usize, k: &str| {
            a.get(i)
                .and_then(|d| d.iter().find(|(n, _)| n == k))
                .map(|(_, v)| strings(v).pop().unwrap_or_default())
        };
        let (args, body) = &f.regions[0];
        let mut params = vec![];
        let mut param_types = vec![];
        for (i, (id, t)) in args.iter().enumerate() {
            let n = get(&arg_attrs, i, "pir.name").unwrap_or_else(|| format!("arg{i}"));
            let ty = pir_type(t, get(&arg_attrs, i, "pir.dtype").as_deref())?;
            param_types.push(ty.clone());
            self.names.insert(*id, n.clone());
            let on = get(&arg_attrs, i, "pir.on")
                .map(|s| format!(" on {s}"))
                .unwrap_or_default();
            params.push((n, ty, on));
        }
        // Result types come from the return's operands; names from res_attrs.
        let mut lines: Vec<(String, Vec<String>)> = vec![];
        let mut result_on: HashMap<usize, String> = HashMap::new();
        let mut param_on: HashMap<String, String> = HashMap::new();
        let mut ret = None;
        // Which instruction line defines each PIR value (for a later `on`).
        let mut line_of: HashMap<String, (usize, usize)> = HashMap::new();
        for op in body {
            let n = op.name.as_str();
            match n {
                "shard.sharding" => {
                    let sa = keyword(&op.text, "split_axes")
                        .map(nested_ints)
                        .unwrap_or_default();
                    self.shardings.insert(op.results[0].0, sa);
                    continue;
                }
                "shard.shard" => {
                    let src = self.name(op.operands[0], n)?;
                    self.names.insert(op.results[0].0, src.clone());
                    if op.attrs.contains_key("pir.written") {
                        let s = self
                            .shardings
                            .get(&op.operands[1])
                            .cloned()
                            .unwrap_or_default();
                        let rank = rank_of(&op.results[0].1);
                        let open = op
                            .attrs
                            .get("pir.open")
                            .map(|s| ints(s))
                            .unwrap_or_default();
                        let text = self.sharding(&s, rank, &open);
                        if let Some(k) = op.attrs.get("pir.result") {
                            result_on.insert(ints(k)[0] as usize, text);
                        } else if let Some(&(l, k)) = line_of.get(&src) {
                            let t: &mut Vec<String> = &mut lines[l].1;
                            t[k] = format!("{} on {text}", t[k]);
                        } else {
                            param_on.insert(src, text);
                        }
                    }
                    continue;
                }
                "tensor.empty"
                | "tensor.extract"
                | "arith.index_cast"
                | "shard.process_multi_index"
                | "linalg.fill" => {
                    self.helpers.insert(
                        op.results[0].0,
                        (n.to_string(), op.operands.clone(), op.text.clone()),
                    );
                    continue;
                }
                "arith.constant" if !op.attrs.contains_key("pir.names") => {
                    self.helpers
                        .insert(op.results[0].0, (n.to_string(), vec![], op.text.clone()));
                    continue;
                }
                "func.return" => {
                    ret = Some(
                        op.operands
                            .iter()
                            .map(|&v| self.name(v, n))
                            .collect::<Result<Vec<_>, _>>()?,
                    );
                    continue;
                }
                _ => {}
            }
            let line = self.inst(op)?;
            for (k, (id, _)) in op.results.iter().enumerate() {
                line_of.insert(self.names[id].clone(), (lines.len(), k));
            }
            lines.push(line);
        }
        let ret =
            ret.ok_or_else(|| format!("unsupported: function @{name} without func.return"))?;
        let rtypes: Vec<String> = f
            .attrs
            .get("function_type")
            .map(|t| {
                t.split_once("->")
                    .map(|(_, r)| {
                        r.trim()
                            .trim_start_matches('(')
                            .trim_end_matches(')')
                            .to_string()
                    })
                    .unwrap_or_default()
            })
            .map(|r| split_top(&r))
            .unwrap_or_default();
        let mut results = vec![];
        for (i, t) in rtypes.iter().enumerate() {
            let ty = pir_type(t, get(&res_attrs, i, "pir.dtype").as_deref())?;
            let n = get(&res_attrs, i, "pir.name")
                .map(|n| format!("{n}: "))
                .unwrap_or_default();
            let on = get(&res_attrs, i, "pir.on")
                .map(|s| format!(" on {s}"))
                .or_else(|| result_on.get(&i).map(|s| format!(" on {s}")))
                .unwrap_or_default();
            results.push(format!("{n}{ty}{on}"));
        }
        let params: Vec<String> = params
            .into_iter()
            .map(|(n, ty, on)| {
                let on = if on.is_empty() {
                    param_on
                        .get(&n)
                        .map(|s| format!(" on {s}"))
                        .unwrap_or_default()
                } else {
                    on
                };
                format!("%{n}: {ty}{on}")
            })
            .collect();
        let mut s = format!(
            "{}func @{}({}) -> ({}) {{\n",
            if spmd { "spmd " } else { "" },
            name,
            params.join(", "),
            results.join(", ")
        );
        for (head, t) in lines {
            let t = if t.len() == 1 {
                t[0].clone()
            } else {
                format!("({})", t.join(", "))
            };
            let _ = writeln!(s, "  {head} : {t}");
        }
        let _ = writeln!(
            s,
            "  return {}",
            ret.iter()
                .map(|r| format!("%{r}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        s.push_str("}\n");
        Ok(s)
    }

    /// One PIR statement from an op carrying `pir.names`: the text before ` : `
    /// and the result types (a sharding is appended to them later).
    fn inst(&mut self, op: &Op) -> Result<(String, Vec<String>), String> {
        let (head, types) = self.inst_text(op)?;
        Ok((head, types))
    }

    fn inst_text(&mut self, op: &Op) -> Result<(String, Vec<String>), String> {
        let n = op.name.as_str();
        let names: Vec<String> = match op.attrs.get("pir.names") {
            Some(s) => strings(s),
            None => op
                .results
                .iter()
                .map(|_| {
                    self.fresh += 1;
                    format!("v{}", self.fresh)
                })
                .collect(),
        };
        let dtypes: Vec<String> = op
            .attrs
            .get("pir.dtypes")
            .map(|s| strings(s))
            .unwrap_or_default();
        let mut types = vec![];
        for (k, (_, t)) in op.results.iter().enumerate() {
            types.push(pir_type(
                t,
                dtypes
                    .get(k)
                    .map(String::as_str)
                    .filter(|d| DType::from_name(d).is_some_and(|d| d.is_unsigned_int())),
            )?);
        }
        for (k, (id, _)) in op.results.iter().enumerate() {
            self.names.insert(*id, names[k].clone());
        }
        let operand = |i: usize| -> Result<String, String> {
            self.name(op.operands[i], n).map(|s| format!("%{s}"))
        };
        let all = |from: usize| -> Result<Vec<String>, String> {
            (from..op.operands.len()).map(operand).collect()
        };
        let lhs = names
            .iter()
            .map(|s| format!("%{s}"))
            .collect::<Vec<_>>()
            .join(", ");
        let simple = |pir: &str, ops: Vec<String>, attrs: String| {
            format!("{lhs} = {pir} {}{attrs}", ops.join(", "))
        };
        let unary = [
            ("arith.negf", "neg"),
            ("math.absf", "abs"),
            ("math.absi", "abs"),
            ("math.exp", "exp"),
            ("math.log", "log"),
            ("math.log1p", "log1p"),
            ("math.expm1", "expm1"),
            ("math.sqrt", "sqrt"),
            ("math.rsqrt", "rsqrt"),
            ("math.tanh", "tanh"),
            ("math.erf", "erf"),
            ("math.sin", "sin"),
            ("math.cos", "cos"),
            ("math.floor", "floor"),
            ("math.ceil", "ceil"),
            ("math.round", "round"),
            ("math.roundeven", "round_even"),
            ("math.isfinite", "is_finite"),
        ];
        let binary = [
            ("arith.addf", "add"),
            ("arith.addi", "add"),
            ("arith.subf", "sub"),
            ("arith.subi", "sub"),
            ("arith.mulf", "mul"),
            ("arith.muli", "mul"),
            ("arith.divf", "div"),
            ("arith.remf", "rem"),
            ("arith.maximumf", "max"),
            ("arith.maxsi", "max"),
            ("arith.maxui", "max"),
            ("arith.minimumf", "min"),
            ("arith.minsi", "min"),
            ("arith.minui", "min"),
            ("math.powf", "pow"),
            ("math.atan2", "atan2"),
            ("arith.andi", "and"),
            ("arith.ori", "or"),
            ("arith.xori", "xor"),
        ];
        let casts = [
            "arith.extf",
            "arith.truncf",
            "arith.sitofp",
            "arith.uitofp",
            "arith.extsi",
            "arith.extui",
            "arith.trunci",
        ];
        if let Some((_, p)) = unary.iter().chain(binary.iter()).find(|(m, _)| *m == n) {
            return Ok((simple(p, all(0)?, String::new()), types));
        }
        if casts.contains(&n) {
            return Ok((simple("convert", all(0)?, String::new()), types));
        }
        let head = match n {
            "arith.bitcast" => simple("bitcast_convert", all(0)?, String::new()),
            "arith.constant" => {
                let (splat, elems) = op.dense.clone().ok_or_else(|| "unsupported: arith.constant whose value is not a dense tensor".to_string())?;
                let shape: Vec<u64> = types[0].split('[').nth(1).unwrap_or("]").trim_end_matches(']').split(',').filter(|s| !s.is_empty()).map(|s| s.parse().unwrap_or(1)).collect();
                let d = DType::from_name(types[0].split('[').next().unwrap_or("")).unwrap_or(DType::F32);
                let elems: Vec<String> = elems.into_iter().map(|e| unsigned(&e, d)).collect();
                let lit = match (splat, op.attrs.contains_key("pir.list")) {
                    (true, false) => elems[0].clone(),
                    (true, true) => nest(&shape, &vec![elems[0].clone(); shape.iter().product::<u64>() as usize]),
                    _ => nest(&shape, &elems),
                };
                format!("{lhs} = constant {lit}")
            }
            "arith.cmpf" | "arith.cmpi" => {
                let pred = op.text.split(&format!("{n} ")).nth(1).and_then(|s| s.split(',').next()).unwrap_or("");
                let dir = match pred {
                    "oeq" | "eq" => "eq",
                    "une" | "ne" => "ne",
                    "olt" | "slt" | "ult" => "lt",
                    "ole" | "sle" | "ule" => "le",
                    "ogt" | "sgt" | "ugt" => "gt",
                    "oge" | "sge" | "uge" => "ge",
                    p => return Err(format!("unsupported: {n} with predicate {p}")),
                };
                simple("compare", all(0)?, format!(" {{dir={dir}}}"))
            }
            "arith.select" => {
                let c = match self.helpers.get(&op.operands[0]) {
                    Some((h, o, _)) if h == "tensor.extract" => format!("%{}", self.name(o[0], n)?),
                    _ => operand(0)?,
                };
                simple("select", vec![c, operand(1)?, operand(2)?], String::new())
            }
            "linalg.transpose" => simple("transpose", vec![operand(0)?], format!(" {{perm={}}}", ilist(&ints(op.attrs.get("permutation").map_or("", |s| s))))),
            "linalg.broadcast" => {
                let added = ints(op.attrs.get("dimensions").map_or("", |s| s));
                let rank = types[0].matches(',').count() + 1;
                let dims: Vec<i64> = (0..rank as i64).filter(|d| !added.contains(d)).collect();
                let a = if dims.is_empty() { String::new() } else { format!(" {{dims={}}}", ilist(&dims)) };
                simple("broadcast", vec![operand(0)?], a)
            }
            "tensor.reshape" => simple("reshape", vec![operand(0)?], String::new()),
            "linalg.reduce" => {
                let dims = ints(op.attrs.get("dimensions").map_or("", |s| s));
                let body = op.regions.first().and_then(|r| r.1.first()).map_or("", |o| o.name.as_str());
                let kind = match body {
                    "arith.addf" | "arith.addi" => "sum",
                    "arith.mulf" | "arith.muli" => "prod",
                    "arith.maximumf" | "arith.maxsi" | "arith.maxui" => "max",
                    "arith.minimumf" | "arith.minsi" | "arith.minui" => "min",
                    "arith.andi" => "and",
                    "arith.ori" => "or",
                    b => return Err(format!("unsupported: linalg.reduce combining with {b}")),
                };
                simple("reduce", vec![operand(0)?], format!(" {{dims={}, kind={kind}}}", ilist(&dims)))
            }
            "linalg.generic" => {
                // dot_general: two inputs, a multiply-add body; the maps say which
                // dims are batch (in all three), contracted (in both inputs only)
                // or free.
                let maps = op.attrs.get("indexing_maps").map(|m| affine_maps(m)).unwrap_or_default();
                let body: Vec<&str> = op.regions.first().map(|r| r.1.iter().map(|o| o.name.as_str()).collect()).unwrap_or_default();
                let mul_add = matches!(body.as_slice(), ["arith.mulf", "arith.addf", "linalg.yield"] | ["arith.muli", "arith.addi", "linalg.yield"]);
                if maps.len() != 3 || op.operands.len() != 3 || !mul_add {
                    return Err("unsupported: linalg.generic other than dot_general's (two inputs, multiply-add)".into());
                }
                let (l, r, o) = (&maps[0], &maps[1], &maps[2]);
                let pos = |m: &[usize], d: usize| m.iter().position(|&x| x == d).map(|p| p as i64);
                let batch: Vec<usize> = o.iter().copied().filter(|d| l.contains(d) && r.contains(d)).collect();
                let mut contract: Vec<usize> = l.iter().copied().filter(|d| r.contains(d) && !o.contains(d)).collect();
                contract.sort();
                let lb: Vec<i64> = batch.iter().filter_map(|&d| pos(l, d)).collect();
                let rb: Vec<i64> = batch.iter().filter_map(|&d| pos(r, d)).collect();
                let lc: Vec<i64> = contract.iter().filter_map(|&d| pos(l, d)).collect();
                let rc: Vec<i64> = contract.iter().filter_map(|&d| pos(r, d)).collect();
                let mut a = vec![];
                for (k, v) in [("lhs_batch", &lb), ("rhs_batch", &rb), ("lhs_contract", &lc), ("rhs_contract", &rc)] {
                    if !v.is_empty() {
                        a.push(format!("{k}={}", ilist(v)));
                    }
                }
                let a = if a.is_empty() { String::new() } else { format!(" {{{}}}", a.join(", ")) };
                simple("dot_general", vec![operand(0)?, operand(1)?], a)
            }
            "tensor.extract_slice" => {
                let start = ints(op.attrs.get("static_offsets").map_or("", |s| s));
                let sizes = ints(op.attrs.get("static_sizes").map_or("", |s| s));
                let stride = ints(op.attrs.get("static_strides").map_or("", |s| s));
                let limit: Vec<i64> = match op.attrs.get("pir.limit") {
                    Some(l) => ints(l),
                    None => start.iter().zip(&sizes).zip(&stride).map(|((s, n), t)| s + (n - 1) * t + 1).collect(),
                };
                let st = if stride.iter().all(|&s| s == 1) { String::new() } else { format!(", stride={}", ilist(&stride)) };
                simple("slice", vec![operand(0)?], format!(" {{start={}, limit={}{st}}}", ilist(&start), ilist(&limit)))
            }
            "tensor.concat" => simple("concat", all(0)?, format!(" {{dim={}}}", ints(op.attrs.get("dim").map_or("", |s| s)).first().copied().unwrap_or(0))),
            "tensor.from_elements" => {
                let axis = self
                    .helpers
                    .get(&op.operands[0])
                    .filter(|(h, _, _)| h == "arith.index_cast")
                    .and_then(|(_, o, _)| self.helpers.get(&o[0]))
                    .filter(|(h, _, _)| h == "shard.process_multi_index")
                    .and_then(|(_, _, t)| keyword(t, "axes").map(ints))
                    .and_then(|a| a.first().copied())
                    .ok_or_else(|| "unsupported: tensor.from_elements other than axis_index's".to_string())?;
                let a = self.axes.get(axis as usize).cloned().unwrap_or_default();
                format!("{lhs} = axis_index {{axis={a}}}")
            }
            "shard.all_reduce" | "shard.all_gather" | "shard.reduce_scatter" | "shard.all_to_all" | "shard.shift" => {
                let axes = keyword(&op.text, "grid_axes").map(ints).unwrap_or_default();
                let axes = axes.iter().map(|&i| self.axes.get(i as usize).cloned().unwrap_or_default()).collect::<Vec<_>>().join(", ");
                let kind = || match keyword(&op.text, "reduction").unwrap_or("sum") {
                    "product" => Ok("prod".to_string()),
                    k @ ("sum" | "max" | "min") => Ok(k.to_string()),
                    k => Err(format!("unsupported: {n} with reduction {k}")),
                };
                let k = |key: &str| keyword(&op.text, key).unwrap_or("0").trim_end_matches(':').to_string();
                let (pir, attrs) = match n {
                    "shard.all_reduce" => ("all_reduce", format!("axes=[{axes}], kind={}", kind()?)),
                    "shard.all_gather" => ("all_gather", format!("axes=[{axes}], dim={}", k("gather_axis"))),
                    "shard.reduce_scatter" => ("reduce_scatter", format!("axes=[{axes}], dim={}, kind={}", k("scatter_axis"), kind()?)),
                    "shard.all_to_all" => ("all_to_all", format!("axes=[{axes}], split_dim={}, concat_dim={}", k("split_axis"), k("concat_axis"))),
                    _ => ("collective_permute", format!("axes=[{axes}], shift={}", k("offset"))),
                };
                simple(pir, vec![operand(0)?], format!(" {{{attrs}}}"))
            }
            "func.call" => {
                let callee = op.attrs.get("callee").map(|s| s.trim_start_matches('@').to_string()).unwrap_or_default();
                let callee = strings(&callee).pop().unwrap_or(callee);
                let Some(pir_op) = op.attrs.get("pir.op").map(|s| strings(s).pop().unwrap_or_default()) else {
                    return Ok((format!("{lhs} = call @{}({})", callee, all(0)?.join(", ")), types));
                };
                let code = Opcode::from_name(&pir_op).ok_or_else(|| format!("unsupported: func.call of @{callee} with unknown pir.op {pir_op:?}"))?;
                let attrs = op.attrs.get("pir.attrs").map(|s| dict(s)).unwrap_or_default();
                let attrs: Vec<String> = attrs
                    .into_iter()
                    .map(|(k, v)| {
                        let is_str = code.def().attrs.iter().any(|a| a.name == k && a.kind == AttrKind::Str);
                        format!("{k}={}", attr_text(&v, is_str))
                    })
                    .collect();
                let attrs = if attrs.is_empty() { String::new() } else { format!(" {{{}}}", attrs.join(", ")) };
                let callees: Vec<String> = op.attrs.get("pir.callees").map(|s| split_top(s.trim().trim_start_matches('[').trim_end_matches(']'))).unwrap_or_default().iter().map(|c| {
                    let c = c.trim_start_matches('@');
                    strings(c).pop().unwrap_or_else(|| c.to_string())
                }).collect();
                let cs = callees.iter().map(|c| format!("@{c}")).collect::<Vec<_>>().join(", ");
                let ops = all(0)?;
                match code {
                    Opcode::Switch => format!("{lhs} = switch {}, {cs}({}){attrs}", ops[0], ops[1..].join(", ")),
                    _ if !callees.is_empty() => format!("{lhs} = {pir_op} {cs}({}){attrs}", ops.join(", ")),
                    _ => simple(&pir_op, ops, attrs),
                }
            }
            other => return Err(format!("unsupported: {other} (not in the subset pjc compile --emit mlir writes; docs/mlir.md)")),
        };
        Ok((head, types))
    }
}

fn ilist(v: &[i64]) -> String {
    format!(
        "[{}]",
        v.iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    )
}

fn nest(shape: &[u64], elems: &[String]) -> String {
    if shape.is_empty() {
        return elems.first().cloned().unwrap_or_default();
    }
    let inner: usize = shape[1..].iter().product::<u64>() as usize;
    let parts: Vec<String> = (0..shape[0] as usize)
        .map(|i| {
            nest(
                &shape[1..],
                &elems[i * inner..((i + 1) * inner).min(elems.len())],
            )
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

/// `[affine_map<(d0, d1, d2) -> (d0, d2)>, ...]` as the dim indices of each map's results.
fn affine_maps(s: &str) -> Vec<Vec<usize>> {
    s.split("affine_map<")
        .skip(1)
        .map(|m| {
            let results = m.split("->").nth(1).unwrap_or("");
            let results = results.split(')').next().unwrap_or("");
            results.split(',').filter_map(|t| t.trim().trim_start_matches('(').trim().strip_prefix('d')?.parse().ok()).collect()
        })
        .collect()
}

/// The rank of an MLIR tensor type's text.
fn rank_of(t: &str) -> usize {
    t.matches('x').count() - usize::from(false)
}

/// A signless integer element read back as its PIR dtype's value.
fn unsigned(e: &str, d: DType) -> String {
    match e.parse::<i128>() {
        Ok(v) if d.is_unsigned_int() && v < 0 => (v + (1i128 << d.bits())).to_string(),
        _ => e.to_string(),
    }
}
