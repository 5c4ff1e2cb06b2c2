//! The canonical text (spec section 10): what `pjc fmt` and every `--emit` print.
//!
//! Names are kept; attributes come in the op table's order, defaults omitted;
//! result types are always printed; floats use the shortest form that reads back
//! as the same value of their dtype, spelled like Python's `repr`. Printing is a
//! fixed point: `print(parse(print(m))) == print(m)`.

use pjc_ir::attrs::{default_value, window_rank};
use pjc_ir::{AttrValue, Comments, DType, FuncKind, Function, InstData, Module, Number, TensorType};
use std::fmt::Write;

/// Prints a whole module.
pub fn print_module(m: &Module) -> String {
    let mut out = String::new();
    if let Some(mesh) = &m.mesh {
        comments_before(&mut out, "", &m.mesh_comments);
        out.push_str(&mesh.to_string());
        eol(&mut out, &m.mesh_comments);
        out.push('\n');
    }
    for (i, (_, f)) in m.funcs.iter().enumerate() {
        if i > 0 || m.mesh.is_some() {
            out.push('\n');
        }
        print_function(&mut out, f);
    }
    if !m.end_comments.is_empty() {
        out.push('\n');
        for c in &m.end_comments {
            let _ = writeln!(out, "//{c}");
        }
    }
    out
}

fn comments_before(out: &mut String, indent: &str, c: &Comments) {
    for line in &c.before {
        let _ = writeln!(out, "{indent}//{line}");
    }
}

fn eol(out: &mut String, c: &Comments) {
    if let Some(e) = &c.eol {
        let _ = write!(out, "  //{e}");
    }
}

fn print_function(out: &mut String, f: &Function) {
    comments_before(out, "", &f.comments);
    if f.kind == FuncKind::Spmd {
        out.push_str("spmd ");
    }
    let _ = write!(out, "func @{}(", f.name);
    for (i, &p) in f.params.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let v = &f.values[p];
        let _ = write!(out, "%{}: {}", v.name, v.ty);
        if let Some(s) = &v.sharding {
            let _ = write!(out, " on {s}");
        }
    }
    out.push_str(") -> (");
    for (i, r) in f.results.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if let Some(n) = &r.name {
            let _ = write!(out, "{n}: ");
        }
        let _ = write!(out, "{}", r.ty);
        if let Some(s) = &r.sharding {
            let _ = write!(out, " on {s}");
        }
    }
    out.push_str(") {");
    eol(out, &f.comments);
    out.push('\n');
    for &inst in &f.body {
        print_inst(out, f, &f.insts[inst]);
    }
    comments_before(out, "  ", &f.ret_comments);
    out.push_str("  return");
    for (i, v) in f.ret.iter().enumerate() {
        out.push_str(if i == 0 { " " } else { ", " });
        let _ = write!(out, "%{}", f.values[*v].name);
    }
    eol(out, &f.ret_comments);
    out.push('\n');
    for c in &f.end_comments {
        let _ = writeln!(out, "  //{c}");
    }
    out.push_str("}\n");
}

/// One instruction as a line of text (without indentation, comments or newline).
pub fn inst_text(f: &Function, inst: &InstData) -> String {
    let mut out = String::new();
    for (i, r) in inst.results.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "%{}", f.values[*r].name);
    }
    let _ = write!(out, " = {}", inst.op);
    let def = inst.op.def();
    let result_dtype = inst.results.first().map(|r| f.values[*r].ty.dtype).unwrap_or(DType::F64);
    if let Some(lit) = &inst.literal {
        out.push(' ');
        if lit.shape.is_empty() {
            out.push_str(&number(lit.elems[0], result_dtype));
        } else {
            nested(&mut out, &lit.shape, &lit.elems, result_dtype);
        }
    }
    if !inst.callees.is_empty() {
        // `switch %i, @b0, @b1(%a)`: the index comes before the branches.
        let args = if inst.op == pjc_dialects::Opcode::Switch && !inst.operands.is_empty() {
            let _ = write!(out, " %{},", f.values[inst.operands[0]].name);
            1
        } else {
            0
        };
        for (k, c) in inst.callees.iter().enumerate() {
            let _ = write!(out, "{}@{c}", if k == 0 { " " } else { ", " });
        }
        out.push('(');
        operand_list_from(&mut out, f, inst, args);
        out.push(')');
    } else if !inst.operands.is_empty() {
        out.push(' ');
        operand_list(&mut out, f, inst);
    }
    let operand_types: Vec<&TensorType> = inst.operands.iter().map(|&v| f.ty(v)).collect();
    let wr = window_rank(inst.op, &operand_types);
    let mut attrs = vec![];
    for ad in def.attrs {
        let Some(v) = inst.attr(ad.name) else { continue };
        if default_value(ad, wr).as_ref() == Some(v) {
            continue;
        }
        attrs.push(format!("{}={}", ad.name, attr_value(v)));
    }
    if !attrs.is_empty() {
        let _ = write!(out, " {{{}}}", attrs.join(", "));
    }
    out.push_str(" : ");
    let typed = |v: pjc_ir::Value| {
        let d = &f.values[v];
        match &d.sharding {
            Some(s) => format!("{} on {s}", d.ty),
            None => d.ty.to_string(),
        }
    };
    if inst.results.len() == 1 {
        out.push_str(&typed(inst.results[0]));
    } else {
        out.push('(');
        out.push_str(&inst.results.iter().map(|&r| typed(r)).collect::<Vec<_>>().join(", "));
        out.push(')');
    }
    out
}

