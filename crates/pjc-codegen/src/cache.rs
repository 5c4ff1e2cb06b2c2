//! The persistent compile cache: the generated code of one kernel body for
//! one target (an x86-64 object for a CPU level, a PTX text for a GPU
//! architecture), so that a second compile of the same or a slightly edited
//! model takes every unchanged kernel from disk instead of from LLVM.
//!
//! - **Where**: `$PJC_CACHE_DIR`, else `$XDG_CACHE_HOME/pjc`, else
//!   `~/.cache/pjc` ([`Cache::default_dir`]). `pjc compile --no-cache` or
//!   `PJC_CACHE=off` turns it off.
//! - **Key**: BLAKE3 of the kernel's body hash ([`pjc_plan::Kernel::body_hash`]),
//!   the target (CPU level or GPU architecture) and a fingerprint of the code
//!   generator: pjc's version, the source of the lowering and both backends,
//!   LLVM's version, whether libmvec is used (x86) and libdevice's bytes
//!   (PTX). Whatever would make LLVM produce other code is in the key, so an
//!   entry is only ever reused for exactly the code it holds.
//! - **Entries** are files `v1/KK/KEY` holding a magic, the BLAKE3 of the
//!   payload and the payload. A damaged entry (hash mismatch, cut short) is a
//!   miss and is replaced.
//! - **Concurrent compiles**: an entry is written to a private temporary
//!   file in the cache and renamed into place (atomic on one file system), so
//!   a reader sees a whole entry or none; two compiles writing one key write
//!   the same bytes.
//! - **Size bound**: `PJC_CACHE_SIZE` (bytes, or with a K/M/G suffix; default
//!   [`DEFAULT_LIMIT`]). After a compile that added entries, the least
//!   recently used ones (by modification time, which a hit refreshes) are
//!   removed until the cache holds at most 80 % of the bound.
//!
//! The cache is an accelerator only: an entry that cannot be read is a miss,
//! one that cannot be written is skipped (with one warning per compile), and
//! the compiled artefact is bitwise the same with or without it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// The default size bound: 1 GiB.
pub const DEFAULT_LIMIT: u64 = 1 << 30;

const MAGIC: &[u8; 8] = b"PJCKC\x00\x01\x00";
/// The layout version: the directory entries live under.
const LAYOUT: &str = "v1";

/// An open compile cache directory.
pub struct Cache {
    dir: PathBuf,
    limit: u64,
    wrote: AtomicBool,
    warned: AtomicBool,
    /// Bytes written by this process (for the size check after a compile).
    written: AtomicU64,
    /// Why writing failed, the first time.
    error: Mutex<Option<String>>,
}

pub use pjc_tensor::parse_size;

impl Cache {
    /// The cache directory when nothing moves it: `$PJC_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/pjc`, else `$HOME/.cache/pjc`.
    pub fn default_dir() -> Option<PathBuf> {
        let var = |v: &str| std::env::var_os(v).filter(|s| !s.is_empty()).map(PathBuf::from);
        var("PJC_CACHE_DIR")
            .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("pjc")))
            .or_else(|| var("HOME").map(|h| h.join(".cache/pjc")))
    }

    /// The cache the environment asks for: None when `PJC_CACHE` is `off`
    /// (or `0`, `no`, `false`) or no directory can be named; an error for a
    /// `PJC_CACHE_SIZE` that is not a size.
    pub fn from_env() -> Result<Option<Cache>, String> {
        if let Ok(v) = std::env::var("PJC_CACHE") {
            if matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "0" | "no" | "false") {
                return Ok(None);
            }
        }
        let limit = match std::env::var("PJC_CACHE_SIZE") {
            Ok(v) => parse_size(&v).ok_or_else(|| format!("PJC_CACHE_SIZE={v} is not a size (bytes, or a number with K, M or G)"))?,
            Err(_) => DEFAULT_LIMIT,
        };
        Ok(Cache::default_dir().map(|d| Cache::open(d, limit)))
    }

    /// The cache in `dir` (created when the first entry is written) bounded
    /// to `limit` bytes.
    pub fn open(dir: PathBuf, limit: u64) -> Cache {
        Cache {
            dir,
            limit,
            wrote: AtomicBool::new(false),
            warned: AtomicBool::new(false),
            written: AtomicU64::new(0),
            error: Mutex::new(None),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(LAYOUT).join(&key[..2]).join(key)
    }

    /// The payload stored under `key`, if a whole, undamaged entry is there
    /// (its modification time is refreshed: it was used).
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        let path = self.path(key);
        let mut bytes = std::fs::read(&path).ok()?;
        if bytes.len() < 40 || &bytes[..8] != MAGIC || blake3::hash(&bytes[40..]).as_bytes() != &bytes[8..40] {
            let _ = std::fs::remove_file(&path);
            return None;
        }
        if let Ok(f) = std::fs::File::options().append(true).open(&path) {
            let _ = f.set_modified(std::time::SystemTime::now());
        }
        bytes.drain(..40);
        Some(bytes)
    }

    /// Stores `payload` under `key` (best effort: a failure is remembered
    /// for [`Cache::take_error`] and the compile goes on).
    pub fn put(&self, key: &str, payload: &[u8]) {
        if let Err(e) = self.try_put(key, payload) {
            let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                *slot = Some(e);
            }
        }
    }

    fn try_put(&self, key: &str, payload: &[u8]) -> Result<(), String> {
        use std::io::Write;
        let path = self.path(key);
        let parent = path.parent().expect("an entry has a directory");
        let tmpdir = self.dir.join(LAYOUT).join("tmp");
        for d in [parent, &tmpdir] {
            std::fs::create_dir_all(d).map_err(|e| format!("cannot create '{}': {e}", d.display()))?;
        }
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let tmp = tmpdir.join(format!("{key}.{}.{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed)));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(MAGIC)?;
            f.write_all(blake3::hash(payload).as_bytes())?;
            f.write_all(payload)?;
            f.sync_data()?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write '{}': {e}", path.display())
        })?;
        self.wrote.store(true, Ordering::Relaxed);
        self.written.fetch_add(payload.len() as u64 + 40, Ordering::Relaxed);
        Ok(())
    }

    /// The first write failure of this compile, once (for one warning).
    pub fn take_error(&self) -> Option<String> {
        if self.warned.swap(true, Ordering::Relaxed) {
            return None;
        }
        self.error.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Keeps the cache within its bound after a compile that added entries:
    /// removes the least recently used entries until at most 80 % of it is
    /// used. Returns the number of entries removed.
    pub fn trim(&self) -> usize {
        if !self.wrote.load(Ordering::Relaxed) {
            return 0;
        }
        let mut entries = vec![];
        let mut total = 0u64;
        let Ok(top) = std::fs::read_dir(self.dir.join(LAYOUT)) else { return 0 };
        for sub in top.flatten() {
            if sub.file_name() == "tmp" {
                // Temporary files older than a day were left by a killed compile.
                if let Ok(rd) = std::fs::read_dir(sub.path()) {
                    for e in rd.flatten() {
                        let old = e.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|a| a.as_secs() > 86_400);
                        if old {
                            let _ = std::fs::remove_file(e.path());
                        }
                    }
                }
                continue;
            }
            let Ok(rd) = std::fs::read_dir(sub.path()) else { continue };
            for e in rd.flatten() {
                if let Ok(m) = e.metadata() {
                    if m.is_file() {
                        total += m.len();
                        entries.push((m.modified().unwrap_or(std::time::UNIX_EPOCH), m.len(), e.path()));
                    }
                }
            }
        }
        if total <= self.limit {
            return 0;
        }
        entries.sort();
        let goal = self.limit / 10 * 8;
        let mut removed = 0;
        for (_, len, path) in entries {
            if total <= goal {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= len;
                removed += 1;
            }
        }
        removed
    }
}

