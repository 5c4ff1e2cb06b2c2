//! A check of a buffer plan against the plan it was made for: the plan is
//! run abstractly, byte ranges instead of values, on the arena placement
//! the runtime uses (`pjc_host::Buffers::alloc_planned`: every buffer at its
//! planned offset, a loop's carried buffers swapping places while it runs and
//! going back to their planned places when it ends), and every read checks
//! that the bytes it reads were last written as that buffer. A buffer whose
//! bytes another buffer overwrote while it was still to be read is the error
//! the check names, with both buffers and both steps.
//!
//! Control flow runs through [`pjc_plan::control::run_control`], the one
//! meaning every executor shares: a `while` runs its body twice per entry,
//! a `switch` takes its branches in turn, and the plan runs several times
//! with the carried results copied back into their parameters between runs
//! (loop mode), so that memory reused across iterations, branches and steps
//! is exercised. Library steps run in the host form (operands to results)
//! or, with `device_forms`, as their device kernels (the CUDA backend's).

use pjc_plan::control::{run_control, Block, Machine};
use pjc_plan::{BufferKind, Memory, Plan, Step};
use std::collections::BTreeMap;

/// Checks that plan `p`, run with buffer plan `mem` (and `carried`
/// (parameter, result) pairs copied between runs), never reads bytes that
/// another buffer overwrote after the read buffer was written.
pub fn check_memory(p: &Plan, mem: &Memory, carried: &[(usize, usize)], device_forms: bool) -> Result<(), String> {
    if mem.offsets.len() != p.buffers.len() {
        return Err(format!("a buffer plan of {} buffers for a plan of {}", mem.offsets.len(), p.buffers.len()));
    }
    let planned: Vec<(u64, u64)> = p
        .buffers
        .iter()
        .zip(&mem.offsets)
        .map(|(b, &o)| (o, if matches!(b.kind, BufferKind::Window { .. }) { 0 } else { b.bytes() }))
        .collect();
    let mut a = Abstract { p, device_forms, place: planned.clone(), planned, views: vec![None; p.buffers.len()], owners: BTreeMap::new(), counters: vec![0; p.buffers.len()], step: "before the first run".into() };
    for (i, b) in p.buffers.iter().enumerate() {
        if matches!(b.kind, BufferKind::Param(_) | BufferKind::Constant(_) | BufferKind::AxisIndices(_)) {
            a.write(i);
        }
    }
    let max_branches = pjc_plan::control::preorder(&p.steps)
        .into_iter()
        .filter_map(|s| match s {
            Step::Control(pjc_plan::Control::Switch { branches, .. }) => Some(branches.len()),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let runs = max_branches.max(3);
    for run in 0..runs {
        a.step = format!("the start of run {}", run + 1);
        a.steps(&p.steps, 0, run)?;
        a.step = format!("the end of run {}", run + 1);
        for &r in &p.results {
            a.read(r)?;
        }
        // Loop mode: the carried results become the next run's parameters,
        // every other parameter gets the next batch.
        for &(_, ri) in carried {
            a.read(p.results[ri])?;
        }
        for &pb in &p.params {
            a.write(pb);
        }
    }
    Ok(())
}

struct Abstract<'p> {
    p: &'p Plan,
    device_forms: bool,
    /// Each buffer's (offset, length) now; `planned` is where the plan put it.
    place: Vec<(u64, u64)>,
    planned: Vec<(u64, u64)>,
    /// Windows: (byte offset in the whole, length) while a scan points them.
    views: Vec<Option<(u64, u64)>>,
    /// Disjoint byte ranges by start: (end, buffer that last wrote them, the
    /// step that wrote them).
    owners: BTreeMap<u64, (u64, usize, String)>,
    /// Per scalar buffer read on the host: how often it was read (a while's
    /// predicate is true twice then false; a switch's index counts up).
    counters: Vec<u64>,
    /// The step running now, for messages.
    step: String,
}

impl Abstract<'_> {
    fn name(&self, b: usize) -> String {
        format!("%{} (b{b}, {})", self.p.buffers[b].name, self.p.buffers[b].ty)
    }

    /// The bytes buffer `b` occupies now, and the buffer that owns them (a
    /// window's whole).
    fn span(&self, b: usize) -> (u64, u64, usize) {
        match self.p.buffers[b].kind {
            BufferKind::Window { whole } => {
                let (s, e, o) = self.span(whole);
                match self.views[b] {
                    Some((off, len)) => (s + off, s + off + len, o),
                    None => (s, e, o),
                }
            }
            _ => (self.place[b].0, self.place[b].0 + self.place[b].1, b),
        }
    }

    /// Removes every owned range within `[s, e)`, splitting those that cross
    /// its ends.
    fn clear(&mut self, s: u64, e: u64) {
        let over: Vec<u64> = self.owners.range(..e).rev().take_while(|(_, v)| v.0 > s).map(|(&k, _)| k).collect();
        for k in over {
            let (end, o, w) = self.owners.remove(&k).expect("listed");
            if k < s {
                self.owners.insert(k, (s, o, w.clone()));
            }
            if end > e {
                self.owners.insert(e, (end, o, w));
            }
        }
    }

    fn write(&mut self, b: usize) {
        let (s, e, o) = self.span(b);
        if s == e {
            return;
        }
        self.clear(s, e);
        self.owners.insert(s, (e, o, self.step.clone()));
    }

    fn read(&self, b: usize) -> Result<(), String> {
        let (s, e, o) = self.span(b);
        if s == e {
            return Ok(());
        }
        for (&k, (end, who, when)) in self.owners.range(..e).rev().take_while(|(_, v)| v.0 > s) {
            if *who != o {
                return Err(format!(
                    "{} is read at {} but bytes {}..{} of it were overwritten by {} at {}: the buffer plan lets two buffers that are live at once share memory",
                    self.name(b),
                    self.step,
                    k.max(s),
                    (*end).min(e),
                    self.name(*who),
                    when
                ));
            }
        }
        Ok(())
    }

    fn steps(&mut self, steps: &[Step], first: usize, run: usize) -> Result<(), String> {
        let mut si = first;
        let at = pjc_plan::plan::dones_at(steps);
        for (j, s) in steps.iter().enumerate() {
            self.dones(steps, &at[j], j, run)?;
            self.one(s, si, run)?;
            si += pjc_plan::control::step_count(s);
        }
        self.dones(steps, &at[steps.len()], steps.len(), run)
    }

    /// The dones of `steps`' asynchronous collectives before step `j`: the
    /// input must still be intact, and the output, written while in flight,
    /// must not have been overwritten.
    fn dones(&mut self, steps: &[Step], due: &[usize], j: usize, run: usize) -> Result<(), String> {
        for &i in due {
            if let Step::Collective { inst, input, output, .. } = &steps[i] {
                self.step = format!("the done of {} -> b{output} (before step {j} of its list) of run {}", inst.op, run + 1);
                self.read(*input)?;
                self.read(*output)?;
            }
        }
        Ok(())
    }

    fn one(&mut self, s: &Step, si: usize, run: usize) -> Result<(), String> {
        let what = match s {
            Step::Kernel(k) => format!("kernel {}", k.name),
            Step::Library { inst, .. } | Step::Collective { inst, .. } => inst.op.to_string(),
            Step::Control(_) => "a control step".into(),
        };
        self.step = format!("step {si} ({what}) of run {}", run + 1);
        let io = |k: &pjc_plan::kernel::Kernel| (k.inputs.iter().map(|b| b.buffer).collect::<Vec<_>>(), k.outputs.iter().map(|b| b.buffer).collect::<Vec<_>>());
        let mut groups = vec![];
        match s {
            Step::Kernel(k) => groups.push(io(k)),
            Step::Library { device, .. } if self.device_forms && !device.is_empty() => groups.extend(device.iter().map(io)),
            Step::Library { inputs, outputs, .. } => groups.push((inputs.clone(), outputs.clone())),
            Step::Collective { input, output, .. } => groups.push((vec![*input], vec![*output])),
            Step::Control(c) => {
                let mut m = Run { a: self, run };
                run_control(&m.a.p.buffers, c, si, &mut m, |e| e)?;
                // The runtime moves carried buffers back to their planned
                // places (all read, then all written).
                let moved: Vec<usize> = (0..self.place.len()).filter(|&i| self.place[i] != self.planned[i]).collect();
                self.step = format!("the end of step {si} ({what}) of run {}, moving carried buffers back", run + 1);
                for &i in &moved {
                    self.read(i)?;
                }
                for &i in &moved {
                    self.place[i] = self.planned[i];
                    self.write(i);
                }
            }
        }
        for (ins, outs) in groups {
            for b in ins {
                self.read(b)?;
            }
            for b in outs {
                self.write(b);
            }
        }
        Ok(())
    }
}

