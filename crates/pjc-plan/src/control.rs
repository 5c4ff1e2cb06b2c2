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
//!
//! The steps' types and their structural walks ([`preorder`],
//! [`remap_buffers`]) are in `crate::plan` with [`Step`](crate::plan::Step),
//! which they recurse through; this module is their meaning.

use crate::plan::Buffer;
use pjc_ir::DType;

// The steps' structure lives with `Step` (a control step holds blocks of
// steps); re-exported here where the executors have always found it.
pub use crate::plan::{preorder, remap_buffers, step_buffers, step_count, steps_count, whole_of, write_control, Block, Control};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{BufferKind, Step};
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
