//! The per-device program as the planner takes it: the entry function and
//! every body its control flow names (and theirs), each with its calls
//! inlined ([`inline_calls`]) but kept a function of its own — a loop's body
//! is planned and compiled once, not unrolled into its caller.

use crate::{inline_calls, TransformError};
use pjc_ir::{FuncId, Function, Module};
use std::collections::HashSet;

/// The entry first, then each body in the order it is first named.
pub fn inline_program(m: &Module, entry: FuncId) -> Result<Vec<Function>, TransformError> {
    let mut out = vec![];
    let mut seen = HashSet::from([entry]);
    let mut next = 0;
    let mut order = vec![entry];
    while next < order.len() {
        let f = inline_calls(m, order[next])?;
        next += 1;
        for &i in &f.body {
            let inst = &f.insts[i];
            if !inst.op.is_control() {
                continue;
            }
            for b in inst.callees.iter().filter_map(|c| m.func_by_name(c)) {
                if seen.insert(b) {
                    order.push(b);
                }
            }
        }
        out.push(f);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_stay_functions_and_calls_inside_them_are_inlined() {
        let src = "func @sq(%x: f32[4]) -> (f32[4]) {
  %y = mul %x, %x
  return %y
}

func @step(%h: f32[4], %x: f32[4]) -> (f32[4], f32[4]) {
  %s = call @sq(%x) : f32[4]
  %t = add %h, %s
  return %t, %s
}

func @main(%h: f32[4], %xs: f32[3,4]) -> (h: f32[4], ys: f32[3,4]) {
  %h2, %ys = scan @step(%h, %xs) {length=3, carries=1}
  %again, %zs = scan @step(%h2, %xs) {length=3, carries=1}
  return %again, %ys
}
";
        let m = pjc_front::load(src).unwrap();
        let fs = inline_program(&m, m.func_by_name("main").unwrap()).unwrap();
        let names: Vec<&str> = fs.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["main", "step"], "one body for both scans, no @sq");
        let step = &fs[1];
        assert!(step.body.iter().all(|&i| step.insts[i].op != pjc_ir::Opcode::Call));
        assert_eq!(fs[0].body.iter().filter(|&&i| fs[0].insts[i].op == pjc_ir::Opcode::Scan).count(), 2);
    }
}
