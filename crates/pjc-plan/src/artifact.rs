//! The compiled artefact: everything `pjc compile -o` decided, in the form
//! the executable's runtime reads at start-up without re-deriving any of it
//! (docs/executable.md, "What an executable carries").
//!
//! ```text
//! artefact = MAGIC (8) | format: u32 LE | schema: 32 bytes | version_len: u16 LE
//!            | pjc version (UTF-8) | body hash: 32 bytes | body
//! body     = postcard encoding of [`Artifact`]
//! ```
//!
//! - `format` is [`FORMAT`], bumped when the layout above changes.
//! - `schema` is [`schema`]: a BLAKE3 hash of the op table's and dtype
//!   table's spellings and of the source of every type the body encodes, so
//!   a runner built from other sources (an older `PJC_RUNNER`, another
//!   checkout) refuses the body instead of decoding it into other meanings.
//! - The body hash (BLAKE3 of the body) catches a damaged file.
//!
//! The body is postcard (serde's compact binary format, a stable documented
//! wire format); the measurement that chose it is in docs/executable.md.

use crate::memory::Memory;
use crate::plan::Plan;
use pjc_ir::{Mesh, Sharding, TensorType};
use serde::{Deserialize, Serialize};

/// First bytes of every artefact.
pub const MAGIC: &[u8; 8] = b"PJCARTF\0";

/// The header layout's version.
pub const FORMAT: u32 = 1;

/// The pjc version that writes (and reads) artefacts.
pub const PJC_VERSION: &str = env!("CARGO_PKG_VERSION");

/// One parameter or result of the entry as the outside world sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Port {
    /// The name inputs and outputs use.
    pub name: String,
    /// The type of one device's block (the per-device program's type).
    pub local: TensorType,
    /// The type of the whole array.
    pub global: TensorType,
    /// How the array is split over the mesh (None: replicated).
    pub sharding: Option<Sharding>,
}

/// The device groups of one axis list (spec section 8): every group's
/// members, in group order. The groups partition the mesh's devices; a
/// collective over these axes runs within each group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupTable {
    pub axes: Vec<String>,
    pub groups: Vec<Vec<u64>>,
}

impl GroupTable {
    /// The groups of `mesh` over `axes`, in order of their first device.
    pub fn build(mesh: &Mesh, axes: &[String]) -> Result<GroupTable, String> {
        let n = mesh.device_count();
        let mut seen = vec![false; usize::try_from(n).map_err(|_| format!("a mesh of {n} devices"))?];
        let mut groups = vec![];
        for d in 0..n {
            if seen[d as usize] {
                continue;
            }
            let (members, _) = mesh.group(axes, d)?;
            for &m in &members {
                seen[m as usize] = true;
            }
            groups.push(members);
        }
        Ok(GroupTable { axes: axes.to_vec(), groups })
    }

    /// The tables of every axis list `plan`'s collectives use (inside the
    /// blocks of control steps too), in order of first use.
    pub fn for_plan(plan: &Plan, mesh: &Mesh) -> Result<Vec<GroupTable>, String> {
        let mut out: Vec<GroupTable> = vec![];
        for s in crate::control::preorder(&plan.steps) {
            if let crate::Step::Collective { inst, .. } = s {
                let axes = inst.attr("axes").and_then(|a| a.as_idents()).unwrap_or_default();
                if !out.iter().any(|t| t.axes == axes) {
                    out.push(GroupTable::build(mesh, &axes).map_err(|e| format!("collective '{}': {e}", inst.op))?);
                }
            }
        }
        Ok(out)
    }

    /// `device`'s group: (its index, `device`'s position in it).
    pub fn find(&self, device: u64) -> Option<(usize, usize)> {
        self.groups.iter().enumerate().find_map(|(g, m)| m.iter().position(|&x| x == device).map(|p| (g, p)))
    }
}

/// How a GPU runtime launches one generated PTX kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PtxKernel {
    /// The plan kernel's name.
    pub name: String,
    /// The `.entry` to launch: the name of the first kernel with the same
    /// body (kernels with one body share one entry).
    pub entry: String,
    /// Number of output points (the `n` parameter, after the pointers).
    pub points: u64,
    /// `Some(256)` for reduction kernels: the largest block they accept (and
    /// the one to launch; any multiple of 32 up to it works). `None` for
    /// elementwise kernels (any launch shape).
    pub required_block: Option<u32>,
    /// Plan buffers of the pointer parameters, inputs then outputs.
    pub buffers: Vec<usize>,
    /// Consecutive points a thread handles per grid-stride step (4 for wide
    /// elementwise kernels, else 1). Any grid works either way;
    /// `ceil(points / vector_width)` threads cover the output in one step.
    pub vector_width: u32,
}

