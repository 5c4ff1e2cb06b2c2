//! The buffer plan: where every buffer lives in one arena, reusing memory of
//! buffers that are dead (liveness over plan steps), updating carried
//! parameters in place (donation) when that is safe, and the resulting peak.

use pjc_plan::kernel::{Kernel, Node, NodeId};
use pjc_plan::{BufferKind, Memory, PeakLive, Plan, Step};

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
fn events<'p>(steps: &'p [Step], buffers: &[pjc_plan::Buffer]) -> Vec<(Vec<usize>, Vec<usize>, Option<&'p Step>)> {
    let mut out = vec![];
    // An asynchronous collective's done: its input and output stay live
    // until then (read there).
    let at = pjc_plan::plan::dones_at(steps);
    let dones = |out: &mut Vec<(Vec<usize>, Vec<usize>, Option<&'p Step>)>, j: usize| {
        for &i in &at[j] {
            if let s @ Step::Collective { input, output, .. } = &steps[i] {
                out.push((vec![*input, *output], vec![], Some(s)));
            }
        }
    };
    for (j, s) in steps.iter().enumerate() {
        dones(&mut out, j);
        match s {
            Step::Control(c) => {
                // The whole buffers the step's windows view live through the
                // whole step: a scanned operand is read and a stacked output
                // written in every iteration, so the start writes them (a
                // stacked output is defined there, not where it is first
                // named afterwards) and the end reads them.
                let mut own: Vec<usize> = c.clone().own_buffers_mut().into_iter().map(|b| *b).collect();
                for b in pjc_plan::control::step_buffers(s) {
                    if let BufferKind::Window { whole } = buffers[b].kind {
                        own.push(whole);
                    }
                }
                own.sort_unstable();
                own.dedup();
                out.push((own.clone(), own.clone(), None));
                for b in c.blocks() {
                    out.extend(events(&b.steps, buffers));
                }
                out.push((own, vec![], None));
            }
            s => {
                let (ins, outs) = step_io(s);
                out.push((ins, outs, Some(s)));
            }
        }
    }
    dones(&mut out, steps.len());
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

/// The plan's events ([`events`]) and every buffer's live interval
/// `[def, last]` in event numbers (event `s` is number `s + 1`): a buffer is
/// defined by its first write; parameters and constants are defined before
/// event 0; parameters, results, constants and axis indices live to the end
/// (`events.len() + 1`: constants and axis indices are written once, before
/// the first run, and read by every run).
#[allow(clippy::type_complexity)]
fn live_ranges(p: &Plan) -> (Vec<(Vec<usize>, Vec<usize>, Option<&Step>)>, Vec<usize>, Vec<usize>) {
    let n = p.buffers.len();
    let events = events(&p.steps, &p.buffers);
    let steps = events.len();
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
        if matches!(b.kind, BufferKind::AxisIndices(_) | BufferKind::Constant(_)) {
            last[i] = steps + 1;
        }
    }
    (events, def, last)
}

/// What is live when, for `pjc explain --html`'s memory timeline: what each
/// event of the plan is, and every buffer's live interval `[def, last]` in
/// event numbers, exactly as [`plan_memory`] places buffers by them (event
/// `e` of `events` is number `e + 1`; 0 is before the first step,
/// `events.len() + 1` after the last; [`PeakLive::at`] counts the same way).
pub struct Liveness {
    pub events: Vec<String>,
    pub def: Vec<usize>,
    pub last: Vec<usize>,
}

/// The plan's [`Liveness`] (a view of [`live_ranges`], which decides it).
pub fn liveness(p: &Plan) -> Liveness {
    let (events, def, last) = live_ranges(p);
    let events = events
        .iter()
        .map(|(_, outs, s)| match s {
            Some(Step::Kernel(k)) => format!("kernel {}", k.name),
            // An asynchronous collective's done reads its buffers, writes none.
            Some(Step::Collective { inst, .. }) if outs.is_empty() => format!("{} done", inst.op),
            Some(Step::Library { inst, .. }) | Some(Step::Collective { inst, .. }) => inst.op.to_string(),
            Some(Step::Control(_)) | None => "a control step".to_string(),
        })
        .collect();
    Liveness { events, def, last }
}

