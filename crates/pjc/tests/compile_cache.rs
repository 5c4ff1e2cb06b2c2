//! `pjc compile -o` with deduplicated, parallel and cached code generation:
//! the executable is bitwise the one a serial compile without the cache
//! writes, whatever the thread count and whether kernels come from LLVM or
//! from the cache; a slightly edited program reuses its unchanged kernels;
//! the cache keeps its size bound, survives concurrent compiles, and an
//! unusable cache is a warning, never a failed compile.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

fn scratch() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!("pjc-compile-cache-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A stack of `layers` identical-shaped blocks (layer norm, a product, tanh,
/// a residual): each block's kernels have the same bodies as every other's.
/// `eps` is the last block's epsilon (editing it changes one kernel body).
fn stack(layers: usize, eps: &str) -> String {
    let mut s = String::from("func @main(%x: f32[16,32]");
    for l in 0..layers {
        s.push_str(&format!(", %w{l}: f32[32,32]"));
    }
    s.push_str(") -> (y: f32[16,32]) {\n");
    let mut h = "x".to_string();
    for l in 0..layers {
        let e = if l + 1 == layers { eps } else { "1e-05" };
        s.push_str(&format!(
            "  %s{l} = reduce %{h} {{dims=[1], kind=sum}} : f32[16]
  %n{l} = constant 32.0 : f32[16]
  %m{l} = div %s{l}, %n{l}
  %mb{l} = broadcast %m{l} {{dims=[0]}} : f32[16,32]
  %c{l} = sub %{h}, %mb{l}
  %q{l} = mul %c{l}, %c{l}
  %v{l} = reduce %q{l} {{dims=[1], kind=sum}} : f32[16]
  %vm{l} = div %v{l}, %n{l}
  %e{l} = constant {e} : f32[16]
  %ve{l} = add %vm{l}, %e{l}
  %r{l} = rsqrt %ve{l}
  %rb{l} = broadcast %r{l} {{dims=[0]}} : f32[16,32]
  %z{l} = mul %c{l}, %rb{l}
  %p{l} = dot_general %z{l}, %w{l} {{lhs_contract=[1], rhs_contract=[0]}} : f32[16,32]
  %t{l} = tanh %p{l}
  %h{l} = add %{h}, %t{l}
"
        ));
        h = format!("h{l}");
    }
    s.push_str(&format!("  %y = add %{h}, %{h}\n  return %y\n}}\n"));
    s
}

/// `pjc compile SRC -o OUT` with `args` and `envs` (and none of the
/// cache's variables from the test's own environment).
fn pjc_compile(src: &Path, out: &Path, args: &[&str], envs: &[(&str, &OsStr)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pjc"));
    c.arg("compile").arg(src).arg("-o").arg(out).args(args);
    c.env_remove("PJC_CACHE").env_remove("PJC_CACHE_SIZE").env_remove("PJC_JOBS");
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// [`pjc_compile`] with `--timings`.
fn compile(src: &Path, out: &Path, args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let envs: Vec<(&str, &OsStr)> = envs.iter().map(|&(k, v)| (k, v.as_os_str())).collect();
    pjc_compile(src, out, &[&["--timings"], args].concat(), &envs)
}

fn ok(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "pjc compile failed ({:?}):\n{err}", o.status.code());
    err
}

/// Per target in `--timings`: (name, total, distinct, compiled, cached).
fn counts(timings: &str) -> Vec<(String, usize, usize, usize, usize)> {
    timings
        .lines()
        .filter(|l| l.contains(" kernels: "))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let num = |after: &str| -> usize {
                let i = words.iter().position(|w| w.trim_end_matches([',', ';']) == after).unwrap_or_else(|| panic!("no '{after}' in {l}"));
                words[i - 1].parse().unwrap_or_else(|_| panic!("{l}"))
            };
            (words[0].to_string(), num("total"), num("distinct"), num("compiled"), num("cached"))
        })
        .collect()
}

