//! Fuzzes the whole `pjc compile --emit plan` pipeline, minus the driver and
//! minus LLVM: for input that parses and verifies,
//!
//! 1. `pjc_transforms::expand` (grad/vmap), then `verify` again;
//! 2. `pjc_sharding::propagate` + `annotate`;
//! 3. `pjc_partition::partition`, then `verify` of the per-device module;
//! 4. the entry's per-device program as one function: `inline_calls` +
//!    `combine_all_reduces`, alone in a module with the mesh, `verify` again;
//! 5. `pjc_fusion::plan`, `plan_memory`, and the plan's text.
//!
//! This mirrors `load_expanded`, `partition`, `per_device` and `kernel_plan_of`
//! in `crates/pjc/src/main.rs` (the binary crate is not a dependency: it pulls in
//! LLVM). Stages that return `Err` are fine (the driver reports them as program
//! errors or "unsupported"); any panic is a finding. The stages the driver labels
//! "internal error" (a transform's or the partitioner's output does not verify)
//! are findings too: the target panics on them.
//!
//! The entry is `@main` (the driver's default); a module without one uses its
//! last function, as `--entry NAME` would.
//!
//! Set `PJC_FUZZ_TRACE=1` to print how far each input got (to choose seeds).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pjc_front::{parse, print_module, render, verify};
use pjc_ir::{FuncId, Function, Module};

// No input-size guard: no stage allocates by shape (literals are as long as
// their text, splats are scalars, the pipeline never creates tensors), so huge
// declared shapes cost nothing and are fair game: byte sizes and offsets are
// computed from them (docs/fuzzing.md, bugs 13-16).

fn trace(stage: &str) {
    if std::env::var_os("PJC_FUZZ_TRACE").is_some() {
        eprintln!("compile_plan: {stage}");
    }
}

/// (parameter, result) index pairs of state-carry results (`carried` in main.rs).
fn carried(f: &Function) -> Vec<(usize, usize)> {
    (0..f.results.len())
        .filter_map(|k| (0..f.params.len()).find(|&i| f.param_name(i) == f.result_name(k)).map(|i| (i, k)))
        .collect()
}

fn must_verify(m: &Module, what: &str, src: &str) {
    let mut check = m.clone();
    if let Err(d) = verify(&mut check) {
        let text = print_module(m);
        panic!(
            "internal error: {what} does not verify:\n{}\n--- program ---\n{text}\n--- source ---\n{src}",
            render("<stage>", &text, &d)
        );
    }
}

fn entry_of(m: &Module) -> Option<FuncId> {
    m.func_by_name("main").or_else(|| m.funcs.iter().last().map(|(id, _)| id))
}

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    let Ok(mut m) = parse(src) else { return };
    if verify(&mut m).is_err() {
        return;
    }
    trace("verified");
    let Some(id) = entry_of(&m) else { return };
    let entry = m.funcs[id].name.clone();
    let Ok(id) = pjc_front::check_entry(&m, &entry) else { return };

    // load_expanded / expand_in_place
    if pjc_transforms::expand(&mut m).is_err() {
        trace("expand: error");
        return;
    }
    if let Err(d) = verify(&mut m) {
        let text = print_module(&m);
        panic!("internal error: the expanded program does not verify:\n{}\n--- source ---\n{src}", render("<expanded>", &text, &d));
    }
    trace("expanded");

    // partition
    let p = pjc_sharding::propagate(&m, id);
    let annotated = pjc_sharding::annotate(&m, &p);
    let part = match pjc_partition::partition(&annotated, id) {
        Ok(part) => part,
        Err(_) => {
            trace("partition: unsupported");
            return;
        }
    };
    must_verify(&part.module, "the per-device program", src);
    trace("partitioned");

    // per_device
    let Some(pid) = part.module.func_by_name(&entry) else {
        panic!("internal error: the per-device program has no @{entry}\n--- source ---\n{src}");
    };
    let mut f = match pjc_transforms::inline_calls(&part.module, pid) {
        Ok(f) => f,
        Err(_) => {
            trace("inline_calls: error");
            return;
        }
    };
    pjc_partition::combine_all_reduces(&mut f, &part.module.mesh_or_single());
    let mut single = part.module.clone();
    single.funcs = Default::default();
    single.funcs.push(f);
    single.end_comments.clear();
    must_verify(&single, "the per-device program after inlining and combining", src);
    trace("per-device");

    // kernel_plan_of + the --emit plan printing
    let f = single.funcs.values().next().expect("one function").clone();
    let plan = match pjc_fusion::plan(&f) {
        Ok(plan) => plan,
        Err(_) => {
            trace("plan: unsupported");
            return;
        }
    };
    let mem = pjc_fusion::plan_memory(&plan, &carried(&f));
    let text = format!("{plan}");
    assert!(!text.is_empty());
    let _ = format!("  memory: peak {} bytes per device; donated: {:?}", mem.peak, mem.donated);
    trace("planned");
});