/// Every buffer's size in the arena (at least one byte, aligned).
fn aligned_sizes(p: &Plan) -> Vec<u64> {
    p.buffers.iter().map(|b| align(b.bytes().max(1))).collect()
}

/// The moment of `p` (with buffer plan `mem`) when the most memory is live,
/// for `pjc explain`.
pub fn peak_live(p: &Plan, mem: &Memory) -> PeakLive {
    let (events, def, last) = live_ranges(p);
    fullest(p, mem, &events, &def, &last)
}

/// [`peak_live`] from the plan's events and live intervals ([`live_ranges`]).
#[allow(clippy::type_complexity)]
fn fullest(p: &Plan, mem: &Memory, events: &[(Vec<usize>, Vec<usize>, Option<&Step>)], def: &[usize], last: &[usize]) -> PeakLive {
    let n = p.buffers.len();
    let end = events.len() + 1;
    let mut donated_to = vec![false; n];
    for &(_, r) in &mem.donated {
        donated_to[r] = true;
    }
    let counted = |i: usize| !matches!(p.buffers[i].kind, BufferKind::Window { .. }) && !donated_to[i];
    let sizes = aligned_sizes(p);
    // Bytes live at each event number, by a difference array over intervals.
    let mut delta = vec![0i128; end + 2];
    for i in (0..n).filter(|&i| counted(i)) {
        delta[def[i]] += sizes[i] as i128;
        delta[last[i] + 1] -= sizes[i] as i128;
    }
    let (mut best, mut at, mut live) = (0i128, 0usize, 0i128);
    for (e, d) in delta.iter().enumerate().take(end + 1) {
        live += d;
        if live > best {
            best = live;
            at = e;
        }
    }
    let mut buffers: Vec<(usize, u64)> = (0..n).filter(|&i| counted(i) && def[i] <= at && at <= last[i]).map(|i| (i, sizes[i])).collect();
    buffers.sort_by_key(|&(i, b)| (std::cmp::Reverse(b), i));
    let step = (at >= 1 && at <= events.len()).then(|| match events[at - 1].2 {
        Some(Step::Kernel(k)) => format!("kernel {}", k.name),
        Some(Step::Library { inst, .. }) | Some(Step::Collective { inst, .. }) => inst.op.to_string(),
        Some(Step::Control(_)) | None => "a control step".to_string(),
    });
    PeakLive { bytes: best as u64, step, at: (at, events.len()), buffers }
}

/// Plans memory. `carried` lists (parameter index, result index) pairs whose
/// result is the parameter's next value (state carry, spec section 5).
pub fn plan_memory(p: &Plan, carried: &[(usize, usize)]) -> Memory {
    let n = p.buffers.len();
    let (events, def, last) = live_ranges(p);
    let steps = events.len();
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
    let (mut offsets, peak) = first_fit(&order, &def, &last, &aligned_sizes(p), steps + 1);
    for i in 0..n {
        if let Some(pb) = share[i] {
            offsets[i] = offsets[pb];
        }
        if let BufferKind::Window { whole } = p.buffers[i].kind {
            offsets[i] = offsets[whole];
        }
    }
    let mut mem = Memory { offsets, peak, donated, fullest: PeakLive::default() };
    mem.fullest = fullest(p, &mem, &events, &def, &last);
    mem
}

