//! Overlapping collectives with compute: every step list of a plan (the
//! top level and each block of a control step, separately) is reordered by a
//! list scheduler, and each collective that has independent work after it
//! becomes a start/done pair (`Step::Collective { done: Some(j) }`).
//!
//! The model is XLA's latency-hiding scheduler, cut down to what a plan
//! needs: a collective starts as soon as its input is written (the scheduler
//! takes a ready collective before any ready compute step), and completes as
//! late as its dependences allow — just before the first step that reads its
//! output or writes its input or output, or at the end of its list. Compute
//! steps keep their planned order except that a ready step which does not
//! need an in-flight collective's result goes before one that does, so the
//! work the collective can hide behind runs while it is in flight. The order
//! is a topological order of the steps' buffer dependences (read after
//! write, write after read, write after write; a window counts as its whole
//! buffer, a control step as reading and writing everything it names), so the
//! plan computes exactly what it did, on every rank in the same order.
//!
//! Order: a cost model decides between ready compute steps, as in XLA's
//! latency-hiding scheduler. Each step's time is the plan cost model's
//! (`pjc_plan::cost`: roofline kernels and library calls at the CPU figures
//! of [`Machine::CPU`]); each collective's the ring formulas' (messages ×
//! latency + bytes / link bandwidth, over its group of the mesh), and the
//! collectives run one after another in start order (one collectives thread
//! or stream per rank). The scheduler keeps a clock of both. Among ready
//! compute steps it takes, in turn: one that needs no collective in flight,
//! preferring one that writes a collective's input (the shortest first), so
//! collectives start as early as their inputs allow; else the one whose
//! collectives finish first by the estimate. A done is not moved earlier
//! because its collective is estimated to have finished: the estimate's link
//! figures are a cluster's, and a done placed early on a slower link stalls
//! the compute it was meant to run beside. Ties go to program order.
//!
//! Memory: the buffer plan (`memory.rs`) keeps a pair's input and output
//! live from its start to its done, so the arena it computes is the memory of
//! the overlapped schedule; [`schedule`] bounds it (at most
//! [`MEMORY_SLACK_PERCENT`] above the program order's peak).

use pjc_plan::control::whole_of;
use pjc_plan::cost::Machine;
use pjc_plan::{Buffer, Plan, Step};
use pjc_ir::Mesh;

