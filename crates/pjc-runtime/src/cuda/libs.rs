//! Finding the CUDA libraries at run time. The executable links none of them,
//! so it starts on machines without CUDA; this module decides, once per
//! process, whether the driver, cuBLAS, cuDNN and NCCL can be loaded, and says
//! clearly which one is missing and how to provide it.
//!
//! - The driver (`libcuda.so.1`) comes with the NVIDIA driver and is always on
//!   the system loader's path when there is one: only cudarc's own check runs
//!   (cudarc would panic on first use without it).
//! - cuBLAS is loaded by cudarc, which asks the loader for `libcublas.so`,
//!   `.so.13`, `.so.12`, ... (the candidates of the `cuda-13000` feature). When
//!   none is on the loader's path, the directories of [`search_dirs`] are
//!   searched for `libcublasLt.so.{13,12}` + `libcublas.so.{13,12}`, which are
//!   loaded by full path and kept loaded: the loader then answers cudarc's
//!   `libcublas.so.13` by soname with the copy already in the process.
//! - cuDNN likewise ([`ensure_cudnn`]: `libcudnn.so.9` and its
//!   sub-libraries from [`search_dirs`] when the loader lacks it). Without it
//!   convolutions run their generated device kernels.
//! - NCCL is loaded here, not by cudarc (whose candidates never include
//!   `libnccl.so.2`, the name NVIDIA's packages ship): `libnccl.so.2` or
//!   `libnccl.so` from the loader's path, else from [`search_dirs`]; its few
//!   entry points are resolved into [`Nccl`].

use cudarc::nccl::sys::ncclUniqueId;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where to look for a library the loader does not find by name, in order:
/// `PJC_CUDA_LIB_PATH` (colon-separated), `LD_LIBRARY_PATH`, every
/// `nvidia/*/lib` of the Python installations we can see (`VIRTUAL_ENV`,
/// `CONDA_PREFIX`, the prefixes of the `PATH` entries, `~/.local`,
/// `/usr/local`, `/usr`, `/opt/conda`; `lib*/python3*/{site,dist}-packages`,
/// where NVIDIA's pip packages put `libcublas.so.13`, `libnccl.so.2`, ...),
/// then `CUDA_HOME`/`CUDA_PATH`, `/usr/local/cuda` (`lib64`,
/// `targets/x86_64-linux/lib`).
pub fn search_dirs() -> Vec<PathBuf> {
    search_dirs_with(&|k| std::env::var(k).ok())
}

fn search_dirs_with(env: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = vec![];
    let split =
        |v: Option<String>| -> Vec<PathBuf> { v.map(|s| s.split(':').filter(|p| !p.is_empty()).map(PathBuf::from).collect()).unwrap_or_default() };
    dirs.extend(split(env("PJC_CUDA_LIB_PATH")));
    dirs.extend(split(env("LD_LIBRARY_PATH")));
    let mut prefixes: Vec<PathBuf> = vec![];
    for k in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        prefixes.extend(env(k).map(PathBuf::from));
    }
    for bin in split(env("PATH")) {
        if let Some(p) = bin.parent() {
            prefixes.push(p.to_path_buf());
        }
    }
    prefixes.extend(env("HOME").map(|h| Path::new(&h).join(".local")));
    prefixes.extend(["/usr/local", "/usr", "/opt/conda"].map(PathBuf::from));
    let mut seen = std::collections::HashSet::new();
    for prefix in prefixes {
        if !seen.insert(prefix.clone()) {
            continue;
        }
        for lib in ["lib", "lib64"] {
            for py in subdirs(&prefix.join(lib)).into_iter().filter(|p| file_name(p).starts_with("python3")) {
                for pkgs in ["site-packages", "dist-packages"] {
                    for pkg in subdirs(&py.join(pkgs).join("nvidia")) {
                        dirs.push(pkg.join("lib"));
                    }
                }
            }
        }
    }
    // Debian's python3-* packages put modules in /usr/lib/python3/dist-packages.
    for pkg in subdirs(Path::new("/usr/lib/python3/dist-packages/nvidia")) {
        dirs.push(pkg.join("lib"));
    }
    for k in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(h) = env(k) {
            dirs.push(Path::new(&h).join("lib64"));
        }
    }
    dirs.push("/usr/local/cuda/lib64".into());
    dirs.push("/usr/local/cuda/targets/x86_64-linux/lib".into());
    dirs.retain(|d| d.is_dir());
    let mut unique = std::collections::HashSet::new();
    dirs.retain(|d| unique.insert(d.clone()));
    dirs
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Subdirectories of `dir`, sorted (none if it is not readable).
fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect()).unwrap_or_default();
    v.sort();
    v
}

/// The first `dir/name` that exists, directories first, then names in order.
pub fn find_in(dirs: &[PathBuf], names: &[&str]) -> Option<PathBuf> {
    dirs.iter().flat_map(|d| names.iter().map(move |n| d.join(n))).find(|p| p.is_file())
}

