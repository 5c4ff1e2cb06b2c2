//! Host memory the program implies, checked before anything is allocated:
//! a plan whose buffers (or whose gathered results, on rank 0) cannot fit is
//! one `error:` line naming the largest part and the bytes needed, not an
//! allocator abort (docs/executable.md).

use crate::backend::DeviceChoice;
use pjc_plan::Artifact;
use crate::world::World;
use crate::RuntimeError;

fn show(n: Option<u64>) -> String {
    n.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string())
}

/// The parts of this rank's host memory: (what, bytes).
pub fn needs(world: &World, p: &Artifact, kind: DeviceChoice) -> Vec<(String, Option<u64>)> {
    let mut parts = vec![];
    if kind != DeviceChoice::Cuda {
        parts.extend(buffers(p));
    }
    if world.rank() == 0 {
        // The results are gathered here: every rank's block, then the array.
        for r in &p.results {
            let g = &r.global;
            let blocks = r.local.checked_bytes().and_then(|n| n.checked_mul(world.size() as u64));
            let both = g.checked_bytes().zip(blocks).and_then(|(a, b)| a.checked_add(b));
            parts.push((format!("gathering result '{}' ({g})", r.name), both));
        }
    }
    parts
}

/// The program's buffers on its device: the buffer plan's arena (both
/// backends allocate it), and any buffer whose size is past 2^64 bytes.
fn buffers(p: &Artifact) -> Vec<(String, Option<u64>)> {
    let mut parts = vec![("the program's buffers (the buffer plan's peak)".to_string(), Some(p.memory.peak))];
    parts.extend(p.plan.buffers.iter().filter(|b| b.ty.checked_bytes().is_none()).map(|b| (format!("buffer %{} ({})", b.name, b.ty), None)));
    parts
}

/// The buffer plan's report for a refusal: the peak and when the most
/// memory is live, with what holds it (`pjc explain`'s line).
pub fn report(plan: &pjc_plan::Plan, memory: &pjc_plan::Memory) -> String {
    format!("the buffer plan's peak is {} bytes; {} (pjc explain shows the same)", memory.peak, memory.fullest.line(plan))
}

/// Fails when this rank's memory cannot fit: the total is past 2^64, or
/// more than this machine has available for each of its processes, or the
/// program's buffers need more than `limit` (`--memory-limit`, on the
/// process's device: host memory on the CPU, GPU memory on a GPU). The
/// errors carry the buffer plan's report.
pub fn check(world: &World, p: &Artifact, kind: DeviceChoice, limit: Option<u64>) -> Result<(), RuntimeError> {
    if let Some(limit) = limit {
        let device: Option<u64> = buffers(p).iter().try_fold(0u64, |a, (_, n)| n.and_then(|n| a.checked_add(n)));
        if device.is_none_or(|d| d > limit) {
            let on = if kind == DeviceChoice::Cuda { "GPU memory" } else { "memory" };
            return Err(RuntimeError::Env(format!(
                "not enough memory: the program's buffers need {} bytes of {on} on this process, more than --memory-limit {limit}: {}",
                show(device),
                report(&p.plan, &p.memory)
            )));
        }
    }
    let mut parts = needs(world, p, kind);
    // GPU buffers are the GPU's to refuse, but their sizes must be numbers.
    parts.extend(p.plan.buffers.iter().filter(|b| kind == DeviceChoice::Cuda && b.ty.checked_bytes().is_none()).map(|b| (format!("buffer %{} ({})", b.name, b.ty), None)));
    let total = parts.iter().try_fold(0u64, |a, (_, n)| n.and_then(|n| a.checked_add(n)));
    let avail = pjc_tensor::available_memory().map(|a| a / world.local_size() as u64);
    let fits = match (total, avail) {
        (None, _) => false,
        (Some(t), Some(a)) => t <= a,
        (Some(_), None) => true,
    };
    if fits {
        return Ok(());
    }
    let (what, n) = parts.iter().max_by_key(|(_, n)| n.unwrap_or(u64::MAX)).cloned().unwrap_or_default();
    let has = match avail {
        Some(a) if world.local_size() > 1 => format!("this machine has {a} bytes available for each of its {} processes", world.local_size()),
        Some(a) => format!("this machine has {a} bytes available"),
        None => "no machine has that much".to_string(),
    };
    let plan = if kind != DeviceChoice::Cuda && total.is_some() { format!("; {}", report(&p.plan, &p.memory)) } else { String::new() };
    Err(RuntimeError::Env(format!("not enough memory: the program needs {} bytes on this process (the largest part, {what}, needs {} bytes), but {has}{plan}", show(total), show(n))))
}

#[cfg(test)]
mod tests {
    use pjc_ir::TensorType;

    #[test]
    fn array_bytes_overflow_is_none() {
        assert_eq!(TensorType::new(pjc_ir::DType::F32, vec![100000, 100000, 100000]).checked_bytes(), Some(4_000_000_000_000_000));
        assert_eq!(TensorType::new(pjc_ir::DType::F64, vec![1 << 40, 1 << 30]).checked_bytes(), None);
    }
}
