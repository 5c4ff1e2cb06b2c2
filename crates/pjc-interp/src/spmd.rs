//! Simulation of a `spmd func` on every device of the mesh, in lockstep, with
//! the collectives of spec section 8 computed from the group members' values.

use crate::{Interp, Place, Val};
use pjc_ir::{Attrs, CollectiveKind, FuncId, FuncKind, Function, InstData, Mesh, Opcode, Sharding, Value};
use pjc_tensor::{Tensor, TensorError};
use std::collections::HashMap;
use std::rc::Rc;

/// The block of a global array that `device` holds under sharding `s`:
/// per dimension, (start, size).
pub(crate) fn shard_block(mesh: &Mesh, s: Option<&Sharding>, global: &[usize], device: u64) -> Vec<(usize, usize)> {
    let coords = mesh.coords(device);
    (0..global.len())
        .map(|d| {
            let axes: &[String] = s.map_or(&[], |s| s.dim_axes(d));
            let mut index = 0u64;
            let mut n = 1u64;
            for a in axes {
                let ai = mesh.axis(a).expect("verified axis");
                index = index * mesh.axes[ai].size + coords[ai];
                n *= mesh.axes[ai].size;
            }
            let size = global[d] / n as usize;
            (index as usize * size, size)
        })
        .collect()
}

fn cut(t: &Tensor, dim: usize, index: usize, n: usize) -> Result<Tensor, TensorError> {
    let size = t.shape[dim] / n;
    let mut start = vec![0; t.rank()];
    let mut limit = t.shape.clone();
    start[dim] = index * size;
    limit[dim] = (index + 1) * size;
    pjc_tensor::slice(t, &start, &limit, &vec![1; t.rank()])
}

impl<'m> Interp<'m> {
    /// A `func` calling a `spmd func` (or a `spmd func` entry): split, run, assemble.
    pub(crate) fn shard_map(&self, f: &Function, args: Vec<Val>) -> Result<Vec<Val>, crate::EvalError> {
        let n = self.mesh.device_count();
        let e = |e: TensorError| self.internal(f, Opcode::Call, e.to_string());
        let mut per_dev: Vec<Vec<Val>> = vec![Vec::with_capacity(args.len()); n as usize];
        for (k, a) in args.iter().enumerate() {
            let s = f.values[f.params[k]].sharding.as_ref();
            for dev in 0..n {
                let block = shard_block(&self.mesh, s, &a.shape, dev);
                let start: Vec<usize> = block.iter().map(|b| b.0).collect();
                let limit: Vec<usize> = block.iter().map(|b| b.0 + b.1).collect();
                per_dev[dev as usize].push(Rc::new(pjc_tensor::slice(a, &start, &limit, &vec![1; a.rank()]).map_err(e)?));
            }
        }
        let outs = self.run_spmd(f, per_dev)?;
        let mut results = vec![];
        for (k, r) in f.results.iter().enumerate() {
            let local = &outs[0][k];
            let global: Vec<usize> = pjc_ir::infer::global_type(&r.ty, r.sharding.as_ref(), &self.mesh)
                .shape
                .iter()
                .map(|&d| d as usize)
                .collect();
            let mut out = Tensor::new(global.clone(), pjc_tensor::Buf::splat(local.dtype(), pjc_tensor::Scalar::Int(0), global.iter().product()));
            for dev in 0..n {
                let block = shard_block(&self.mesh, r.sharding.as_ref(), &global, dev);
                let starts: Vec<i128> = block.iter().map(|b| b.0 as i128).collect();
                out = pjc_tensor::dynamic_update_slice(&out, &outs[dev as usize][k], &starts).map_err(e)?;
            }
            results.push(Rc::new(out));
        }
        Ok(results)
    }