/// A PTX module with its kernels' launch information.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PtxModule {
    pub arch: String,
    pub ptx: String,
    pub kernels: Vec<PtxKernel>,
}

/// Everything the compiler decided about one program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    /// The entry function's name.
    pub entry: String,
    pub mesh: Mesh,
    pub params: Vec<Port>,
    pub results: Vec<Port>,
    /// (result, parameter) pairs of state-carry results (same name), which
    /// loop mode feeds back and checkpoints hold.
    pub carried: Vec<(usize, usize)>,
    /// The kernel plan of the per-device entry.
    pub plan: Plan,
    /// Its buffer plan (arena placement and peak).
    pub memory: Memory,
    /// The device groups of every axis list the plan's collectives use.
    pub groups: Vec<GroupTable>,
    /// The host kernels: one x86-64 shared object per micro-architecture
    /// level, the most capable first; the runtime loads the best one the CPU
    /// runs ([`CpuLevel`]).
    pub host_kernels: Vec<HostKernels>,
    /// The GPU kernels, or why there are none.
    pub ptx: Result<PtxModule, String>,
}

/// An x86-64 micro-architecture level (the psABI's): what the host kernels of
/// one shared object may use. v2: SSE4.2 and POPCNT; v3: AVX2, FMA, BMI, F16C;
/// v4: AVX-512 (F, BW, CD, DQ, VL).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum CpuLevel {
    V2,
    V3,
    V4,
}

impl CpuLevel {
    /// Every level, the most capable first (the order executables carry them).
    pub const ALL: [CpuLevel; 3] = [CpuLevel::V4, CpuLevel::V3, CpuLevel::V2];

    /// LLVM's CPU name for the level, also how users name it (`PJC_CPU_LEVEL`).
    pub fn name(self) -> &'static str {
        match self {
            CpuLevel::V2 => "x86-64-v2",
            CpuLevel::V3 => "x86-64-v3",
            CpuLevel::V4 => "x86-64-v4",
        }
    }

    pub fn parse(s: &str) -> Option<CpuLevel> {
        CpuLevel::ALL.into_iter().find(|l| l.name() == s || l.name().trim_start_matches("x86-64-") == s)
    }
}

/// The host kernels compiled for one CPU level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostKernels {
    pub level: CpuLevel,
    /// An x86-64 shared object exporting one `KernelFn` per kernel step.
    #[serde(with = "serde_bytes")]
    pub so: Vec<u8>,
}

/// Why an artefact cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArtifactError {
    #[error("it carries no compiled program (bad magic)")]
    Magic,
    #[error("its program is cut short")]
    Truncated,
    #[error("its program has format {found}, but this runner reads format {FORMAT}")]
    Format { found: u32 },
    #[error("its program was compiled by pjc {found} from other sources than this runner (pjc {PJC_VERSION}); recompile it with this pjc")]
    Schema { found: String },
    #[error("its program fails its hash check (the file was changed or cut)")]
    Hash,
    #[error("its program does not decode: {0}")]
    Decode(String),
}

/// The fingerprint of what the body's encoding means (see the module doc).
pub fn schema() -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(&FORMAT.to_le_bytes());
    for op in pjc_ir::Opcode::ALL {
        h.update(op.def().name.as_bytes());
        h.update(b"\0");
    }
    for d in pjc_ir::DType::ALL {
        h.update(d.name().as_bytes());
        h.update(b"\0");
    }
    for src in [
        include_str!("artifact.rs"),
        include_str!("plan.rs"),
        include_str!("control.rs"),
        include_str!("kernel.rs"),
        include_str!("memory.rs"),
        include_str!("../../pjc-ir/src/types.rs"),
        include_str!("../../pjc-ir/src/module.rs"),
        include_str!("../../../dialects/src/kinds.rs"),
    ] {
        h.update(src.as_bytes());
    }
    *h.finalize().as_bytes()
}

impl Artifact {
    /// The artefact's bytes (header and body).
    pub fn to_bytes(&self) -> Result<Vec<u8>, ArtifactError> {
        let body = postcard::to_stdvec(self).map_err(|e| ArtifactError::Decode(e.to_string()))?;
        let mut out = Vec::with_capacity(body.len() + 96);
        out.extend(MAGIC);
        out.extend(FORMAT.to_le_bytes());
        out.extend(schema());
        out.extend((PJC_VERSION.len() as u16).to_le_bytes());
        out.extend(PJC_VERSION.as_bytes());
        out.extend(blake3::hash(&body).as_bytes());
        out.extend(body);
        Ok(out)
    }

