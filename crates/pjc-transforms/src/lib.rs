//! Transforms of spec section 9, expanded into ordinary PIR before sharding.
//!
//! [`expand`] visits functions callees-first; every `grad` or `vmap` instruction
//! becomes a `call` of a generated function (`@f.grad`, `@f.vmap`, ...) built by
//! [`grad::generate`] or [`vmap::generate`]. Callees-first order means a
//! transform never sees an unexpanded transform inside the function it
//! transforms, so nesting (grad of grad, vmap of grad, grad of vmap) composes.
//! [`simplify`] then removes dead code and trivial arithmetic so `--emit pir`
//! stays readable.

mod accumulate;
pub use accumulate::{accumulate, Accumulate, AccumulateError, Accumulated};
mod error;
pub mod grad;
mod names;
pub use grad::inline_calls;
mod program;
pub use program::inline_program;
pub mod pipeline;
pub use pipeline::{pipeline, Pipeline, PipelineError, Pipelined};
pub mod simplify;
pub mod vmap;

pub use error::TransformError;

use pjc_ir::{FuncId, Module, Opcode};
use std::collections::HashMap;

/// Functions in an order where every callee comes before its callers
/// (the verifier has rejected call cycles).
pub fn callees_first(m: &Module) -> Vec<FuncId> {
    fn visit(m: &Module, id: FuncId, seen: &mut Vec<bool>, out: &mut Vec<FuncId>) {
        if seen[id.index()] {
            return;
        }
        seen[id.index()] = true;
        let f = &m.funcs[id];
        for &i in &f.body {
            for c in f.insts[i].callees.iter().filter_map(|c| m.func_by_name(c)) {
                visit(m, c, seen, out);
            }
        }
        out.push(id);
    }
    use pjc_ir::EntityRef;
    let mut seen = vec![false; m.funcs.len()];
    let mut out = vec![];
    for id in m.funcs.keys() {
        visit(m, id, &mut seen, &mut out);
    }
    out
}

/// Replaces every `grad` and `vmap` in the module by a call of a generated
/// function, then simplifies the generated code. The module must be verified;
/// it stays verified.
pub fn expand(m: &mut Module) -> Result<(), TransformError> {
    // Generated functions, keyed by the transform and its attributes, so the
    // same transform of the same function is generated once.
    let mut made: HashMap<String, String> = HashMap::new();
    for id in callees_first(m) {
        let body = m.funcs[id].body.clone();
        for inst in body {
            let data = &m.funcs[id].insts[inst];
            if !data.op.is_transform() {
                continue;
            }
            let op = data.op;
            let span = data.span;
            let callee = data.callee().unwrap_or_default().to_string();
            let attrs = data.attrs.clone();
            // Operand types are part of the key: vmap over another batch size is
            // another function.
            let operand_types: Vec<String> = data.operands.iter().map(|&v| m.funcs[id].ty(v).to_string()).collect();
            let key = format!(
                "{op} @{callee} {} ({})",
                attrs.iter().map(|a| format!("{}={:?}", a.name, a.value)).collect::<Vec<_>>().join(" "),
                operand_types.join(", ")
            );
            let name = match made.get(&key) {
                Some(n) => n.clone(),
                None => {
                    let target = m.func_by_name(&callee).ok_or_else(|| TransformError {
                        span,
                        msg: format!("unknown function @{callee}"),
                    })?;
                    // Both may also generate helpers: VJPs of called spmd funcs,
                    // forward and backward bodies of control flow, batched bodies.
                    let fs = match op {
                        Opcode::Grad => grad::generate_all(m, target, &m.funcs[id].insts[inst])?,
                        _ => vmap::generate_all(m, target, &m.funcs[id].insts[inst])?,
                    };
                    let name = fs[0].name.clone();
                    for f in fs {
                        m.funcs.push(f);
                    }
                    made.insert(key, name.clone());
                    name
                }
            };
            let d = &mut m.funcs[id].insts[inst];
            d.op = Opcode::Call;
            d.set_callee(name);
            d.attrs.clear();
        }
    }
    simplify::run(m);
    Ok(())
}
