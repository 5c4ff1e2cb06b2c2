//! The program a compiled executable carries: named sections appended to the
//! runner executable, found through a fixed-size trailer at the very end of
//! the file.
//!
//! ```text
//! [runner ELF][section]*[trailer]
//! section = name_len: u32 LE, name: UTF-8, data_len: u64 LE, data
//! trailer = payload_offset: u64 LE, payload_len: u64 LE, MAGIC (8 bytes)
//! ```
//!
//! The ELF loader ignores bytes past the program's segments, so the file is
//! still the runner executable; the runner opens itself (`/proc/self/exe`)
//! and reads the trailer. An ordinary executable carries one section, the
//! compiled artefact ([`section::ARTIFACT`]), whose own header carries its
//! format, schema and hash. An elastic one (`pjc compile --elastic
//! AXIS=N1,N2,...`) carries one artefact per process count
//! ([`section::artifact_for`]) and an [`section::ELASTIC`] section
//! ([`Elastic`], JSON) that lists them.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Ends every compiled executable.
pub const MAGIC: &[u8; 8] = b"PJCEXE01";
const TRAILER: usize = 24;

/// Section names.
pub mod section {
    /// The compiled artefact (`pjc_plan::Artifact`: versioned, hashed).
    pub const ARTIFACT: &str = "artifact";
    /// An elastic executable's list of programs ([`super::Elastic`], JSON).
    pub const ELASTIC: &str = "elastic";
    /// The artefact an elastic executable runs on `processes` processes.
    pub fn artifact_for(processes: u64) -> String {
        format!("artifact.{processes}")
    }
}

/// The programs an elastic executable carries: one per size of one mesh
/// axis, the other axes fixed.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Elastic {
    /// The mesh axis whose size varies.
    pub axis: String,
    /// In the order `--elastic` listed them.
    pub programs: Vec<ElasticProgram>,
}

/// One program of an elastic executable.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ElasticProgram {
    /// The size of the axis.
    pub size: u64,
    /// Its process count (the mesh's device count).
    pub processes: u64,
    /// Its mesh, as PIR prints it (`mesh [data=2, model=2]`).
    pub mesh: String,
}

impl Elastic {
    /// The process counts, smallest first.
    pub fn process_counts(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.programs.iter().map(|p| p.processes).collect();
        v.sort();
        v.dedup();
        v
    }

    /// The section's bytes.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("plain data serializes")
    }

    /// `--elastic`'s spelling: `data=1,2,4`.
    pub fn spec(&self) -> String {
        format!("{}={}", self.axis, self.programs.iter().map(|p| p.size.to_string()).collect::<Vec<_>>().join(","))
    }
}