    /// Reads an artefact, checking its format, schema and hash first.
    pub fn from_bytes(b: &[u8]) -> Result<Artifact, ArtifactError> {
        let mut r = b;
        let mut take = |n: usize| -> Result<&[u8], ArtifactError> {
            if r.len() < n {
                return Err(ArtifactError::Truncated);
            }
            let (h, t) = r.split_at(n);
            r = t;
            Ok(h)
        };
        if take(8).map_err(|_| ArtifactError::Magic)? != MAGIC {
            return Err(ArtifactError::Magic);
        }
        let found = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes"));
        if found != FORMAT {
            return Err(ArtifactError::Format { found });
        }
        let schema_found: [u8; 32] = take(32)?.try_into().expect("32 bytes");
        let vlen = u16::from_le_bytes(take(2)?.try_into().expect("2 bytes")) as usize;
        let version = String::from_utf8_lossy(take(vlen)?).into_owned();
        if schema_found != schema() {
            return Err(ArtifactError::Schema { found: version });
        }
        let hash: [u8; 32] = take(32)?.try_into().expect("32 bytes");
        let body = r;
        if blake3::hash(body).as_bytes() != &hash {
            return Err(ArtifactError::Hash);
        }
        postcard::from_bytes(body).map_err(|e| ArtifactError::Decode(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pjc_ir::{DType, MeshAxis};

    fn mesh() -> Mesh {
        Mesh { axes: vec![MeshAxis { name: "x".into(), size: 2, span: Default::default() }, MeshAxis { name: "y".into(), size: 3, span: Default::default() }] }
    }

    fn sample() -> Artifact {
        let t = TensorType::new(DType::F32, vec![4, 6]);
        Artifact {
            entry: "main".into(),
            mesh: mesh(),
            params: vec![Port { name: "w".into(), local: t.clone(), global: t.clone(), sharding: None }],
            results: vec![Port { name: "w".into(), local: t.clone(), global: t, sharding: None }],
            carried: vec![(0, 0)],
            plan: Plan { name: "main".into(), buffers: vec![], steps: vec![], params: vec![], results: vec![] },
            memory: Memory { offsets: vec![], peak: 0, donated: vec![], fullest: Default::default() },
            groups: vec![GroupTable::build(&mesh(), &["y".into()]).unwrap()],
            host_kernels: vec![HostKernels { level: CpuLevel::V3, so: vec![1, 2, 3, 0, 255] }],
            ptx: Err("no libdevice".into()),
        }
    }

    #[test]
    fn round_trips() {
        let a = sample();
        assert_eq!(Artifact::from_bytes(&a.to_bytes().unwrap()).unwrap(), a);
    }

    #[test]
    fn damage_is_detected() {
        let b = sample().to_bytes().unwrap();
        // Any flipped body byte fails the hash.
        let mut c = b.clone();
        let last = c.len() - 1;
        c[last] ^= 1;
        assert_eq!(Artifact::from_bytes(&c), Err(ArtifactError::Hash));
        // Cut anywhere: never a panic, always an error.
        for n in 0..b.len() {
            assert!(Artifact::from_bytes(&b[..n]).is_err(), "cut at {n}");
        }
        let mut f = b.clone();
        f[8] = 9;
        assert_eq!(Artifact::from_bytes(&f), Err(ArtifactError::Format { found: 9 }));
        let mut s = b.clone();
        s[12] ^= 1;
        assert!(matches!(Artifact::from_bytes(&s), Err(ArtifactError::Schema { .. })));
        assert_eq!(Artifact::from_bytes(b"not an artefact"), Err(ArtifactError::Magic));
    }

    #[test]
    fn groups_partition_the_mesh() {
        let m = mesh();
        let y = GroupTable::build(&m, &["y".into()]).unwrap();
        assert_eq!(y.groups, vec![vec![0, 1, 2], vec![3, 4, 5]]);
        let x = GroupTable::build(&m, &["x".into()]).unwrap();
        assert_eq!(x.groups, vec![vec![0, 3], vec![1, 4], vec![2, 5]]);
        assert_eq!(x.find(4), Some((1, 1)));
        let both = GroupTable::build(&m, &["y".into(), "x".into()]).unwrap();
        assert_eq!(both.groups.len(), 1);
        // Every device is in exactly one group, at the position Mesh::group gives.
        for t in [&x, &y, &both] {
            for d in 0..m.device_count() {
                let (g, p) = t.find(d).unwrap();
                assert_eq!((t.groups[g].clone(), p), m.group(&t.axes, d).unwrap());
                assert_eq!(t.groups.iter().flatten().filter(|&&e| e == d).count(), 1);
            }
        }
    }
}
