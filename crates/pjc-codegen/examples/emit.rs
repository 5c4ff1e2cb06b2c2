//! Prints what the code generator makes of a PIR file (single-device `@main`):
//!
//!     cargo run -p pjc-codegen --example emit -- FILE.pir [llvm|llvm-raw|ptx|nvptx-llvm] [sm_90]
//!
//! `llvm` is the optimized x86-64 IR (`pjc compile --emit llvm`), `llvm-raw`
//! the IR before optimization, `ptx` the PTX (`--emit ptx`), `nvptx-llvm` the
//! optimized NVPTX IR with libdevice linked. The plan goes to stderr.

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("usage: emit FILE.pir [llvm|llvm-raw|ptx|nvptx-llvm] [sm_90]");
    let what = args.next().unwrap_or_else(|| "llvm".into());
    let arch = args.next().unwrap_or_else(|| "sm_90".into());
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let m = pjc_front::load(&src).unwrap_or_else(|e| panic!("{path}: {e:?}"));
    let f = &m.funcs[m.func_by_name("main").expect("no @main")];
    let plan = pjc_fusion::plan(f).unwrap_or_else(|e| panic!("{path}: {e}"));
    eprint!("{plan}");
    let out = match what.as_str() {
        "llvm-raw" => pjc_codegen::cpu::emit_llvm_unoptimized(&plan),
        "ptx" => pjc_codegen::emit_ptx(&plan, &arch),
        "nvptx-llvm" => pjc_codegen::ptx::emit_nvptx_llvm(&plan, &arch),
        _ => pjc_codegen::emit_llvm(&plan),
    };
    match out {
        Ok(s) => print!("{s}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