/// [`Abstract`] as a control-flow machine.
struct Run<'a, 'p> {
    a: &'a mut Abstract<'p>,
    run: usize,
}

impl Machine for Run<'_, '_> {
    type Error = String;
    fn run_block(&mut self, block: &Block, first: usize) -> Result<(), String> {
        self.a.steps(&block.steps, first, self.run)
    }
    fn copy(&mut self, dst: usize, src: usize) -> Result<(), String> {
        self.a.read(src)?;
        self.a.write(dst);
        Ok(())
    }
    fn swap(&mut self, x: usize, y: usize) -> Result<(), String> {
        self.a.place.swap(x, y);
        for v in self.a.owners.values_mut() {
            if v.1 == x {
                v.1 = y;
            } else if v.1 == y {
                v.1 = x;
            }
        }
        Ok(())
    }
    fn read_scalar(&mut self, b: usize) -> Result<Vec<u8>, String> {
        self.a.read(b)?;
        let ty = &self.a.p.buffers[b].ty;
        let n = self.a.counters[b];
        self.a.counters[b] += 1;
        // A predicate: true, true, false (two iterations per entry); an index:
        // 0, 1, 2, ... (each branch in turn; the switch clamps).
        let v: u64 = if ty.dtype == pjc_ir::DType::Pred { (n % 3 != 2) as u64 } else { n };
        let mut bytes = v.to_le_bytes().to_vec();
        bytes.resize(ty.dtype.size_bytes(), 0);
        Ok(bytes)
    }
    fn enter_window(&mut self, w: usize, _whole: usize, pos: u64, _read: bool) -> Result<(), String> {
        let len = self.a.p.buffers[w].bytes();
        self.a.views[w] = Some((pos * len, len));
        Ok(())
    }
    fn leave_window(&mut self, _w: usize, _whole: usize, _pos: u64, _written: bool) -> Result<(), String> {
        Ok(())
    }
}
