//! The rayon thread pools the library steps run on.

/// A thread pool of `threads` threads, built once per process and thread
/// count (the global pool has one thread per core, more than a rank's share
/// when several ranks share a machine).
pub(crate) fn pool(threads: usize) -> Option<&'static rayon::ThreadPool> {
    static POOLS: std::sync::Mutex<Vec<(usize, &'static rayon::ThreadPool)>> = std::sync::Mutex::new(Vec::new());
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, p)) = pools.iter().find(|(t, _)| *t == threads) {
        return Some(p);
    }
    let p: &'static rayon::ThreadPool = Box::leak(Box::new(rayon::ThreadPoolBuilder::new().num_threads(threads).build().ok()?));
    pools.push((threads, p));
    Some(p)
}
