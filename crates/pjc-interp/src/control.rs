//! Control flow (spec section 7.1): `while`, `scan` and `switch`, written once
//! for every place a body runs. The operands arrive per device of a lockstep
//! group — one entry in the global view or inside a `func` running on one
//! device, one per mesh device in a `spmd func` — and a [`Bodies`] runner calls
//! a body on all of them together, so collectives inside bodies see every
//! device's values. The predicate of `while` and the index of `switch` must be
//! the same on every device (the verifier's replication check); should they
//! differ at run time, the devices would take different paths, which is
//! reported as [`EvalError::Divergent`] instead.
//!
//! Loops iterate here (never by recursion per iteration), and carries travel
//! as shared [`Val`]s: an iteration copies no carried tensor. `scan` copies one
//! slice per scanned operand per step and stacks each output once at the end.

use crate::{EvalError, Interp, Val};
use pjc_ir::{Attrs, FuncId, Function, InstData, Opcode};
use pjc_tensor::{Scalar, Tensor, TensorError};
use std::rc::Rc;

/// Calls a body on every device of the group: `args[d]` are device d's
/// arguments, the result's entry d its results.
pub(crate) type Bodies<'a> = dyn Fn(FuncId, Vec<Vec<Val>>) -> Result<Vec<Vec<Val>>, EvalError> + 'a;

impl<'m> Interp<'m> {
    /// `inst` (`while`, `scan` or `switch`) of `f` on every device of a
    /// lockstep group: `args[d]` are device d's operands; returns each
    /// device's results.
    pub(crate) fn control(&self, f: &Function, inst: &InstData, args: Vec<Vec<Val>>, run: &Bodies) -> Result<Vec<Vec<Val>>, EvalError> {
        let callees: Vec<FuncId> = inst.callees.iter().map(|c| self.callee(Some(c))).collect::<Result<_, _>>()?;
        let ranks: Vec<usize> = args[0].iter().map(|t| t.rank()).collect();
        let a = Attrs::with_ranks(inst, &ranks);
        let attr_err = |e: pjc_dialects::AttrError| self.internal(f, inst.op, e.0);
        match inst.op {
            Opcode::While => {
                let [cond, body] = callees[..] else {
                    return Err(self.internal(f, inst.op, format!("names {} functions, not a condition and a body", callees.len())));
                };
                let mut carried = args;
                while self.agreed(f, inst, "predicate", &run(cond, carried.clone())?)? == Scalar::Bool(true) {
                    carried = run(body, carried)?;
                }
                Ok(carried)
            }
            Opcode::Scan => {
                let length = a.index("length").map_err(attr_err)?;
                let carries = a.index("carries").map_err(attr_err)?;
                let reverse = a.bool("reverse").map_err(attr_err)?;
                let [step] = callees[..] else {
                    return Err(self.internal(f, inst.op, format!("names {} functions, not one step", callees.len())));
                };
                self.scan(f, inst, step, args, length, carries, reverse, run)
            }
            Opcode::Switch => {
                let last = callees.len().checked_sub(1).ok_or_else(|| self.internal(f, inst.op, "no branches".into()))?;
                // Clamped in the index's own dtype: a u32 4000000000 is large, not negative.
                let index = self.agreed(f, inst, "index", &args)?;
                let Scalar::Int(i) = index else {
                    return Err(self.internal(f, inst.op, format!("the index {index:?} is not an integer")));
                };
                let branch = callees[i.clamp(0, last as i128) as usize];
                run(branch, args.into_iter().map(|mut a| a.split_off(1)).collect())
            }
            op => Err(self.internal(f, op, "is not control flow".into())),
        }
    }

    /// `scan`: `carries` carried values and the scanned operands after them
    /// (`args[d]` per device), `length` steps of `step` in order (from the end
    /// when `reverse`), outputs stacked by their step's index.
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        f: &Function,
        inst: &InstData,
        step: FuncId,
        args: Vec<Vec<Val>>,
        length: usize,
        carries: usize,
        reverse: bool,
        run: &Bodies,
    ) -> Result<Vec<Vec<Val>>, EvalError> {
        let err = |e: TensorError| self.internal(f, inst.op, e.to_string());
        let (mut carried, scanned): (Vec<Vec<Val>>, Vec<Vec<Val>>) = args
            .into_iter()
            .map(|mut a| {
                let xs = a.split_off(carries.min(a.len()));
                (a, xs)
            })
            .unzip();
        // outputs[d][k][n]: device d's output k of the n-th step taken.
        let mut outputs: Vec<Vec<Vec<Val>>> = vec![vec![]; carried.len()];
        for n in 0..length {
            let i = if reverse { length - 1 - n } else { n };
            let step_args = carried
                .into_iter()
                .zip(&scanned)
                .map(|(mut c, xs)| {
                    for x in xs {
                        c.push(Rc::new(pjc_tensor::index_along(x, 0, i)?));
                    }
                    Ok(c)
                })
                .collect::<Result<Vec<Vec<Val>>, TensorError>>()
                .map_err(err)?;
            let results = run(step, step_args)?;
            carried = Vec::with_capacity(results.len());
            for (mut r, outs) in results.into_iter().zip(&mut outputs) {
                let ys = r.split_off(carries.min(r.len()));
                outs.resize(ys.len(), vec![]);
                for (k, y) in ys.into_iter().enumerate() {
                    outs[k].push(y);
                }
                carried.push(r);
            }
        }
        // Output i sits at position i whichever way the steps ran.
        for (c, outs) in carried.iter_mut().zip(outputs) {
            for mut ys in outs {
                if reverse {
                    ys.reverse();
                }
                let parts: Vec<&Tensor> = ys.iter().map(|y| &**y).collect();
                c.push(Rc::new(pjc_tensor::stack(&parts, 0).map_err(err)?));
            }
        }
        Ok(carried)
    }

    /// `what`, the scalar first value of every device's `per_device`, when
    /// all devices of the group have the same; otherwise they would diverge.
    fn agreed(&self, f: &Function, inst: &InstData, what: &'static str, per_device: &[Vec<Val>]) -> Result<Scalar, EvalError> {
        let values: Vec<Scalar> = per_device.iter().map(|v| v[0].data.get(0)).collect();
        let first = values[0];
        if values.iter().all(|v| *v == first) {
            return Ok(first);
        }
        let show = |s: &Scalar| match s {
            Scalar::Int(i) => i.to_string(),
            Scalar::Bool(b) => b.to_string(),
            Scalar::Float(x) => x.to_string(),
        };
        let list: Vec<String> = values.iter().enumerate().map(|(d, v)| format!("device {d}: {}", show(v))).collect();
        Err(EvalError::Divergent { func: f.name.clone(), op: inst.op.name().to_string(), what, values: list.join(", ") })
    }
}