/// A cache key: BLAKE3 of the parts, in hex.
pub fn key(parts: &[&[u8]]) -> String {
    let mut h = blake3::Hasher::new();
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pjc-cache-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("123"), Some(123));
        assert_eq!(parse_size("2K"), Some(2048));
        assert_eq!(parse_size(" 3m "), Some(3 << 20));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("1X"), None);
        assert_eq!(parse_size("many"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn entries_round_trip_and_damage_is_a_miss() {
        let d = tempdir("rt");
        let c = Cache::open(d.clone(), DEFAULT_LIMIT);
        let k = key(&[b"body", b"x86-64-v3"]);
        assert_eq!(c.get(&k), None);
        c.put(&k, b"object bytes");
        assert_eq!(c.get(&k).as_deref(), Some(&b"object bytes"[..]));
        // A flipped payload byte fails the hash: a miss, and the entry goes.
        let p = c.path(&k);
        let mut b = std::fs::read(&p).unwrap();
        let last = b.len() - 1;
        b[last] ^= 1;
        std::fs::write(&p, &b).unwrap();
        assert_eq!(c.get(&k), None);
        assert!(!p.exists());
        // Cut short: a miss.
        c.put(&k, b"object bytes");
        std::fs::write(&p, &std::fs::read(&p).unwrap()[..20]).unwrap();
        assert_eq!(c.get(&k), None);
        assert_eq!(c.take_error(), None);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_bound_removes_the_least_recently_used() {
        let d = tempdir("trim");
        let c = Cache::open(d.clone(), 1000);
        let keys: Vec<String> = (0..10).map(|i| key(&[format!("k{i}").as_bytes()])).collect();
        for (i, k) in keys.iter().enumerate() {
            c.put(k, &[i as u8; 160]);
            // Distinct modification times, oldest first.
            let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000 + i as u64);
            std::fs::File::options().append(true).open(c.path(k)).unwrap().set_modified(t).unwrap();
        }
        // 10 entries of 200 bytes: 2000 > 1000; down to at most 800.
        let removed = c.trim();
        assert_eq!(removed, 6);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(c.path(k).exists(), i >= 6, "entry {i}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn an_unwritable_cache_is_skipped_with_one_error() {
        let d = tempdir("ro");
        std::fs::write(&d, b"a file, not a directory").unwrap();
        let c = Cache::open(d.clone(), DEFAULT_LIMIT);
        let k = key(&[b"x"]);
        c.put(&k, b"payload");
        assert_eq!(c.get(&k), None);
        assert!(c.take_error().is_some_and(|e| e.contains("cannot create")));
        assert_eq!(c.take_error(), None);
        let _ = std::fs::remove_file(&d);
    }
}