/// "1, 2 or 4".
pub fn or_list(v: &[u64]) -> String {
    match v {
        [] => String::new(),
        [x] => x.to_string(),
        [init @ .., last] => format!("{} or {last}", init.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// A payload: named byte sections, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Payload {
    pub sections: Vec<(String, Vec<u8>)>,
}

impl Payload {
    pub fn add(&mut self, name: &str, data: impl Into<Vec<u8>>) {
        self.sections.push((name.to_string(), data.into()));
    }

    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.sections.iter().find(|(n, _)| n == name).map(|(_, d)| d.as_slice())
    }

    /// The elastic section, when the executable has one.
    pub fn elastic(&self) -> Result<Option<Elastic>, String> {
        match self.get(section::ELASTIC) {
            None => Ok(None),
            Some(_) => serde_json::from_str(self.text(section::ELASTIC)?).map(Some).map_err(|e| format!("its '{}' section is corrupt: {e}", section::ELASTIC)),
        }
    }

    pub fn text(&self, name: &str) -> Result<&str, String> {
        let d = self.get(name).ok_or_else(|| format!("the executable carries no '{name}' section"))?;
        std::str::from_utf8(d).map_err(|_| format!("the executable's '{name}' section is not UTF-8"))
    }

    /// The sections, serialized (without the trailer).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![];
        for (name, data) in &self.sections {
            out.extend((name.len() as u32).to_le_bytes());
            out.extend(name.as_bytes());
            out.extend((data.len() as u64).to_le_bytes());
            out.extend(data);
        }
        out
    }

    pub fn from_bytes(mut b: &[u8]) -> Result<Payload, String> {
        let corrupt = || "its program payload is corrupt".to_string();
        let mut p = Payload::default();
        while !b.is_empty() {
            let take = |b: &mut &[u8], n: usize| -> Result<Vec<u8>, String> {
                if b.len() < n {
                    return Err(corrupt());
                }
                let (h, t) = b.split_at(n);
                *b = t;
                Ok(h.to_vec())
            };
            let nl = u32::from_le_bytes(take(&mut b, 4)?.try_into().unwrap()) as usize;
            let name = String::from_utf8(take(&mut b, nl)?).map_err(|_| corrupt())?;
            let dl = u64::from_le_bytes(take(&mut b, 8)?.try_into().unwrap());
            let data = take(&mut b, usize::try_from(dl).map_err(|_| corrupt())?)?;
            p.sections.push((name, data));
        }
        Ok(p)
    }

    /// `runner`'s bytes followed by this payload and the trailer.
    pub fn append_to(&self, runner: &[u8]) -> Vec<u8> {
        let body = self.to_bytes();
        let mut out = Vec::with_capacity(runner.len() + body.len() + TRAILER);
        out.extend(runner);
        let at = out.len() as u64;
        out.extend(&body);
        out.extend(at.to_le_bytes());
        out.extend((body.len() as u64).to_le_bytes());
        out.extend(MAGIC);
        out
    }

    /// The payload at the end of executable `path`; `Ok(None)` when it has
    /// none (a bare runner).
    pub fn read_from(path: &Path) -> Result<Option<Payload>, String> {
        let mut f = std::fs::File::open(path).map_err(|e| format!("cannot open '{}': {e}", path.display()))?;
        let len = f.metadata().map_err(|e| e.to_string())?.len();
        if len < TRAILER as u64 {
            return Ok(None);
        }
        let mut t = [0u8; TRAILER];
        f.seek(SeekFrom::Start(len - TRAILER as u64)).and_then(|_| f.read_exact(&mut t)).map_err(|e| e.to_string())?;
        if &t[16..] != MAGIC {
            return Ok(None);
        }
        let at = u64::from_le_bytes(t[..8].try_into().unwrap());
        let n = u64::from_le_bytes(t[8..16].try_into().unwrap());
        if at.checked_add(n) != Some(len - TRAILER as u64) {
            return Err("its program payload is corrupt (bad trailer)".into());
        }
        let mut body = vec![0u8; n as usize];
        f.seek(SeekFrom::Start(at)).and_then(|_| f.read_exact(&mut body)).map_err(|e| e.to_string())?;
        Payload::from_bytes(&body).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_through_a_file() {
        let mut p = Payload::default();
        p.add("a", b"hello".to_vec());
        p.add("empty", vec![]);
        p.add("bin", vec![0u8, 255, 7]);
        let exe = p.append_to(b"\x7fELF runner bytes");
        let dir = std::env::temp_dir().join(format!("pjc-payload-{}", std::process::id()));
        std::fs::write(&dir, &exe).unwrap();
        assert_eq!(Payload::read_from(&dir).unwrap(), Some(p));
        std::fs::write(&dir, b"\x7fELF no payload at all, long enough").unwrap();
        assert_eq!(Payload::read_from(&dir).unwrap(), None);
        // A trailer whose offsets do not add up is reported, not trusted.
        let mut bad = exe.clone();
        let n = bad.len();
        bad[n - 24] ^= 1;
        std::fs::write(&dir, &bad).unwrap();
        assert!(Payload::read_from(&dir).is_err());
        std::fs::remove_file(&dir).unwrap();
    }

    #[test]
    fn elastic_section_round_trips() {
        let e = Elastic {
            axis: "data".into(),
            programs: [4u64, 1, 2].iter().map(|&n| ElasticProgram { size: n, processes: 2 * n, mesh: format!("[data={n}, model=2]") }).collect(),
        };
        let mut p = Payload::default();
        assert_eq!(p.elastic(), Ok(None));
        p.add(section::ELASTIC, e.to_json());
        let back = p.elastic().unwrap().unwrap();
        assert_eq!(back, e);
        assert_eq!(back.process_counts(), vec![2, 4, 8]);
        assert_eq!(back.spec(), "data=4,1,2");
        assert_eq!(or_list(&back.process_counts()), "2, 4 or 8");
        assert_eq!(section::artifact_for(8), "artifact.8");
        let mut bad = Payload::default();
        bad.add(section::ELASTIC, b"{".to_vec());
        assert!(bad.elastic().unwrap_err().contains("corrupt"));
    }

    #[test]
    fn truncated_sections_are_errors() {
        let mut p = Payload::default();
        p.add("x", vec![1, 2, 3, 4]);
        let b = p.to_bytes();
        for cut in 1..b.len() {
            assert!(Payload::from_bytes(&b[..cut]).is_err(), "cut at {cut}");
        }
    }
}