fn print_inst(out: &mut String, f: &Function, inst: &InstData) {
    comments_before(out, "  ", &inst.comments);
    out.push_str("  ");
    out.push_str(&inst_text(f, inst));
    eol(out, &inst.comments);
    out.push('\n');
}

fn operand_list(out: &mut String, f: &Function, inst: &InstData) {
    operand_list_from(out, f, inst, 0)
}

/// The operands from position `from` on, comma-separated.
fn operand_list_from(out: &mut String, f: &Function, inst: &InstData, from: usize) {
    for (i, v) in inst.operands.iter().enumerate().skip(from) {
        if i > from {
            out.push_str(", ");
        }
        let _ = write!(out, "%{}", f.values[*v].name);
    }
}

fn nested(out: &mut String, shape: &[u64], elems: &[Number], d: DType) {
    out.push('[');
    let inner: usize = shape[1..].iter().product::<u64>() as usize;
    for i in 0..shape[0] as usize {
        if i > 0 {
            out.push(',');
        }
        if shape.len() == 1 {
            out.push_str(&number(elems[i], d));
        } else {
            nested(out, &shape[1..], &elems[i * inner..(i + 1) * inner], d);
        }
    }
    out.push(']');
}

fn number(n: Number, d: DType) -> String {
    match n {
        Number::Int(i) => i.to_string(),
        Number::Bool(b) => b.to_string(),
        Number::Float(x) => format_float(x, d),
    }
}

pub fn attr_value(v: &AttrValue) -> String {
    match v {
        AttrValue::Int(i) => i.to_string(),
        AttrValue::Float(x) => format_float(*x, DType::F64),
        AttrValue::Bool(b) => b.to_string(),
        AttrValue::Ident(s) => s.clone(),
        AttrValue::Str(s) => format!("\"{s}\""),
        AttrValue::List(l) => format!("[{}]", l.iter().map(attr_value).collect::<Vec<_>>().join(",")),
    }
}

/// The shortest decimal that reads back (through [`crate::parser::round_decimal`])
/// as the same value of dtype `d`, spelled like Python's `repr`: positional for
/// 1e-4 <= |x| < 1e16 (always with a `.`), otherwise `d.ddde±XX`.
pub fn format_float(x: f64, d: DType) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // Shortest scientific digits for the dtype.
    let sci = match d {
        DType::F32 => format!("{:e}", x as f32),
        DType::F64 => format!("{:e}", x),
        _ => {
            let mut found = format!("{:e}", x);
            for p in 0..17 {
                let s = format!("{:.*e}", p, x);
                if crate::parser::round_decimal(&s, d) == x {
                    found = s;
                    break;
                }
            }
            found
        }
    };
    let (mant, exp) = sci.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    let sign = if neg { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        let s = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if (point as usize) >= digits.len() {
            format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
        } else {
            format!("{}.{}", &digits[..point as usize], &digits[point as usize..])
        };
        format!("{sign}{s}")
    } else {
        let m = if digits.len() == 1 { digits.to_string() } else { format!("{}.{}", &digits[..1], &digits[1..]) };
        let es = if exp < 0 { "-" } else { "+" };
        format!("{sign}{m}e{es}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_python_repr() {
        let f = |x: f64| format_float(x, DType::F64);
        assert_eq!(f(1.0), "1.0");
        assert_eq!(f(2.5e-5), "2.5e-05");
        assert_eq!(f(-0.0), "-0.0");
        assert_eq!(f(0.1), "0.1");
        assert_eq!(f(123456.5), "123456.5");
        assert_eq!(f(1e16), "1e+16");
        assert_eq!(f(1e15), "1000000000000000.0");
        assert_eq!(f(0.0001), "0.0001");
        assert_eq!(f(1.5e300), "1.5e+300");
        assert_eq!(format_float(0.1f32 as f64, DType::F32), "0.1");
        assert_eq!(format_float(half::bf16::from_f32(0.1).to_f64(), DType::BF16), "0.1");
        assert_eq!(format_float(half::f16::from_f32(3.14159).to_f64(), DType::F16), "3.14");
    }
}
