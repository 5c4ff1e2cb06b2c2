//! Control-flow steps (spec section 7.1): `while`, `scan` and `switch` as
//! steps of a plan, and their one meaning, [`run_control`], which every
//! executor (the reference executor, the host step loop of the JIT and the
//! CPU runtime, the CUDA backend) runs through the few primitives of
//! [`Machine`].
//!
//! A control step runs *blocks* — the steps of one body function, planned
//! once — on the plan's one buffer table: nothing is allocated while it runs.
//!
//! - `while`: the initial values are copied into the *state* buffers (the
//!   condition's and the body's parameters); then, until the condition's
//!   predicate (read on the host) is false, the body runs and each of its
//!   results that is not already its state buffer is *swapped* with it —
//!   the buffers exchange what they hold (ping-pong), no data moves.
//! - `scan`: the same for the carries, over a static trip count (no value is
//!   read back per iteration); before each iteration the *window* buffers of
//!   the scanned operands and stacked outputs (`BufferKind::Window`) are
//!   pointed at slice `i` of their whole buffers (`length - 1 - i` in
//!   reverse), so the step reads its slices and writes its outputs in place.
//! - `switch`: the index (read on the host, clamped in its own dtype) picks
//!   one branch; every branch reads the operand buffers and writes the output
//!   buffers.
//!
//! The planner (`pjc-fusion`) guarantees what makes swapping a valid parallel
//! assignment: a carried result is its state buffer itself, or a temporary the
//! block writes that no other result or state is; window buffers are never
//! swapped.
//!
//! Steps are numbered in pre-order over the whole plan (a control step, then
//! the steps of its blocks in order, see [`Control::blocks`]): backends keep
//! per-step data (compiled kernels, launch parameters) in that order.

use crate::plan::{Buffer, BufferKind, Step};
use pjc_ir::DType;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The steps of one body function as a control step runs them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Block {
    /// The function it runs, for `--emit plan`.
    pub name: String,
    pub steps: Vec<Step>,
    /// The buffers its function's parameters are in.
    pub params: Vec<usize>,
    /// The buffers its function's results are in when its steps have run.
    pub results: Vec<usize>,
}

/// A control-flow step (see the module doc for what each does).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Control {
    /// `cond.params == body.params == state`; `cond.results == [predicate]`;
    /// `body.results[k]` is `state[k]` or a temporary swapped into it.
    While { init: Vec<usize>, state: Vec<usize>, cond: Block, body: Block },
    /// `step.params == state ++ scanned`, `step.results == carries ++ stacked`:
    /// the carries as in `while`; `scanned` and `stacked` are window buffers.
    Scan { length: u64, reverse: bool, init: Vec<usize>, state: Vec<usize>, scanned: Vec<usize>, stacked: Vec<usize>, step: Block },
    /// `branches[i].params == operands`, `branches[i].results == outputs`.
    Switch { index: usize, operands: Vec<usize>, outputs: Vec<usize>, branches: Vec<Block> },
}

impl Control {
    /// The blocks, in step-numbering order.
    pub fn blocks(&self) -> Vec<&Block> {
        match self {
            Control::While { cond, body, .. } => vec![cond, body],
            Control::Scan { step, .. } => vec![step],
            Control::Switch { branches, .. } => branches.iter().collect(),
        }
    }

    pub fn blocks_mut(&mut self) -> Vec<&mut Block> {
        match self {
            Control::While { cond, body, .. } => vec![cond, body],
            Control::Scan { step, .. } => vec![step],
            Control::Switch { branches, .. } => branches.iter_mut().collect(),
        }
    }

