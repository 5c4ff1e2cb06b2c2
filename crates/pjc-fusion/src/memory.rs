//! The buffer plan: where every buffer lives in one arena, reusing memory of
//! buffers that are dead (liveness over plan steps), updating carried
//! parameters in place (donation) when that is safe, and the resulting peak.

use pjc_plan::kernel::{Kernel, Node, NodeId};
use pjc_plan::{BufferKind, Memory, Plan, Step};

const ALIGN: u64 = 64;

fn align(x: u64) -> u64 {
    x.div_ceil(ALIGN) * ALIGN
}

/// A buffer's size in the arena (at least one byte, aligned), if it fits in
/// u64. `plan` checks that these sizes, summed over all buffers, fit, so the
/// placement arithmetic below cannot overflow.
pub(crate) fn aligned_size(bytes: u64) -> Option<u64> {
    bytes.max(1).div_ceil(ALIGN).checked_mul(ALIGN)
}

/// Buffers read and written by a step. A library step's include those of
/// its device kernels (their temporaries live during the step only), so the
/// plan's one buffer plan holds whichever form a backend runs.
fn step_io(s: &Step) -> (Vec<usize>, Vec<usize>) {
    let kernel_io = |k: &Kernel| (k.inputs.iter().map(|b| b.buffer).collect::<Vec<_>>(), k.outputs.iter().map(|b| b.buffer).collect::<Vec<_>>());
    match s {
        Step::Kernel(k) => kernel_io(k),
        Step::Library { inputs, outputs, device, .. } => {
            let (mut ins, mut outs) = (inputs.clone(), outputs.clone());
            for (i, o) in device.iter().map(kernel_io) {
                ins.extend(i);
                outs.extend(o);
            }
            (ins, outs)
        }
        Step::Collective { input, output, .. } => (vec![*input], vec![*output]),
        // Everything a loop or a switch and its blocks name.
        Step::Control(_) => {
            let all = pjc_plan::control::step_buffers(s);
            (all.clone(), all)
        }
    }
}

/// The plan's steps as a sequence of events, each reading and writing
/// buffers, with the step it is (None for the start and end of a control
/// step). A control step is its start (which reads the initial values and
/// writes the buffers it names itself: state, outputs, its blocks' results),
/// its blocks' steps one block after another, and its end (which reads all
/// of those): the buffers a loop carries or swaps live through the whole
/// loop, while a temporary of one block lives only within it — the blocks of
/// a loop or a switch never run at the same time, so their temporaries share
/// memory.
fn events(steps: &[Step]) -> Vec<(Vec<usize>, Vec<usize>, Option<&Step>)> {
    let mut out = vec![];
    for s in steps {
        match s {
            Step::Control(c) => {
                let own: Vec<usize> = c.clone().own_buffers_mut().into_iter().map(|b| *b).collect();
                out.push((own.clone(), own.clone(), None));
                for b in c.blocks() {
                    out.extend(events(&b.steps));
                }
                out.push((own, vec![], None));
            }
            s => {
                let (ins, outs) = step_io(s);
                out.push((ins, outs, Some(s)));
            }
        }
    }
    out
}

/// Whether node `n` is the row-major linear index of the first `shape.len()`
/// coordinates (so a kernel reads that input exactly where it writes).
fn is_identity_index(k: &Kernel, n: NodeId, shape: &[u64]) -> bool {
    let Some(a) = k.affine(n) else { return false };
    let mut want = vec![];
    let mut stride = 1i128;
    for d in (0..shape.len()).rev() {
        if shape[d] != 1 {
            want.push((d, stride));
        }
        stride *= shape[d] as i128;
    }
    want.sort();
    a.constant == 0 && a.terms == want
}