/// Libraries this module loaded by path, kept for the life of the process.
static KEPT: std::sync::Mutex<Vec<libloading::Library>> = std::sync::Mutex::new(Vec::new());

fn keep(lib: libloading::Library) {
    KEPT.lock().unwrap_or_else(|e| e.into_inner()).push(lib);
}

/// Whether the CUDA driver library can be loaded (without it, cudarc panics).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the driver library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Makes cuBLAS loadable by cudarc (see the module docs), once per process.
pub fn ensure_cublas() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        // SAFETY: only tries to dlopen the library.
        if unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Ok(());
        }
        let dirs = search_dirs();
        for major in ["13", "12"] {
            let blas = format!("libcublas.so.{major}");
            let Some(path) = find_in(&dirs, &[&blas]) else { continue };
            let dir = path.parent().expect("a file has a directory");
            // cuBLAS needs cuBLASLt of the same version: load it first, by
            // path, so that cuBLAS's dependency resolves to it by soname.
            let lt = dir.join(format!("libcublasLt.so.{major}"));
            // SAFETY: loading NVIDIA's libraries runs only their initializers.
            unsafe {
                if lt.is_file() {
                    keep(libloading::Library::new(&lt).map_err(|e| format!("cannot load {}: {e}", lt.display()))?);
                }
                keep(libloading::Library::new(&path).map_err(|e| format!("cannot load {}: {e}", path.display()))?);
            }
            if unsafe { cudarc::cublas::sys::is_culib_present() } {
                return Ok(());
            }
        }
        Err(format!(
            "cuBLAS (libcublas.so.13 or libcublas.so.12) was not found: install it (NVIDIA's CUDA toolkit, or the pip package nvidia-cublas for CUDA 13 / nvidia-cublas-cu12) and put its directory in LD_LIBRARY_PATH or PJC_CUDA_LIB_PATH; searched the loader's path and {}",
            describe(&dirs)
        ))
    })
    .clone()
}

/// cuDNN's sub-libraries (cuDNN 9), loaded before `libcudnn.so.9` when it
/// is loaded by path, so that its own `dlopen`s find them by soname.
const CUDNN_PARTS: [&str; 7] = ["graph", "engines_precompiled", "engines_runtime_compiled", "heuristic", "ops", "cnn", "adv"];

/// Makes cuDNN loadable by cudarc, once per process, like [`ensure_cublas`]:
/// from the loader's path, else `libcudnn.so.9` (or `.8`) from
/// [`search_dirs`] (the pip package nvidia-cudnn-cu12/-cu13 puts it under
/// `nvidia/cudnn/lib`), its sub-libraries first. Returns cuDNN's version.
pub fn ensure_cudnn() -> Result<usize, String> {
    static DONE: OnceLock<Result<usize, String>> = OnceLock::new();
    DONE.get_or_init(|| {
        let version = || {
            // SAFETY: the library is loaded; the call only reads a constant.
            let v = unsafe { cudarc::cudnn::sys::cudnnGetVersion() };
            if v < 8000 {
                Err(format!("cuDNN {v} is too old: cuDNN 8 or 9 is needed"))
            } else {
                Ok(v)
            }
        };
        // SAFETY: only tries to dlopen the library.
        if unsafe { cudarc::cudnn::sys::is_culib_present() } {
            return version();
        }
        let dirs = search_dirs();
        for major in ["9", "8"] {
            let name = format!("libcudnn.so.{major}");
            let Some(path) = find_in(&dirs, &[&name]) else { continue };
            let dir = path.parent().expect("a file has a directory");
            // SAFETY: loading NVIDIA's libraries runs only their initializers.
            unsafe {
                for part in CUDNN_PARTS {
                    let p = dir.join(format!("libcudnn_{part}.so.{major}"));
                    // A part that does not load (a missing optional
                    // dependency) is left to cuDNN, which reports it.
                    if let Ok(lib) = libloading::Library::new(&p) {
                        keep(lib);
                    }
                }
                keep(libloading::Library::new(&path).map_err(|e| format!("cannot load {}: {e}", path.display()))?);
            }
            if unsafe { cudarc::cudnn::sys::is_culib_present() } {
                return version();
            }
        }
        Err(format!(
            "cuDNN (libcudnn.so.9 or libcudnn.so.8) was not found: install it (the pip package nvidia-cudnn-cu12 or nvidia-cudnn-cu13, or NVIDIA's cudnn9 system package) and put its directory in LD_LIBRARY_PATH or PJC_CUDA_LIB_PATH; searched the loader's path and {}",
            describe(&dirs)
        ))
    })
    .clone()
}

fn describe(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        "no other directory (none of the usual ones exists)".into()
    } else {
        dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
    }
}

pub type Comm = *mut c_void;
type Stream = *mut c_void;