    /// The buffers the step itself names (not those of its blocks' steps).
    pub fn own_buffers_mut(&mut self) -> Vec<&mut usize> {
        let mut out: Vec<&mut usize> = vec![];
        match self {
            Control::While { init, state, cond, body } => {
                out.extend(init.iter_mut());
                out.extend(state.iter_mut());
                for b in [cond, body] {
                    out.extend(b.params.iter_mut());
                    out.extend(b.results.iter_mut());
                }
            }
            Control::Scan { init, state, scanned, stacked, step, .. } => {
                out.extend(init.iter_mut());
                out.extend(state.iter_mut());
                out.extend(scanned.iter_mut());
                out.extend(stacked.iter_mut());
                out.extend(step.params.iter_mut());
                out.extend(step.results.iter_mut());
            }
            Control::Switch { index, operands, outputs, branches } => {
                out.push(index);
                out.extend(operands.iter_mut());
                out.extend(outputs.iter_mut());
                for b in branches {
                    out.extend(b.params.iter_mut());
                    out.extend(b.results.iter_mut());
                }
            }
        }
        out
    }

    /// The op's results, as the plan around it sees them: the state (and, for
    /// `scan`, the whole buffers of the stacked outputs), or the outputs.
    pub fn outputs(&self, buffers: &[Buffer]) -> Vec<usize> {
        match self {
            Control::While { state, .. } => state.clone(),
            Control::Scan { state, stacked, .. } => state.iter().copied().chain(stacked.iter().map(|&w| whole_of(buffers, w))).collect(),
            Control::Switch { outputs, .. } => outputs.clone(),
        }
    }
}

/// The buffer a window buffer is a slice of (itself for any other buffer).
pub fn whole_of(buffers: &[Buffer], w: usize) -> usize {
    match buffers[w].kind {
        BufferKind::Window { whole } => whole,
        _ => w,
    }
}

/// How many steps `s` counts in the pre-order numbering: itself and, for a
/// control step, every step of its blocks.
pub fn step_count(s: &Step) -> usize {
    match s {
        Step::Control(c) => 1 + c.blocks().iter().map(|b| steps_count(&b.steps)).sum::<usize>(),
        _ => 1,
    }
}

/// [`step_count`] summed over `steps`.
pub fn steps_count(steps: &[Step]) -> usize {
    steps.iter().map(step_count).sum()
}

/// Every step of `steps` and of the blocks of its control steps, in pre-order
/// (the numbering backends index their per-step data by).
pub fn preorder(steps: &[Step]) -> Vec<&Step> {
    let mut out = vec![];
    // An explicit stack: nesting depth is the program's, not the machine stack's.
    let mut stack: Vec<std::slice::Iter<'_, Step>> = vec![steps.iter()];
    while let Some(top) = stack.last_mut() {
        let Some(s) = top.next() else {
            stack.pop();
            continue;
        };
        out.push(s);
        if let Step::Control(c) = s {
            for b in c.blocks().into_iter().rev() {
                stack.push(b.steps.iter());
            }
        }
    }
    out
}

/// Applies `f` to every buffer number `steps` name, nested blocks included.
pub fn remap_buffers(steps: &mut [Step], f: &mut dyn FnMut(&mut usize)) {
    for s in steps {
        match s {
            Step::Kernel(k) => k.inputs.iter_mut().chain(k.outputs.iter_mut()).for_each(|b| f(&mut b.buffer)),
            Step::Library { inputs, outputs, device, .. } => {
                inputs.iter_mut().chain(outputs.iter_mut()).for_each(&mut *f);
                for k in device {
                    k.inputs.iter_mut().chain(k.outputs.iter_mut()).for_each(|b| f(&mut b.buffer));
                }
            }
            Step::Collective { input, output, .. } => {
                f(input);
                f(output);
            }
            Step::Control(c) => {
                c.own_buffers_mut().into_iter().for_each(&mut *f);
                for b in c.blocks_mut() {
                    remap_buffers(&mut b.steps, f);
                }
            }
        }
    }
}

/// Every buffer step `s` names, its blocks' steps included (with repeats).
pub fn step_buffers(s: &Step) -> Vec<usize> {
    let mut out = vec![];
    remap_buffers(&mut [s.clone()], &mut |b| out.push(*b));
    out
}