/// Plans memory. `carried` lists (parameter index, result index) pairs whose
/// result is the parameter's next value (state carry, spec section 5).
pub fn plan_memory(p: &Plan, carried: &[(usize, usize)]) -> Memory {
    let n = p.buffers.len();
    let events = events(&p.steps);
    let steps = events.len();
    // Live interval [def, last] in event numbers (a buffer is defined by its
    // first write); parameters and constants are defined before event 0,
    // results live to the end.
    let mut def: Vec<Option<usize>> = vec![None; n];
    let mut last = vec![0usize; n];
    for (i, b) in p.buffers.iter().enumerate() {
        if matches!(b.kind, BufferKind::Param(_) | BufferKind::Constant(_)) {
            def[i] = Some(0);
            last[i] = 0;
        }
    }
    for (s, (ins, outs, _)) in events.iter().enumerate() {
        for &b in ins {
            last[b] = last[b].max(s + 1);
        }
        for &b in outs {
            def[b].get_or_insert(s + 1);
            last[b] = last[b].max(s + 1);
        }
    }
    let def: Vec<usize> = def.into_iter().map(|d| d.unwrap_or(0)).collect();
    for &r in &p.results {
        last[r] = steps + 1;
    }
    for &pb in &p.params {
        // The caller owns parameter memory for the whole step.
        last[pb] = steps + 1;
    }
    for (i, b) in p.buffers.iter().enumerate() {
        // Written once, before the first run, and read by every run.
        if matches!(b.kind, BufferKind::AxisIndices(_)) {
            last[i] = steps + 1;
        }
    }
    // Donation: a carried result may take its parameter's memory when nothing
    // reads the parameter after the result is written, or only the producing
    // kernel reads it, at exactly the element it writes.
    let mut share: Vec<Option<usize>> = vec![None; n];
    let mut donated = vec![];
    for &(pi, ri) in carried {
        let (pb, rb) = (p.params[pi], p.results[ri]);
        if pb == rb || p.results.iter().filter(|&&r| r == rb).count() > 1 || p.results.contains(&pb) {
            continue;
        }
        let producer = def[rb];
        let mut readers_after = 0;
        let mut safe = true;
        for (s, (ins, _, step)) in events.iter().enumerate() {
            if !ins.contains(&pb) {
                continue;
            }
            if s + 1 > producer {
                readers_after += 1;
            } else if s + 1 == producer {
                safe &= match step {
                    Some(Step::Kernel(k)) if k.reduce.is_none() => k.nodes.iter().all(|node| match node {
                        Node::Load { input, index } if k.inputs[*input].buffer == pb => {
                            is_identity_index(k, *index, &p.buffers[pb].ty.shape)
                        }
                        _ => true,
                    }),
                    _ => false,
                };
            }
        }
        if readers_after == 0 && safe && producer > 0 {
            share[rb] = Some(pb);
            donated.push((pb, rb));
        }
    }
    // First-fit placement in order of definition.
    // Windows are views of their whole buffers: no memory of their own.
    let window = |i: usize| matches!(p.buffers[i].kind, BufferKind::Window { .. });
    let mut order: Vec<usize> = (0..n).filter(|&i| share[i].is_none() && !window(i)).collect();
    order.sort_by_key(|&i| (def[i], i));
    let mut offsets = vec![0u64; n];
    let mut placed: Vec<(u64, u64, usize, usize)> = vec![]; // (offset, size, def, last)
    for i in order {
        // A donated-to result keeps its parameter's live range to the end.
        let size = align(p.buffers[i].bytes().max(1));
        let overlaps = |&(_, _, d, l): &(u64, u64, usize, usize)| !(l < def[i] || last[i] < d);
        let mut busy: Vec<(u64, u64)> = placed.iter().filter(|x| overlaps(x)).map(|x| (x.0, x.1)).collect();
        busy.sort();
        let mut off = 0;
        for (o, s) in busy {
            if off + size <= o {
                break;
            }
            off = off.max(o + s);
        }
        offsets[i] = off;
        placed.push((off, size, def[i], last[i]));
    }
    for i in 0..n {
        if let Some(pb) = share[i] {
            offsets[i] = offsets[pb];
        }
        if let BufferKind::Window { whole } = p.buffers[i].kind {
            offsets[i] = offsets[whole];
        }
    }
    let peak = placed.iter().map(|x| x.0 + x.1).max().unwrap_or(0);
    Memory { offsets, peak, donated }
}