/// NCCL's entry points (C ABI; enums and results as `int`).
pub struct Nccl {
    pub get_unique_id: unsafe extern "C" fn(*mut ncclUniqueId) -> c_int,
    pub comm_init_rank: unsafe extern "C" fn(*mut Comm, c_int, ncclUniqueId, c_int) -> c_int,
    pub comm_destroy: unsafe extern "C" fn(Comm) -> c_int,
    pub all_reduce: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, Stream) -> c_int,
    pub all_gather: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, Comm, Stream) -> c_int,
    pub reduce_scatter: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, Stream) -> c_int,
    pub send: unsafe extern "C" fn(*const c_void, usize, c_int, c_int, Comm, Stream) -> c_int,
    pub recv: unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, Comm, Stream) -> c_int,
    pub group_start: unsafe extern "C" fn() -> c_int,
    pub group_end: unsafe extern "C" fn() -> c_int,
    get_error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    get_version: unsafe extern "C" fn(*mut c_int) -> c_int,
    /// Where it was loaded from (for messages).
    pub origin: String,
    _lib: libloading::Library,
}

impl Nccl {
    /// `Ok` for ncclSuccess, else `what` with NCCL's own message.
    pub fn check(&self, code: c_int, what: &str) -> Result<(), String> {
        if code == 0 {
            return Ok(());
        }
        // SAFETY: NCCL returns a static string for any code.
        let msg = unsafe {
            let p = (self.get_error_string)(code);
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        Err(format!("{what} failed with NCCL error {code} ({msg})"))
    }

    /// NCCL's version code (e.g. 22703 for 2.27.3).
    pub fn version(&self) -> Option<i32> {
        let mut v = 0;
        // SAFETY: writes one int.
        (unsafe { (self.get_version)(&mut v) } == 0).then_some(v)
    }
}

/// NCCL, loaded once per process (see the module docs).
pub fn nccl() -> Result<&'static Nccl, String> {
    static NCCL: OnceLock<Result<Nccl, String>> = OnceLock::new();
    NCCL.get_or_init(load_nccl).as_ref().map_err(|e| e.clone())
}

fn load_nccl() -> Result<Nccl, String> {
    const NAMES: [&str; 2] = ["libnccl.so.2", "libnccl.so"];
    // SAFETY: loading NCCL runs only its initializers.
    let by_name = NAMES.iter().find_map(|n| unsafe { libloading::Library::new(*n) }.ok().map(|l| (l, n.to_string())));
    let (lib, origin) = match by_name {
        Some(x) => x,
        None => {
            let dirs = search_dirs();
            match find_in(&dirs, &NAMES) {
                Some(p) => {
                    let lib = unsafe { libloading::Library::new(&p) }.map_err(|e| format!("cannot load {}: {e}", p.display()))?;
                    (lib, p.display().to_string())
                }
                None => {
                    return Err(format!(
                        "NCCL (libnccl.so.2) was not found: install it (the pip package nvidia-nccl-cu13 or nvidia-nccl-cu12, or NVIDIA's libnccl2 system package) and put its directory in LD_LIBRARY_PATH or PJC_CUDA_LIB_PATH; searched the loader's path and {}",
                        describe(&dirs)
                    ))
                }
            }
        }
    };
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the types are NCCL's published C prototypes.
            *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("{origin} lacks {}: {e} (NCCL 2.7 or newer is needed)", $name))?
        };
    }
    Ok(Nccl {
        get_unique_id: sym!("ncclGetUniqueId"),
        comm_init_rank: sym!("ncclCommInitRank"),
        comm_destroy: sym!("ncclCommDestroy"),
        all_reduce: sym!("ncclAllReduce"),
        all_gather: sym!("ncclAllGather"),
        reduce_scatter: sym!("ncclReduceScatter"),
        send: sym!("ncclSend"),
        recv: sym!("ncclRecv"),
        group_start: sym!("ncclGroupStart"),
        group_end: sym!("ncclGroupEnd"),
        get_error_string: sym!("ncclGetErrorString"),
        get_version: sym!("ncclGetVersion"),
        origin: origin.clone(),
        _lib: lib,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_pip_packages_under_a_virtual_env() {
        let root = std::env::temp_dir().join(format!("pjc-cuda-libs-{}", std::process::id()));
        let lib = root.join("lib/python3.12/site-packages/nvidia/nccl/lib");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("libnccl.so.2"), b"").unwrap();
        let extra = root.join("extra");
        std::fs::create_dir_all(&extra).unwrap();
        let r = root.to_string_lossy().into_owned();
        let e = extra.to_string_lossy().into_owned();
        let env = move |k: &str| match k {
            "VIRTUAL_ENV" => Some(r.clone()),
            "PJC_CUDA_LIB_PATH" => Some(format!("{e}:/nonexistent")),
            _ => None,
        };
        let dirs = search_dirs_with(&env);
        // The explicit path comes first; missing directories are dropped.
        assert_eq!(dirs[0], extra);
        assert!(dirs.contains(&lib), "{dirs:?}");
        assert!(!dirs.iter().any(|d| d.ends_with("nonexistent")));
        assert_eq!(find_in(&dirs, &["libnccl.so.2", "libnccl.so"]), Some(lib.join("libnccl.so.2")));
        assert_eq!(find_in(&dirs, &["libcublas.so.13"]), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