/// What an executor provides to run control steps (see [`run_control`]).
pub trait Machine {
    type Error;
    /// Runs the steps of `block`; the first has pre-order number `first`.
    fn run_block(&mut self, block: &Block, first: usize) -> Result<(), Self::Error>;
    /// Copies buffer `src` into buffer `dst` (of one type).
    fn copy(&mut self, dst: usize, src: usize) -> Result<(), Self::Error>;
    /// Exchanges what buffers `a` and `b` (of one type) hold, moving no data.
    fn swap(&mut self, a: usize, b: usize) -> Result<(), Self::Error>;
    /// The little-endian bytes of scalar buffer `b`, read on the host (a
    /// predicate or an index: on a GPU, a wait for the steps before).
    fn read_scalar(&mut self, b: usize) -> Result<Vec<u8>, Self::Error>;
    /// Before an iteration: window buffer `w` becomes slice `pos` along dim 0
    /// of buffer `whole`; `read` when the step reads it (a scanned operand's
    /// slice) rather than writes it (a stacked output's).
    fn enter_window(&mut self, w: usize, whole: usize, pos: u64, read: bool) -> Result<(), Self::Error>;
    /// After an iteration: what the step wrote in window `w` belongs in slice
    /// `pos` of `whole` (nothing to do where windows are views of `whole`).
    fn leave_window(&mut self, w: usize, whole: usize, pos: u64, written: bool) -> Result<(), Self::Error>;
}

/// A scalar's little-endian bytes as an integer of dtype `d` (`pred` as 0/1).
pub fn scalar_value(bytes: &[u8], d: DType) -> Option<i128> {
    let n = d.size_bytes();
    if bytes.len() != n {
        return None;
    }
    let mut raw = [0u8; 16];
    raw[..n].copy_from_slice(bytes);
    let u = u128::from_le_bytes(raw);
    Some(match d {
        DType::Pred => (u != 0) as i128,
        d if d.is_signed_int() => {
            let shift = 128 - 8 * n as u32;
            ((u << shift) as i128) >> shift
        }
        _ => u as i128,
    })
}

/// Runs control step `c`, numbered `number`, on machine `m` (see the module
/// doc). `buffers` is the plan's buffer table. A malformed step (which a plan
/// `pjc-fusion` built never is) is an error made by `bad`.
pub fn run_control<M: Machine>(buffers: &[Buffer], c: &Control, number: usize, m: &mut M, bad: impl Fn(String) -> M::Error) -> Result<(), M::Error> {
    let mut first = number + 1;
    let mut starts = vec![];
    for b in c.blocks() {
        starts.push(first);
        first += steps_count(&b.steps);
    }
    let scalar = |m: &mut M, b: usize| -> Result<i128, M::Error> {
        let bytes = m.read_scalar(b)?;
        scalar_value(&bytes, buffers[b].ty.dtype).ok_or_else(|| bad(format!("buffer b{b} is not a scalar of {}", buffers[b].ty)))
    };
    let enter = |m: &mut M, init: &[usize], state: &[usize]| -> Result<(), M::Error> {
        for (&i, &s) in init.iter().zip(state) {
            if i != s {
                m.copy(s, i)?;
            }
        }
        Ok(())
    };
    let carry = |m: &mut M, state: &[usize], results: &[usize]| -> Result<(), M::Error> {
        for (&s, &r) in state.iter().zip(results) {
            if s != r {
                m.swap(s, r)?;
            }
        }
        Ok(())
    };
    match c {
        Control::While { init, state, cond, body } => {
            enter(m, init, state)?;
            let &[pred] = cond.results.as_slice() else { return Err(bad(format!("the condition @{} has no predicate", cond.name))) };
            loop {
                m.run_block(cond, starts[0])?;
                if scalar(m, pred)? == 0 {
                    break;
                }
                m.run_block(body, starts[1])?;
                carry(m, state, &body.results)?;
            }
        }
        Control::Scan { length, reverse, init, state, scanned, stacked, step } => {
            enter(m, init, state)?;
            for i in 0..*length {
                let pos = if *reverse { length - 1 - i } else { i };
                for &w in scanned {
                    m.enter_window(w, whole_of(buffers, w), pos, true)?;
                }
                for &w in stacked {
                    m.enter_window(w, whole_of(buffers, w), pos, false)?;
                }
                m.run_block(step, starts[0])?;
                for &w in stacked {
                    m.leave_window(w, whole_of(buffers, w), pos, true)?;
                }
                for &w in scanned {
                    m.leave_window(w, whole_of(buffers, w), pos, false)?;
                }
                carry(m, state, &step.results[..state.len()])?;
            }
        }
        Control::Switch { index, branches, .. } => {
            if branches.is_empty() {
                return Err(bad("a switch without branches".into()));
            }
            let i = scalar(m, *index)?.clamp(0, branches.len() as i128 - 1) as usize;
            m.run_block(&branches[i], starts[i])?;
        }
    }
    Ok(())
}

