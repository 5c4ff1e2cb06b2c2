//! The process world: MPI when the program was launched by `mpirun` (or any
//! launcher that sets OpenMPI's or PMIx's rank variables), a single process
//! without MPI otherwise. Rank r is mesh device r (row-major over the axes).
//! Also what every phase of a run needs from it: [`agree`] (ranks take the
//! same path after a phase that may fail on some of them) and MPI's
//! per-call byte limit.

use crate::RuntimeError;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;

/// The processes of one run.
pub struct World {
    rank: usize,
    size: usize,
    /// Processes on this node (for picking a thread count or a GPU).
    local_size: usize,
    /// MPI gave at least MPI_THREAD_SERIALIZED.
    serialized: bool,
    mpi: Option<Mpi>,
}

/// The MPI state; the world communicator is dropped before the universe
/// (which finalizes MPI) by field order.
pub(crate) struct Mpi {
    pub(crate) world: SimpleCommunicator,
    _universe: mpi::environment::Universe,
}

/// MPI counts are C ints: one call moves at most this many bytes.
pub(crate) fn check_count(bytes: usize) -> Result<(), RuntimeError> {
    if bytes > i32::MAX as usize {
        return Err(RuntimeError::Env(format!(
            "a collective would move {bytes} bytes in one MPI call, more than MPI's limit of {} (not supported yet)",
            i32::MAX
        )));
    }
    Ok(())
}

/// Whether a launcher started this process as one rank of a job.
pub fn launched_by_mpirun() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"].iter().any(|v| std::env::var_os(v).is_some())
}

impl World {
    /// Starts MPI when launched by `mpirun`, otherwise a one-process world.
    /// `PJC_NO_MPI=1` forces the one-process world.
    pub fn init() -> Result<World, RuntimeError> {
        let local_size = std::env::var("OMPI_COMM_WORLD_LOCAL_SIZE").ok().and_then(|s| s.parse().ok()).unwrap_or(1usize).max(1);
        if !launched_by_mpirun() || std::env::var_os("PJC_NO_MPI").is_some() {
            return Ok(World::single());
        }
        // One thread calls MPI at a time: the main thread, or while a plan
        // runs, the thread of its asynchronous collectives (which then runs
        // every collective; kernel threads never call MPI).
        let (universe, provided) = mpi::initialize_with_threading(mpi::Threading::Serialized)
            .ok_or_else(|| RuntimeError::Env("MPI was already initialized in this process".into()))?;
        let world = universe.world();
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        let serialized = matches!(provided, mpi::Threading::Serialized | mpi::Threading::Multiple);
        Ok(World { rank, size, local_size, serialized, mpi: Some(Mpi { world, _universe: universe }) })
    }

    /// A world of one process, without MPI.
    pub fn single() -> World {
        World { rank: 0, size: 1, local_size: 1, serialized: false, mpi: None }
    }

    pub fn rank(&self) -> usize {
        self.rank
    }
    pub fn size(&self) -> usize {
        self.size
    }
    /// Processes of this job on this node.
    pub fn local_size(&self) -> usize {
        self.local_size
    }
    pub fn is_mpi(&self) -> bool {
        self.mpi.is_some()
    }
    /// Whether collectives run on a thread of their own beside the step
    /// loop: MPI must allow calls from another thread than the main one (one
    /// at a time). `PJC_ASYNC_COLLECTIVES=0` turns it off (every collective
    /// then blocks the loop where it starts). Measured on 2 cores with 2
    /// ranks (no core to spare: the thread's MPI polling shares the kernels'
    /// core), 5 runs each: a 4-layer data-parallel MLP 1.55 s against 1.76 s
    /// blocking, other programs the same within noise — so it is on by
    /// default.
    pub fn async_collectives(&self) -> bool {
        self.serialized && std::env::var("PJC_ASYNC_COLLECTIVES").map_or(true, |v| v != "0")
    }
    pub(crate) fn comm(&self) -> Option<&SimpleCommunicator> {
        self.mpi.as_ref().map(|m| &m.world)
    }

    /// Checks that there is one process per mesh device (a clear error naming
    /// both numbers, not a hang or a panic).
    pub fn check_device_count(&self, mesh: &pjc_ir::Mesh) -> Result<(), RuntimeError> {
        let devices = mesh.device_count();
        if devices == self.size as u64 {
            return Ok(());
        }
        let mesh_text = if mesh.axes.is_empty() { "no mesh (one device)".to_string() } else { mesh.to_string() };
        let how = if devices == 1 { "run it without mpirun or with mpirun -np 1".to_string() } else { format!("launch it with mpirun -np {devices}") };
        Err(RuntimeError::Env(format!(
            "the program's {mesh_text} has {devices} device{}, but {} process{} started; {how}",
            if devices == 1 { "" } else { "s" },
            self.size,
            if self.size == 1 { " was" } else { "es were" },
        )))
    }

