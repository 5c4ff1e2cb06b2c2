//! The reference interpreter: runs a verified module on host tensors.
//!
//! It is the oracle for every later stage, so it is written to be obviously
//! right rather than fast. A `func` runs in the global view (shardings are
//! ignored: they never change values). A `spmd func` runs by simulating every
//! device of the mesh in lockstep, one instruction at a time: ordinary ops run
//! per device, collectives combine the per-device values of each group exactly
//! as spec section 8 says. A `func` calling a `spmd func` (shard_map) splits the
//! global arguments by the callee's signature shardings and assembles the
//! results the same way. Control flow (`control.rs`) runs its bodies like
//! calls, in lockstep across the devices inside a `spmd func`.

mod control;
mod ops;
mod spmd;

pub use ops::{eval_inst, eval_inst_results};

use pjc_ir::{FuncId, FuncKind, Function, InstData, Mesh, Module, Opcode, Value};
use pjc_tensor::Tensor;
use std::collections::HashMap;
use std::rc::Rc;

/// A failure while running a verified program. Verified programs only fail on
/// unsupported features; anything else is a bug in pjc and says so.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("unsupported: {0}")]
    Unsupported(String),
    #[error("internal error in the interpreter at '{op}' in @{func}: {msg}")]
    Internal { func: String, op: String, msg: String },
    #[error("the {what} of '{op}' in @{func} differs across devices ({values}); it must be the same on every device (spec section 5)")]
    Divergent { func: String, op: String, what: &'static str, values: String },
    #[error("value %{value} of @{func} ({ty}) needs {needed} bytes in the interpreter, more than this machine's {available} bytes of available memory")]
    OutOfMemory { func: String, value: String, ty: String, needed: u128, available: u64 },
}

/// The bytes the reference kernels may hold for one value of type `t` at
/// once: the value itself plus a working copy in the wide type they compute
/// in (f64 for floats, i128 for integers).
pub fn working_bytes(t: &pjc_ir::TensorType) -> u128 {
    let n: u128 = t.shape.iter().fold(1u128, |a, &d| a.saturating_mul(d as u128));
    let wide = if t.dtype.is_float() { 8 } else if t.dtype.is_int() { 16 } else { 1 };
    n.saturating_mul(t.dtype.size_bytes() as u128 + wide)
}

/// Refuses, before anything is allocated, a module one of whose values the
/// interpreter cannot hold within `available` bytes (a `spmd func`'s values
/// once per simulated device). The check is per value: it stops the sizes a
/// program implies from reaching the allocator, which would abort the process.
pub fn check_memory(m: &Module, available: u64) -> Result<(), EvalError> {
    let devices = m.mesh_or_single().device_count() as u128;
    for f in m.funcs.values() {
        let copies = if f.kind == FuncKind::Spmd { devices } else { 1 };
        for v in f.values.values() {
            let needed = working_bytes(&v.ty).saturating_mul(copies);
            if needed > available as u128 {
                return Err(EvalError::OutOfMemory {
                    func: f.name.clone(),
                    value: v.name.clone(),
                    ty: v.ty.to_string(),
                    needed,
                    available,
                });
            }
        }
    }
    Ok(())
}

/// Runs the module's function `entry` on global inputs (one per parameter, in
/// order, already of the parameter's global type) and returns its results.
pub fn eval(m: &Module, entry: FuncId, inputs: Vec<Tensor>) -> Result<Vec<Tensor>, EvalError> {
    let it = Interp { m, mesh: m.mesh_or_single() };
    let results = it.call_global(entry, inputs.into_iter().map(Rc::new).collect())?;
    Ok(results.into_iter().map(|r| Rc::try_unwrap(r).unwrap_or_else(|r| (*r).clone())).collect())
}

/// A value while the interpreter runs: shared, so that passing it to a call
/// or around a loop copies no elements.
pub(crate) type Val = Rc<Tensor>;

pub(crate) struct Interp<'m> {
    pub m: &'m Module,
    pub mesh: Mesh,
}

/// Where a function body runs: the global view, or on one device of the mesh.
#[derive(Copy, Clone)]
pub(crate) enum Place {
    Global,
    Device,
}

impl<'m> Interp<'m> {
    /// Calls a function from the global view (the entry, or a `call` in a `func`).
    pub fn call_global(&self, id: FuncId, args: Vec<Val>) -> Result<Vec<Val>, EvalError> {
        let f = &self.m.funcs[id];
        match f.kind {
            FuncKind::Global => self.run_local(f, args, Place::Global),
            FuncKind::Spmd => self.shard_map(f, args),
        }
    }

    /// Calls function `id` from a `func` running in `place`.
    fn call_at(&self, id: FuncId, args: Vec<Val>, place: Place) -> Result<Vec<Val>, EvalError> {
        match (place, self.m.funcs[id].kind) {
            (Place::Global, _) => self.call_global(id, args),
            (Place::Device, FuncKind::Global) => self.run_local(&self.m.funcs[id], args, place),
            (Place::Device, FuncKind::Spmd) => Err(self.internal(&self.m.funcs[id], Opcode::Call, "spmd call outside lockstep".into())),
        }
    }