#[test]
fn parallel_and_cached_executables_are_bitwise_the_serial_uncached_one() {
    let dir = scratch();
    let src = dir.join("stack.pir");
    std::fs::write(&src, stack(6, "1e-05")).unwrap();
    let cache = dir.join("cache");
    let serial = dir.join("serial.bin");
    let t = ok(&compile(&src, &serial, &["-j", "1", "--no-cache"], &[]));
    assert!(t.contains("code generation: 1 thread(s), LLVM loop passes (PTX default<O2>), no cache"), "{t}");
    let c = counts(&t);
    assert!(!c.is_empty(), "{t}");
    for (target, total, distinct, compiled, cached) in &c {
        // Six blocks of one shape: far fewer bodies than kernels.
        assert!(*distinct * 3 <= *total, "{target}: {total} kernels, {distinct} distinct\n{t}");
        assert_eq!((*compiled, *cached), (*distinct, 0), "{target}\n{t}");
    }
    assert!(!cache.exists());
    let cold = dir.join("cold.bin");
    let t = ok(&compile(&src, &cold, &["-j", "4"], &[("PJC_CACHE_DIR", &cache)]));
    for (target, _, distinct, compiled, cached) in counts(&t) {
        assert_eq!((compiled, cached), (distinct, 0), "{target}\n{t}");
    }
    let warm = dir.join("warm.bin");
    let t = ok(&compile(&src, &warm, &["-j", "3"], &[("PJC_CACHE_DIR", &cache)]));
    for (target, _, distinct, compiled, cached) in counts(&t) {
        assert_eq!((compiled, cached), (0, distinct), "{target}\n{t}");
    }
    let bytes = |p: &Path| std::fs::read(p).unwrap();
    assert!(bytes(&serial) == bytes(&cold), "the parallel compile with a cold cache differs from the serial one");
    assert!(bytes(&serial) == bytes(&warm), "the compile from the cache differs from the serial one");

    // A slightly edited program: only the edited kernel is compiled again.
    let edited = dir.join("edited.pir");
    std::fs::write(&edited, stack(6, "2e-05")).unwrap();
    let t = ok(&compile(&edited, &dir.join("edited.bin"), &[], &[("PJC_CACHE_DIR", &cache)]));
    for (target, _, distinct, compiled, cached) in counts(&t) {
        assert!((1..=2).contains(&compiled) && compiled + cached == distinct, "{target}: {compiled} compiled, {cached} cached\n{t}");
    }

    // The executable runs: every kernel name reaches its body's code.
    let x = pjc_tensor::Tensor::new(vec![16, 32], pjc_tensor::Buf::F32((0..512).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect()));
    let mut inputs = vec![("x".to_string(), x)];
    for l in 0..6 {
        let w = pjc_tensor::Tensor::new(vec![32, 32], pjc_tensor::Buf::F32((0..1024).map(|i| ((i * 53 + l * 11) % 97) as f32 / 970.0 - 0.05).collect()));
        inputs.push((format!("w{l}"), w));
    }
    let args = dir.join("inputs.safetensors");
    pjc_tensor::write_safetensors(&args, &inputs).unwrap();
    let out = dir.join("out.safetensors");
    let o = Command::new(&warm).arg("--inputs").arg(&args).arg("--output").arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = dir.join("want.safetensors");
    let o = Command::new(env!("CARGO_BIN_EXE_pjc")).arg("eval").arg(&src).arg("--inputs").arg(&args).arg("--output").arg(&want).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = pjc_tensor::read_safetensors(&out).unwrap();
    let exp = pjc_tensor::read_safetensors(&want).unwrap();
    let (pjc_tensor::Buf::F32(g), pjc_tensor::Buf::F32(e)) = (&got[0].1.data, &exp[0].1.data) else { panic!("f32 results") };
    let scale = e.iter().fold(0f32, |m, v| m.max(v.abs()));
    for (i, (a, b)) in g.iter().zip(e).enumerate() {
        assert!((a - b).abs() <= 1e-5 * scale, "y[{i}]: executable {a}, eval {b}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `-O` levels are part of the cache key: each level's code is its own, a
/// level that is not one is one error line.
#[test]
fn optimization_levels_have_their_own_cache_entries() {
    let dir = scratch();
    let src = dir.join("stack.pir");
    std::fs::write(&src, stack(2, "1e-05")).unwrap();
    let cache = dir.join("cache");
    let env = [("PJC_CACHE_DIR", cache.as_path())];
    let dflt = ok(&compile(&src, &dir.join("loops.bin"), &[], &env));
    assert!(dflt.contains("LLVM loop passes (PTX default<O2>)"), "{dflt}");
    let o1 = ok(&compile(&src, &dir.join("o1.bin"), &["-O1"], &env));
    assert!(o1.contains("LLVM default<O1>"), "{o1}");
    for (target, _, distinct, compiled, cached) in counts(&o1) {
        assert_eq!((compiled, cached), (distinct, 0), "{target}: -O1 must not reuse the default level's code\n{o1}");
    }
    // -O2 shares only the PTX with the default level (the same pipeline there).
    let o2 = ok(&compile(&src, &dir.join("o2.bin"), &["-O2"], &env));
    assert!(o2.contains("LLVM default<O2>"), "{o2}");
    for (target, _, distinct, compiled, cached) in counts(&o2) {
        let want = if target.starts_with("sm_") { (0, distinct) } else { (distinct, 0) };
        assert_eq!((compiled, cached), want, "{target}\n{o2}");
    }
    let again = ok(&compile(&src, &dir.join("loops2.bin"), &["-O", "loops"], &env));
    for (target, _, distinct, _, cached) in counts(&again) {
        assert_eq!(cached, distinct, "{target}\n{again}");
    }
    let bytes = |n: &str| std::fs::read(dir.join(n)).unwrap();
    assert!(bytes("loops.bin") == bytes("loops2.bin"));
    assert!(bytes("loops.bin") != bytes("o1.bin"));
    assert!(bytes("loops.bin") != bytes("o2.bin"));
    let bad = compile(&src, &dir.join("o4.bin"), &["-O4"], &env);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert_eq!(err.trim(), "error: -O4: the optimization level is loops, 1, 2 or 3");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn concurrent_compiles_share_one_cache() {
    let dir = scratch();
    let src = dir.join("stack.pir");
    std::fs::write(&src, stack(3, "1e-05")).unwrap();
    let cache = dir.join("cache");
    let children: Vec<_> = (0..4)
        .map(|i| {
            let mut c = Command::new(env!("CARGO_BIN_EXE_pjc"));
            c.arg("compile").arg(&src).arg("-o").arg(dir.join(format!("c{i}.bin"))).args(["-j", "2"]).env("PJC_CACHE_DIR", &cache);
            c.stderr(std::process::Stdio::piped()).spawn().unwrap()
        })
        .collect();
    for ch in children {
        let o = ch.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let first = std::fs::read(dir.join("c0.bin")).unwrap();
    for i in 1..4 {
        assert!(std::fs::read(dir.join(format!("c{i}.bin"))).unwrap() == first, "compile {i} differs");
    }
    // No temporary file is left behind.
    let tmp: Vec<_> = std::fs::read_dir(cache.join("v1/tmp")).map(|r| r.flatten().collect()).unwrap_or_default();
    assert!(tmp.is_empty(), "{tmp:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_size_bound_holds_and_bad_caches_are_not_fatal() {
    let dir = scratch();
    let src = dir.join("stack.pir");
    std::fs::write(&src, stack(2, "1e-05")).unwrap();
    let cache = dir.join("cache");
    let entries = |d: &Path| -> (usize, u64) {
        let mut n = (0, 0);
        if let Ok(top) = std::fs::read_dir(d.join("v1")) {
            for sub in top.flatten().filter(|s| s.file_name() != "tmp") {
                for e in std::fs::read_dir(sub.path()).unwrap().flatten() {
                    n.0 += 1;
                    n.1 += e.metadata().unwrap().len();
                }
            }
        }
        n
    };
    // A bound of 20 KiB: after the compile the cache holds at most 80 % of it.
    let o = pjc_compile(&src, &dir.join("a.bin"), &[], &[("PJC_CACHE_DIR", cache.as_os_str()), ("PJC_CACHE_SIZE", "20K".as_ref())]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (n, bytes) = entries(&cache);
    assert!(bytes <= 20 * 1024 * 8 / 10, "{n} entries, {bytes} bytes");
    // Without the bound every kernel is kept.
    let big = dir.join("big");
    let o = pjc_compile(&src, &dir.join("b.bin"), &[], &[("PJC_CACHE_DIR", big.as_os_str())]);
    assert!(o.status.success());
    assert!(entries(&big).1 > bytes, "{:?} vs {bytes}", entries(&big));
    // A size that is not one: exit 2, one line.
    let o = pjc_compile(&src, &dir.join("c.bin"), &[], &[("PJC_CACHE_SIZE", "lots".as_ref())]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim(), "error: PJC_CACHE_SIZE=lots is not a size (bytes, or a number with K, M or G)");
    // A cache directory that cannot be created: one warning, a working executable.
    let blocked = dir.join("a-file");
    std::fs::write(&blocked, b"not a directory").unwrap();
    let o = pjc_compile(&src, &dir.join("d.bin"), &[], &[("PJC_CACHE_DIR", blocked.join("cache").as_os_str())]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("warning: the compile cache in ") && err.contains("is not used for new kernels"), "{err}");
    assert!(std::fs::read(dir.join("d.bin")).unwrap() == std::fs::read(dir.join("b.bin")).unwrap());
    // PJC_CACHE=off: nothing written.
    let off = dir.join("off");
    let o = pjc_compile(&src, &dir.join("e.bin"), &[], &[("PJC_CACHE_DIR", off.as_os_str()), ("PJC_CACHE", "off".as_ref())]);
    assert!(o.status.success());
    assert!(!off.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