/// One line per control step and its blocks, as `--emit plan` prints them;
/// `write_steps` prints the blocks' steps (at `pad` plus four spaces).
pub fn write_control(
    f: &mut fmt::Formatter<'_>,
    c: &Control,
    pad: &str,
    write_steps: &dyn Fn(&mut fmt::Formatter<'_>, &[Step], &str) -> fmt::Result,
) -> fmt::Result {
    let list = |bs: &[usize]| bs.iter().map(|b| format!("b{b}")).collect::<Vec<_>>().join(", ");
    let inner = format!("{pad}    ");
    let block = |f: &mut fmt::Formatter<'_>, what: &str, b: &Block| -> fmt::Result {
        writeln!(f, "{pad}  {what} @{} ({}) -> ({})", b.name, list(&b.params), list(&b.results))?;
        write_steps(f, &b.steps, &inner)
    };
    match c {
        Control::While { init, state, cond, body } => {
            writeln!(f, "{pad}while ({}) -> ({})", list(init), list(state))?;
            block(f, "cond", cond)?;
            block(f, "body", body)
        }
        Control::Scan { length, reverse, init, state, scanned, stacked, step } => {
            let rev = if *reverse { ", reverse" } else { "" };
            writeln!(f, "{pad}scan {{length={length}{rev}}} ({}) -> ({}) windows ({}) ({})", list(init), list(state), list(scanned), list(stacked))?;
            block(f, "step", step)
        }
        Control::Switch { index, operands, outputs, branches } => {
            writeln!(f, "{pad}switch b{index} ({}) -> ({})", list(operands), list(outputs))?;
            for (i, b) in branches.iter().enumerate() {
                block(f, &format!("branch {i}"), b)?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pjc_ir::TensorType;

    fn buf(name: &str, ty: TensorType, kind: BufferKind) -> Buffer {
        Buffer { name: name.into(), ty, kind }
    }

    /// A machine over integer cells that logs what it is asked.
    struct Log {
        cells: Vec<i64>,
        log: Vec<String>,
    }

    impl Machine for Log {
        type Error = String;
        fn run_block(&mut self, b: &Block, first: usize) -> Result<(), String> {
            self.log.push(format!("run @{} at {first}", b.name));
            // The body adds one to its state into its result; the condition
            // writes state < 3.
            match b.name.as_str() {
                "cond" => self.cells[b.results[0]] = (self.cells[b.params[0]] < 3) as i64,
                "body" => self.cells[b.results[0]] = self.cells[b.params[0]] + 1,
                _ => {}
            }
            Ok(())
        }
        fn copy(&mut self, dst: usize, src: usize) -> Result<(), String> {
            self.log.push(format!("copy b{src} -> b{dst}"));
            self.cells[dst] = self.cells[src];
            Ok(())
        }
        fn swap(&mut self, a: usize, b: usize) -> Result<(), String> {
            self.log.push(format!("swap b{a} b{b}"));
            self.cells.swap(a, b);
            Ok(())
        }
        fn read_scalar(&mut self, b: usize) -> Result<Vec<u8>, String> {
            Ok((self.cells[b] as i32).to_le_bytes().to_vec())
        }
        fn enter_window(&mut self, w: usize, whole: usize, pos: u64, read: bool) -> Result<(), String> {
            self.log.push(format!("enter b{w} = b{whole}[{pos}]{}", if read { " read" } else { "" }));
            Ok(())
        }
        fn leave_window(&mut self, w: usize, whole: usize, pos: u64, written: bool) -> Result<(), String> {
            if written {
                self.log.push(format!("leave b{w} -> b{whole}[{pos}]"));
            }
            Ok(())
        }
    }

    fn block(name: &str, params: Vec<usize>, results: Vec<usize>, steps: Vec<Step>) -> Block {
        Block { name: name.into(), steps, params, results }
    }

    #[test]
    fn while_copies_in_once_and_swaps_each_iteration() {
        let i32s = TensorType::scalar(DType::I32);
        let buffers = vec![
            buf("init", i32s.clone(), BufferKind::Temp),
            buf("state", i32s.clone(), BufferKind::Temp),
            buf("p", i32s.clone(), BufferKind::Temp),
            buf("next", i32s, BufferKind::Temp),
        ];
        let c = Control::While {
            init: vec![0],
            state: vec![1],
            cond: block("cond", vec![1], vec![2], vec![]),
            body: block("body", vec![1], vec![3], vec![]),
        };
        let mut m = Log { cells: vec![0, 0, 0, 0], log: vec![] };
        run_control(&buffers, &c, 5, &mut m, |e| e).unwrap();
        assert_eq!(m.cells[1], 3, "three iterations: 0 -> 3");
        assert_eq!(m.log.iter().filter(|l| l.starts_with("copy")).count(), 1, "{:?}", m.log);
        assert_eq!(m.log.iter().filter(|l| l.starts_with("swap")).count(), 3);
        // The condition runs once more than the body; steps are numbered after the control step.
        assert_eq!(m.log.iter().filter(|l| *l == "run @cond at 6").count(), 4);
        assert_eq!(m.log.iter().filter(|l| *l == "run @body at 6").count(), 3, "an empty cond block has no steps");
    }

    #[test]
    fn scan_visits_windows_in_order_and_switch_clamps_in_the_index_dtype() {
        let t = TensorType::new(DType::F32, vec![4]);
        let buffers = vec![
            buf("xs", TensorType::new(DType::F32, vec![3, 4]), BufferKind::Temp),
            buf("x", t.clone(), BufferKind::Window { whole: 0 }),
            buf("ys", TensorType::new(DType::F32, vec![3, 4]), BufferKind::Temp),
            buf("y", t, BufferKind::Window { whole: 2 }),
            buf("i", TensorType::scalar(DType::U32), BufferKind::Temp),
        ];
        let c = Control::Scan { length: 3, reverse: true, init: vec![], state: vec![], scanned: vec![1], stacked: vec![3], step: block("step", vec![1], vec![3], vec![]) };
        let mut m = Log { cells: vec![0; 5], log: vec![] };
        run_control(&buffers, &c, 0, &mut m, |e| e).unwrap();
        let want: Vec<String> = (0..3)
            .rev()
            .flat_map(|p| [format!("enter b1 = b0[{p}] read"), format!("enter b3 = b2[{p}]"), "run @step at 1".to_string(), format!("leave b3 -> b2[{p}]")])
            .collect();
        assert_eq!(m.log, want);
        // u32 4000000000 is large, not negative: the last branch.
        let sw = Control::Switch { index: 4, operands: vec![], outputs: vec![], branches: vec![block("b0", vec![], vec![], vec![]), block("b1", vec![], vec![], vec![])] };
        let mut m = Log { cells: vec![0, 0, 0, 0, 4_000_000_000], log: vec![] };
        run_control(&buffers, &sw, 7, &mut m, |e| e).unwrap();
        assert_eq!(m.log, vec!["run @b1 at 8"]);
        assert_eq!(scalar_value(&(-5i16).to_le_bytes(), DType::I16), Some(-5));
        assert_eq!(scalar_value(&[1], DType::Pred), Some(1));
        assert_eq!(scalar_value(&[1, 2], DType::I32), None);
    }
}