    /// Runs a `func` body in one place (the global view, or one device when a
    /// `spmd func` calls a `func`).
    pub fn run_local(&self, f: &Function, args: Vec<Val>, place: Place) -> Result<Vec<Val>, EvalError> {
        let mut env: HashMap<Value, Val> = f.params.iter().copied().zip(args).collect();
        for &i in &f.body {
            let inst = &f.insts[i];
            let operands: Vec<Val> = inst.operands.iter().map(|v| env[v].clone()).collect();
            let results = self.local_inst(f, inst, operands, place)?;
            env.extend(inst.results.iter().copied().zip(results));
        }
        Ok(f.ret.iter().map(|v| env[v].clone()).collect())
    }

    /// One instruction of a `func` running in `place` (a `spmd func`'s
    /// instructions that need no other device run here too, per device).
    pub(crate) fn local_inst(&self, f: &Function, inst: &InstData, operands: Vec<Val>, place: Place) -> Result<Vec<Val>, EvalError> {
        match inst.op {
            Opcode::Call => self.call_at(self.callee(inst.callee())?, operands, place),
            Opcode::Vmap => self.vmap_at(f, inst, &operands, place),
            Opcode::Grad => Err(EvalError::Unsupported(format!(
                "'grad' in @{} is expanded by the compiler's autodiff transform, which pjc eval does not run yet",
                f.name
            ))),
            _ if inst.op.is_control() => {
                let run = |g: FuncId, mut args: Vec<Vec<Val>>| -> Result<Vec<Vec<Val>>, EvalError> {
                    let one = args.pop().expect("one place");
                    Ok(vec![self.call_at(g, one, place)?])
                };
                Ok(self.control(f, inst, vec![operands], &run)?.pop().expect("one place"))
            }
            _ if inst.op.def().context == pjc_dialects::Context::SpmdOnly => {
                Err(self.internal(f, inst.op, "collective outside a spmd func".into()))
            }
            _ => {
                let refs: Vec<&Tensor> = operands.iter().map(|t| &**t).collect();
                Ok(self.eval_op(f, inst, &refs)?.into_iter().map(Rc::new).collect())
            }
        }
    }

    /// An instruction [`eval_inst_results`] evaluates, its errors located in `f`.
    fn eval_op(&self, f: &Function, inst: &InstData, operands: &[&Tensor]) -> Result<Vec<Tensor>, EvalError> {
        let types: Vec<&pjc_ir::TensorType> = inst.results.iter().map(|r| &f.values[*r].ty).collect();
        ops::eval_inst_results(inst, operands, &types).map_err(|e| self.internal(f, inst.op, e.to_string()))
    }

    pub fn callee(&self, name: Option<&str>) -> Result<FuncId, EvalError> {
        name.and_then(|n| self.m.func_by_name(n)).ok_or_else(|| EvalError::Internal {
            func: String::new(),
            op: "call".into(),
            msg: format!("unknown function {name:?}"),
        })
    }

    pub fn internal(&self, f: &Function, op: Opcode, msg: String) -> EvalError {
        EvalError::Internal { func: f.name.clone(), op: op.name().to_string(), msg }
    }

    /// `vmap`: a loop of calls over the mapped dimension, results stacked along
    /// `out_dims` (an output that ignores the mapped inputs is broadcast by the
    /// stacking itself).
    fn vmap_at(&self, f: &Function, inst: &InstData, operands: &[Val], place: Place) -> Result<Vec<Val>, EvalError> {
        let err = |e: pjc_tensor::TensorError| self.internal(f, inst.op, e.to_string());
        let g = self.callee(inst.callee())?;
        let in_dims: Vec<Option<usize>> = inst
            .attr("in_dims")
            .and_then(|a| a.as_list())
            .unwrap_or(&[])
            .iter()
            .map(|v| v.as_int().map(|i| i as usize))
            .collect();
        let out_dims: Vec<usize> =
            inst.attr("out_dims").and_then(|a| a.as_ints()).unwrap_or_default().iter().map(|&i| i as usize).collect();
        let batch = operands
            .iter()
            .zip(&in_dims)
            .find_map(|(t, d)| d.map(|d| t.shape[d]))
            .ok_or_else(|| self.internal(f, inst.op, "no mapped operand".into()))?;
        let mut per_step: Vec<Vec<Val>> = vec![];
        for b in 0..batch {
            let args = operands
                .iter()
                .zip(&in_dims)
                .map(|(t, d)| match d {
                    None => Ok(t.clone()),
                    Some(d) => pjc_tensor::index_along(t, *d, b).map(Rc::new),
                })
                .collect::<Result<_, _>>()
                .map_err(err)?;
            per_step.push(match place {
                Place::Global => self.call_global(g, args)?,
                // Inside a spmd func, per device: the mapped function (a spmd
                // func too) may not use collectives here.
                Place::Device => self.run_local(&self.m.funcs[g], args, place)?,
            });
        }
        out_dims
            .iter()
            .enumerate()
            .map(|(k, &od)| {
                let parts: Vec<&Tensor> = per_step.iter().map(|outs| &*outs[k]).collect();
                pjc_tensor::stack(&parts, od).map(Rc::new).map_err(err)
            })
            .collect()
    }
}
