//! `./model.bin --list-devices` and `pjc devices`: what each rank would run
//! on, and what this machine offers, without running anything.

use crate::backend::DeviceChoice;
use pjc_plan::Artifact;
use crate::world::World;
use crate::RuntimeError;

/// The CPU's model name (from /proc/cpuinfo).
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string()))
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// What this machine offers (`pjc devices`).
pub fn describe_machine() -> String {
    let mut s = format!("host: {}\ncpu: {} ({} cores available to this process)\n", World::hostname(), cpu_model(), cores());
    match pjc_host::cpulevel::best() {
        Some(l) => s.push_str(&format!("  level: {} (executables load their kernels built for it)\n", l.name())),
        None => s.push_str(&format!("  note: this CPU lacks {} (x86-64-v2, the lowest level pjc builds kernels for)\n", pjc_host::cpulevel::missing(pjc_plan::CpuLevel::V2).join(", "))),
    }
    match crate::cuda::gpus() {
        Ok(gs) if !gs.is_empty() => {
            for g in gs {
                s.push_str(&format!("{g}\n"));
            }
        }
        Ok(_) => s.push_str("gpus: none\n"),
        Err(why) => s.push_str(&format!("gpus: none ({why})\n")),
    }
    s
}

/// Every rank's host, local rank, mesh coordinates and device, printed by
/// rank 0 in rank order.
pub fn list(world: &World, p: &Artifact, choice: DeviceChoice) -> Result<(), RuntimeError> {
    let rank = world.rank();
    let local = crate::cuda::local_rank(world);
    let coords = p.mesh.coords(rank as u64);
    let coord_text: Vec<String> = p.mesh.axes.iter().zip(&coords).map(|(a, c)| format!("{}={c}", a.name)).collect();
    let gpus = crate::cuda::gpus();
    let use_gpu = match choice {
        DeviceChoice::Cpu => Err("--device cpu".to_string()),
        _ => match (&p.ptx, &gpus) {
            (Err(_), _) => Err("the executable has no GPU code".to_string()),
            (_, Err(e)) => Err(e.clone()),
            (_, Ok(g)) if g.len() < world.local_size() => Err(format!("{} GPU(s) for {} processes on this node", g.len(), world.local_size())),
            (_, Ok(g)) => Ok(g[local % g.len()].clone()),
        },
    };
    let device = match &use_gpu {
        Ok(g) => g.to_string(),
        Err(why) => format!("CPU: {} ({} kernel threads; not CUDA: {why})", cpu_model(), world.kernel_threads()),
    };
    let line = format!(
        "rank {rank}: host {}, local rank {local}, mesh [{}], {device}",
        World::hostname(),
        if coord_text.is_empty() { "one device".to_string() } else { coord_text.join(", ") }
    );
    if let Some(all) = world.gather_varlen_to_root(line.as_bytes())? {
        if p.mesh.axes.is_empty() {
            println!("mesh: one device");
        } else {
            println!("{}", p.mesh);
        }
        println!("{}", gpu_code_line(p));
        for l in all {
            println!("{}", String::from_utf8_lossy(&l));
        }
    }
    Ok(())
}

/// What GPU code the executable carries, or that it has none and why (the
/// reason `pjc compile` recorded in the payload).
pub fn gpu_code_line(p: &Artifact) -> String {
    match &p.ptx {
        Ok(m) => format!("gpu code: PTX for {} ({} kernels)", m.arch, m.kernels.len()),
        Err(why) => format!("gpu code: none, this executable runs on CPUs only ({why})"),
    }
}