    /// Runs `f` on every device; `args[d]` are device d's local arguments.
    pub(crate) fn run_spmd(&self, f: &Function, args: Vec<Vec<Val>>) -> Result<Vec<Vec<Val>>, crate::EvalError> {
        let n = args.len();
        let mut env: Vec<HashMap<Value, Val>> =
            args.into_iter().map(|a| f.params.iter().copied().zip(a).collect()).collect();
        for &i in &f.body {
            let inst = &f.insts[i];
            let e = |e: TensorError| self.internal(f, inst.op, e.to_string());
            let operands = |env: &HashMap<Value, Val>| -> Vec<Val> { inst.operands.iter().map(|v| env[v].clone()).collect() };
            let results: Vec<Vec<Val>> = if inst.op.is_collective() {
                (0..n as u64)
                    .map(|dev| self.collective(inst, &env, dev).map(|t| vec![Rc::new(t)]))
                    .collect::<Result<_, _>>()
                    .map_err(e)?
            } else if inst.op == Opcode::AxisIndex {
                let axis = inst.attr("axis").and_then(|a| a.as_ident()).unwrap_or_default();
                let ai = self.mesh.axis(axis).expect("verified axis");
                (0..n as u64)
                    .map(|dev| {
                        let c = self.mesh.coords(dev)[ai] as i128;
                        vec![Rc::new(Tensor::from_scalars(pjc_ir::DType::I32, vec![], &[pjc_tensor::Scalar::Int(c)]))]
                    })
                    .collect()
            } else if inst.op == Opcode::Call {
                self.lockstep_call(self.callee(inst.callee())?, env.iter().map(operands).collect())?
            } else if inst.op.is_control() {
                let run = |g, args| self.lockstep_call(g, args);
                self.control(f, inst, env.iter().map(operands).collect(), &run)?
            } else {
                // Work that needs no other device: per device, as in a `func`.
                env.iter().map(|env| self.local_inst(f, inst, operands(env), Place::Device)).collect::<Result<_, _>>()?
            };
            for (dev, rs) in results.into_iter().enumerate() {
                env[dev].extend(inst.results.iter().copied().zip(rs));
            }
        }
        Ok(env.iter().map(|env| f.ret.iter().map(|v| env[v].clone()).collect()).collect())
    }

    /// Calls `g` from a `spmd func` on every device (`args[d]` per device): a
    /// `spmd func` in lockstep, a `func` on each device alone.
    fn lockstep_call(&self, g: FuncId, args: Vec<Vec<Val>>) -> Result<Vec<Vec<Val>>, crate::EvalError> {
        let callee = &self.m.funcs[g];
        match callee.kind {
            FuncKind::Spmd => self.run_spmd(callee, args),
            FuncKind::Global => args.into_iter().map(|a| self.run_local(callee, a, Place::Device)).collect(),
        }
    }

    /// The value of a collective on `device`.
    fn collective(&self, inst: &InstData, env: &[HashMap<Value, Val>], device: u64) -> Result<Tensor, TensorError> {
        let a = Attrs::with_ranks(inst, &[env[device as usize][&inst.operands[0]].rank()]);
        let (members, pos) = self.mesh.group(&a.idents("axes")?, device).map_err(TensorError::Invalid)?;
        let v = inst.operands[0];
        let parts: Vec<&Tensor> = members.iter().map(|&d| &*env[d as usize][&v]).collect();
        let n = members.len();
        let kind = inst.op.collective().ok_or_else(|| TensorError::Invalid(format!("'{}' is not a collective", inst.op)))?;
        match kind {
            CollectiveKind::AllReduce => pjc_tensor::combine(a.reduce_kind()?, &parts),
            CollectiveKind::AllGather => pjc_tensor::concat(&parts, a.index("dim")?),
            CollectiveKind::ReduceScatter => cut(&pjc_tensor::combine(a.reduce_kind()?, &parts)?, a.index("dim")?, pos, n),
            CollectiveKind::AllToAll => {
                let (sd, cd) = (a.index("split_dim")?, a.index("concat_dim")?);
                let chunks: Vec<Tensor> = parts.iter().map(|t| cut(t, sd, pos, n)).collect::<Result<_, _>>()?;
                pjc_tensor::concat(&chunks.iter().collect::<Vec<_>>(), cd)
            }
            CollectiveKind::CollectivePermute => {
                // Position k sends to k + shift, so we receive from pos - shift.
                let shift = a.int("shift")?.rem_euclid(n as i64) as usize;
                Ok(parts[(pos + n - shift) % n].clone())
            }
        }
    }
}