/// First-fit placement of buffers `order` (sorted by definition) with live
/// intervals `[def, last]` and `sizes`: each at the lowest offset where it
/// overlaps no placed buffer live at the same time. Returns the offsets
/// (indexed by buffer; 0 for buffers not in `order`) and the peak.
///
/// Linear in the buffers times the memory live at once, not quadratic in the
/// program: `forever` holds the coalesced ranges of buffers live to the end
/// (`last >= end_of_step`: parameters, results, which never free), `live` the
/// others not yet dead. Buffers come in order of definition, so one that died
/// before this definition overlaps nothing placed later and is dropped, and
/// everything kept overlaps the buffer being placed.
fn first_fit(order: &[usize], def: &[usize], last: &[usize], sizes: &[u64], end_of_step: usize) -> (Vec<u64>, u64) {
    let mut offsets = vec![0u64; sizes.len()];
    let mut forever: Vec<(u64, u64)> = vec![]; // [start, end), sorted, disjoint, not touching
    let mut live: Vec<(u64, u64, usize)> = vec![]; // (start, end, last)
    let mut peak = 0;
    for &i in order {
        let size = sizes[i];
        live.retain(|&(_, _, l)| l >= def[i]);
        let mut busy: Vec<(u64, u64)> = forever.iter().copied().chain(live.iter().map(|&(o, e, _)| (o, e))).collect();
        busy.sort_unstable();
        let mut off = 0;
        for (o, e) in busy {
            if off + size <= o {
                break;
            }
            off = off.max(e);
        }
        offsets[i] = off;
        peak = peak.max(off + size);
        if last[i] >= end_of_step {
            insert_range(&mut forever, off, off + size);
        } else {
            live.push((off, off + size, last[i]));
        }
    }
    (offsets, peak)
}

/// Adds `[start, end)` (overlapping none of them) to the sorted disjoint
/// ranges `rs`, merging it with ranges it touches.
fn insert_range(rs: &mut Vec<(u64, u64)>, start: u64, end: u64) {
    let at = rs.partition_point(|r| r.0 < start);
    let joins_prev = at > 0 && rs[at - 1].1 == start;
    let joins_next = at < rs.len() && rs[at].0 == end;
    match (joins_prev, joins_next) {
        (true, true) => {
            rs[at - 1].1 = rs[at].1;
            rs.remove(at);
        }
        (true, false) => rs[at - 1].1 = end,
        (false, true) => rs[at].0 = start,
        (false, false) => rs.insert(at, (start, end)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The placement before it was made linear: every placed buffer checked
    /// for overlap with every new one.
    fn first_fit_quadratic(n: usize, order: &[usize], def: &[usize], last: &[usize], sizes: &[u64]) -> (Vec<u64>, u64) {
        let mut offsets = vec![0u64; n];
        let mut placed: Vec<(u64, u64, usize, usize)> = vec![];
        for &i in order {
            let size = sizes[i];
            let mut busy: Vec<(u64, u64)> = placed.iter().filter(|&&(_, _, d, l)| !(l < def[i] || last[i] < d)).map(|x| (x.0, x.1)).collect();
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
        (offsets, placed.iter().map(|x| x.0 + x.1).max().unwrap_or(0))
    }

    #[test]
    fn linear_first_fit_places_exactly_as_the_quadratic_one() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for case in 0..300 {
            let n = 1 + rnd(60) as usize;
            let steps = 1 + rnd(40) as usize;
            let mut def = vec![];
            let mut last = vec![];
            let mut sizes = vec![];
            for _ in 0..n {
                let d = rnd(steps as u64 + 1) as usize;
                // Some live to the end (parameters, results), some die at once.
                let l = match rnd(4) {
                    0 => steps + 1,
                    1 => d,
                    _ => d + rnd((steps + 2 - d) as u64) as usize,
                };
                def.push(d);
                last.push(l);
                sizes.push(ALIGN * (1 + rnd(8)));
            }
            let mut order: Vec<usize> = (0..n).filter(|_| rnd(10) > 0).collect();
            order.sort_by_key(|&i| (def[i], i));
            let fast = first_fit(&order, &def, &last, &sizes, steps + 1);
            let slow = first_fit_quadratic(n, &order, &def, &last, &sizes);
            assert_eq!(fast, slow, "case {case}: def {def:?} last {last:?} sizes {sizes:?} order {order:?}");
        }
    }

    #[test]
    fn ranges_coalesce() {
        let mut r = vec![];
        insert_range(&mut r, 64, 128);
        insert_range(&mut r, 256, 320);
        insert_range(&mut r, 0, 64);
        assert_eq!(r, vec![(0, 128), (256, 320)]);
        insert_range(&mut r, 128, 256);
        assert_eq!(r, vec![(0, 320)]);
        insert_range(&mut r, 384, 448);
        insert_range(&mut r, 320, 384);
        assert_eq!(r, vec![(0, 448)]);
    }
}