/// Buffers a step reads and writes (windows as their whole buffers).
fn io(s: &Step, buffers: &[Buffer]) -> (Vec<usize>, Vec<usize>) {
    let kernel = |k: &pjc_plan::kernel::Kernel, r: &mut Vec<usize>, w: &mut Vec<usize>| {
        r.extend(k.inputs.iter().map(|b| b.buffer));
        w.extend(k.outputs.iter().map(|b| b.buffer));
    };
    let (mut r, mut w) = (vec![], vec![]);
    match s {
        Step::Kernel(k) => kernel(k, &mut r, &mut w),
        Step::Library { inputs, outputs, device, .. } => {
            r.extend(inputs);
            w.extend(outputs);
            for k in device {
                kernel(k, &mut r, &mut w);
            }
        }
        Step::Collective { input, output, .. } => {
            r.push(*input);
            w.push(*output);
        }
        Step::Control(_) => {
            let all = pjc_plan::control::step_buffers(s);
            r.extend(&all);
            w.extend(all);
        }
    }
    let whole = |v: Vec<usize>| {
        let mut v: Vec<usize> = v.into_iter().map(|b| whole_of(buffers, b)).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    (whole(r), whole(w))
}

/// Schedules every step list of `plan` (see the module doc).
/// `PJC_OVERLAP=0` (at compile time) leaves the plan in program order with
/// every collective blocking, to compare.
///
/// Memory bound: the overlapped schedule may raise the buffer plan's peak by
/// at most [`MEMORY_SLACK_PERCENT`] over the program order's; beyond that,
/// the pairs holding the most bytes in flight longest become blocking one by
/// one, and if that is not enough the program order stays.
pub fn schedule(plan: &mut Plan) {
    schedule_on(plan, None)
}

/// [`schedule`] with the collectives' groups sized by `mesh` (the module's);
/// without one, a group of two.
pub fn schedule_on(plan: &mut Plan, mesh: Option<&Mesh>) {
    if std::env::var("PJC_OVERLAP").is_ok_and(|v| v == "0") {
        return;
    }
    // Without collectives the list scheduler gives the program order back:
    // nothing to reorder, no peak to bound.
    if !pjc_plan::control::preorder(&plan.steps).iter().any(|s| matches!(s, Step::Collective { .. })) {
        return;
    }
    let original = plan.clone();
    let buffers = std::mem::take(&mut plan.buffers);
    schedule_steps(&mut plan.steps, &buffers, mesh);
    plan.buffers = buffers;
    let base = crate::memory::plan_memory(&original, &[]).peak;
    let bound = base.saturating_add(base / 100 * MEMORY_SLACK_PERCENT);
    while crate::memory::plan_memory(plan, &[]).peak > bound {
        if !make_one_blocking(&mut plan.steps, &plan.buffers) {
            *plan = original;
            return;
        }
    }
}

/// How much the overlapped schedule may raise the peak memory (percent).
pub const MEMORY_SLACK_PERCENT: u64 = 10;

/// Turns the start/done pair (in any step list) holding the most bytes in
/// flight for the most steps into a blocking collective; false when none is
/// left.
fn make_one_blocking(steps: &mut [Step], buffers: &[Buffer]) -> bool {
    fn weight(steps: &[Step], buffers: &[Buffer], best: &mut Option<(u64, Vec<usize>)>, path: &mut Vec<usize>) {
        for (i, s) in steps.iter().enumerate() {
            path.push(i);
            match s {
                Step::Collective { input, output, done: Some(d), .. } => {
                    let w = (buffers[*input].bytes() + buffers[*output].bytes()).saturating_mul((d - i) as u64);
                    if best.as_ref().is_none_or(|b| w > b.0) {
                        *best = Some((w, path.clone()));
                    }
                }
                Step::Control(c) => {
                    for (k, b) in c.blocks().into_iter().enumerate() {
                        path.push(k);
                        weight(&b.steps, buffers, best, path);
                        path.pop();
                    }
                }
                _ => {}
            }
            path.pop();
        }
    }
    let mut best = None;
    weight(steps, buffers, &mut best, &mut vec![]);
    let Some((_, path)) = best else { return false };
    // Follow the path: step index, then (block, step index) pairs.
    let mut list: &mut [Step] = steps;
    let mut k = 0;
    loop {
        let i = path[k];
        if k + 1 == path.len() {
            if let Step::Collective { done, .. } = &mut list[i] {
                *done = None;
            }
            return true;
        }
        let Step::Control(c) = &mut list[i] else { unreachable!("the path goes through control steps") };
        let b = path[k + 1];
        list = &mut c.blocks_mut().into_iter().nth(b).expect("the path's block").steps;
        k += 2;
    }
}

fn schedule_steps(steps: &mut Vec<Step>, buffers: &[Buffer], mesh: Option<&Mesh>) {
    for s in steps.iter_mut() {
        if let Step::Control(c) = s {
            for b in c.blocks_mut() {
                schedule_steps(&mut b.steps, buffers, mesh);
            }
        }
    }
    let order = list_order(steps, buffers, mesh);
    let mut old: Vec<Option<Step>> = std::mem::take(steps).into_iter().map(Some).collect();
    *steps = order.iter().map(|&i| old[i].take().expect("each step once")).collect();
    mark_dones(steps, buffers);
}

/// The estimated time of one step, seconds (module doc): a compute step's
/// roofline time, a collective's ring time over its group (`mesh`'s, else
/// two devices).
pub fn step_time(s: &Step, buffers: &[Buffer], mesh: Option<&Mesh>) -> f64 {
    let m = Machine::CPU;
    match s {
        Step::Collective { inst, input, output, .. } => {
            let Some(kind) = inst.op.collective() else { return 0.0 };
            let axes = inst.attr("axes").and_then(|a| a.as_idents()).unwrap_or_default();
            let n = mesh.map_or(2, |mesh| mesh.group_size(axes.iter().map(String::as_str))).max(2);
            let bytes = kind.ring_bytes(buffers[*input].bytes(), buffers[*output].bytes(), n) as f64;
            kind.ring_messages(n) as f64 * m.link_latency_us * 1e-6 + bytes / (m.link_gbps * 1e9)
        }
        s => {
            let one = Mesh::default();
            pjc_plan::cost::step_cost(buffers, s, mesh.unwrap_or(&one), &m).compute_s
        }
    }
}

/// The order the list scheduler runs `steps` in (indices into `steps`).
fn list_order(steps: &[Step], buffers: &[Buffer], mesh: Option<&Mesh>) -> Vec<usize> {
    let n = steps.len();
    let ios: Vec<(Vec<usize>, Vec<usize>)> = steps.iter().map(|s| io(s, buffers)).collect();
    // Dependences, built in one pass: per buffer its last writer and the
    // readers since.
    let mut preds: Vec<Vec<usize>> = vec![vec![]; n];
    let mut last_writer: std::collections::HashMap<usize, usize> = Default::default();
    let mut readers: std::collections::HashMap<usize, Vec<usize>> = Default::default();
    for (i, (r, w)) in ios.iter().enumerate() {
        for b in r {
            if let Some(&p) = last_writer.get(b) {
                preds[i].push(p);
            }
        }
        for b in w {
            if let Some(&p) = last_writer.get(b) {
                preds[i].push(p);
            }
            for &p in readers.get(b).map(Vec::as_slice).unwrap_or(&[]) {
                if p != i {
                    preds[i].push(p);
                }
            }
        }
        for b in r {
            readers.entry(*b).or_default().push(i);
        }
        for b in w {
            last_writer.insert(*b, i);
            readers.remove(b);
        }
    }
    let mut succs: Vec<Vec<usize>> = vec![vec![]; n];
    let mut waiting: Vec<usize> = vec![0; n];
    for (i, ps) in preds.iter_mut().enumerate() {
        ps.sort_unstable();
        ps.dedup();
        waiting[i] = ps.len();
        for &p in ps.iter() {
            succs[p].push(i);
        }
    }
    let is_coll = |i: usize| matches!(steps[i], Step::Collective { .. });
    let time: Vec<f64> = steps.iter().map(|s| step_time(s, buffers, mesh)).collect();
    // A step that writes a collective's input, and its time: the shortest
    // goes first among them, so its collective starts soonest. (Steps further
    // up are not pulled forward: that would compute what is ready early, such
    // as slices of a parameter, long before it is needed, and hold its memory.)
    let feeds = |i: usize| !is_coll(i) && succs[i].iter().any(|&s| is_coll(s));
    let priority = |i: usize| if feeds(i) { (0, time[i]) } else { (1, 0.0) };
    let mut ready: std::collections::BTreeSet<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    // Outputs of scheduled collectives no scheduled step has read yet, with
    // their estimated completion.
    let mut in_flight: Vec<(usize, f64)> = vec![];
    // The compute clock and the collectives' (they run in start order).
    let (mut now, mut link) = (0.0f64, 0.0f64);
    let mut order = Vec::with_capacity(n);
    // When the in-flight collectives step `i` reads complete (`now` if none).
    let needs = |i: usize, in_flight: &[(usize, f64)], now: f64| -> f64 {
        ios[i].0.iter().filter_map(|b| in_flight.iter().find(|f| f.0 == *b).map(|f| f.1)).fold(now, f64::max)
    };
    while !ready.is_empty() {
        let pick = match ready.iter().copied().find(|&i| is_coll(i)) {
            Some(c) => c,
            None => {
                let free = ready.iter().copied().filter(|&i| !ios[i].0.iter().any(|b| in_flight.iter().any(|f| f.0 == *b))).min_by(|&a, &b| {
                    let (pa, pb) = (priority(a), priority(b));
                    pa.0.cmp(&pb.0).then(pa.1.total_cmp(&pb.1)).then(a.cmp(&b))
                });
                free.unwrap_or_else(|| {
                    ready.iter().copied().min_by(|&a, &b| needs(a, &in_flight, now).total_cmp(&needs(b, &in_flight, now)).then(a.cmp(&b))).expect("ready is not empty")
                })
            }
        };
        ready.remove(&pick);
        order.push(pick);
        let (r, w) = &ios[pick];
        if is_coll(pick) {
            let end = link.max(now) + time[pick];
            link = end;
            in_flight.extend(w.iter().map(|&b| (b, end)));
        } else {
            now = needs(pick, &in_flight, now) + time[pick];
            in_flight.retain(|f| !r.contains(&f.0));
        }
        for &s in &succs[pick] {
            waiting[s] -= 1;
            if waiting[s] == 0 {
                ready.insert(s);
            }
        }
    }
    assert_eq!(order.len(), n, "the dependences of a step list are acyclic");
    order
}

/// Gives each collective of `steps` its done position: before the first
/// later step that reads its output or writes its input or output, else the
/// end of the list; a collective whose very next step needs it stays blocking.
fn mark_dones(steps: &mut [Step], buffers: &[Buffer]) {
    let ios: Vec<(Vec<usize>, Vec<usize>)> = steps.iter().map(|s| io(s, buffers)).collect();
    let n = steps.len();
    for i in 0..n {
        let Step::Collective { input, output, .. } = &steps[i] else { continue };
        let (inp, out) = (whole_of(buffers, *input), whole_of(buffers, *output));
        let j = (i + 1..n).find(|&k| ios[k].0.contains(&out) || ios[k].1.contains(&inp) || ios[k].1.contains(&out)).unwrap_or(n);
        if let Step::Collective { done, .. } = &mut steps[i] {
            *done = (j > i + 1).then_some(j);
        }
    }
}