    /// Threads each process's kernels may use: `PJC_THREADS`, or the cores
    /// shared among this node's processes.
    pub fn kernel_threads(&self) -> usize {
        if let Some(t) = std::env::var("PJC_THREADS").ok().and_then(|s| s.parse::<usize>().ok()) {
            return t.max(1);
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        (cores / self.local_size).max(1)
    }

    /// Waits for every process (no-op without MPI).
    pub fn barrier(&self) {
        if let Some(c) = self.comm() {
            c.barrier();
        }
    }

    /// Ends every process of the job at once with `code` (for failures that
    /// only some ranks see, where waiting for the others would hang).
    pub fn abort(&self, code: i32) -> ! {
        match self.comm() {
            Some(c) => c.abort(code),
            None => std::process::exit(code),
        }
    }

    /// Rank 0 gets every rank's `bytes` (all of the same length), in rank
    /// order; other ranks get None.
    pub fn gather_to_root(&self, bytes: &[u8]) -> Result<Option<Vec<Vec<u8>>>, RuntimeError> {
        let Some(c) = self.comm() else { return Ok(Some(vec![bytes.to_vec()])) };
        check_count(bytes.len() * self.size)?;
        let root = c.process_at_rank(0);
        if self.rank == 0 {
            let mut all = vec![0u8; bytes.len() * self.size];
            root.gather_into_root(bytes, &mut all[..]);
            Ok(Some(if bytes.is_empty() { vec![vec![]; self.size] } else { all.chunks(bytes.len()).map(|c| c.to_vec()).collect() }))
        } else {
            root.gather_into(bytes);
            Ok(None)
        }
    }

    /// Rank 0's `value`, on every rank.
    pub fn broadcast_u64(&self, value: u64) -> u64 {
        let Some(c) = self.comm() else { return value };
        let mut v = value;
        c.process_at_rank(0).broadcast_into(&mut v);
        v
    }

    /// Rank 0 gets every rank's `bytes` (any lengths), in rank order; other
    /// ranks get None.
    pub fn gather_varlen_to_root(&self, bytes: &[u8]) -> Result<Option<Vec<Vec<u8>>>, RuntimeError> {
        if self.comm().is_none() {
            return Ok(Some(vec![bytes.to_vec()]));
        }
        let lens = self.gather_to_root(&(bytes.len() as u64).to_le_bytes())?;
        let max = {
            let m = lens.as_ref().map_or(0, |l| l.iter().map(|b| u64::from_le_bytes(b[..8].try_into().unwrap())).max().unwrap_or(0));
            self.broadcast_u64(m) as usize
        };
        let mut padded = bytes.to_vec();
        padded.resize(max, 0);
        let parts = self.gather_to_root(&padded)?;
        Ok(parts.map(|ps| {
            let lens = lens.expect("rank 0 has the lengths");
            ps.into_iter().zip(lens).map(|(mut p, l)| {
                p.truncate(u64::from_le_bytes(l[..8].try_into().unwrap()) as usize);
                p
            }).collect()
        }))
    }

    /// This machine's name.
    pub fn hostname() -> String {
        std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_else(|_| "localhost".into())
    }

    /// Every rank's `code`, in rank order (so that all take the same path
    /// after a phase that might fail on some ranks only).
    pub fn all_codes(&self, code: u8) -> Vec<u8> {
        let Some(c) = self.comm() else { return vec![code] };
        let mine = [code];
        let mut all = vec![0u8; self.size];
        c.all_gather_into(&mine[..], &mut all[..]);
        all
    }
}

/// Makes every rank take the same path after a phase that may fail on some
/// ranks only: the first failure (by rank) as seen by every rank — the
/// failing rank's own error, or [`RuntimeError::Elsewhere`] on the others.
pub fn agree<T>(world: &World, r: Result<T, RuntimeError>) -> Result<T, RuntimeError> {
    if world.size() == 1 {
        return r;
    }
    let code = match &r {
        Ok(_) => 0u8,
        Err(e) => e.exit_code().clamp(1, 255) as u8,
    };
    let codes = world.all_codes(code);
    match codes.iter().position(|&c| c != 0) {
        None => r,
        Some(first) if first == world.rank() => r,
        Some(first) => Err(RuntimeError::Elsewhere { rank: first, code: codes[first] as i32 }),
    }
}
