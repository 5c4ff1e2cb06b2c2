//! Array types, shardings and the device mesh (spec sections 3, 4 and 6).

use pjc_dialects::DType;
use std::fmt;

/// A byte range in the source text. Every IR entity that came from text has one,
/// so diagnostics can point at it; IR built by passes uses `Span::NONE`.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default, Hash, serde::Serialize, serde::Deserialize)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub const NONE: Span = Span { start: u32::MAX, end: u32::MAX };
    pub fn new(start: usize, end: usize) -> Span {
        Span { start: start as u32, end: end as u32 }
    }
    pub fn is_none(self) -> bool {
        self.start == u32::MAX
    }
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        if self.is_none() {
            return other;
        }
        if other.is_none() {
            return self;
        }
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }
}

/// A static array type `DTYPE[d0,d1,...]`; a scalar has an empty shape.
#[derive(Clone, PartialEq, Eq, Debug, Hash, serde::Serialize, serde::Deserialize)]
pub struct TensorType {
    pub dtype: DType,
    pub shape: Vec<u64>,
}

impl TensorType {
    pub fn new(dtype: DType, shape: Vec<u64>) -> TensorType {
        TensorType { dtype, shape }
    }
    pub fn scalar(dtype: DType) -> TensorType {
        TensorType { dtype, shape: vec![] }
    }
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
    pub fn is_scalar(&self) -> bool {
        self.shape.is_empty()
    }
    /// Number of elements (saturating: shapes are user-controlled).
    pub fn num_elements(&self) -> u64 {
        self.shape.iter().fold(1u64, |a, &d| a.saturating_mul(d))
    }
    /// Bytes of an array of this type; `None` past 2^64 (a program may declare
    /// such types: the stages that size memory refuse them).
    pub fn checked_bytes(&self) -> Option<u64> {
        if self.shape.contains(&0) {
            return Some(0);
        }
        self.shape.iter().try_fold(self.dtype.size_bytes() as u64, |a, &d| a.checked_mul(d))
    }
    /// Bytes of an array of this type, saturating at `u64::MAX` (for estimates
    /// and rankings).
    pub fn bytes(&self) -> u64 {
        self.checked_bytes().unwrap_or(u64::MAX)
    }
    pub fn with_dtype(&self, dtype: DType) -> TensorType {
        TensorType { dtype, shape: self.shape.clone() }
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.dtype)?;
        for (i, d) in self.shape.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

/// How one dimension is split over the mesh.
#[derive(Clone, PartialEq, Eq, Debug, Hash, serde::Serialize, serde::Deserialize)]
pub enum DimSharding {
    /// `_`: not split.
    Replicated,
    /// `?`: the compiler chooses.
    Open,
    /// `a` or `(a, b)`: split over these axes, major first.
    Axes(Vec<String>),
}

/// `on [E0, E1, ...]`: one entry per dimension.
#[derive(Clone, PartialEq, Eq, Debug, Hash, serde::Serialize, serde::Deserialize)]
pub struct Sharding {
    pub dims: Vec<DimSharding>,
}

impl Sharding {
    pub fn replicated(rank: usize) -> Sharding {
        Sharding { dims: vec![DimSharding::Replicated; rank] }
    }
    /// Every axis named, in dimension order.
    pub fn axes(&self) -> impl Iterator<Item = &str> {
        self.dims.iter().flat_map(|d| match d {
            DimSharding::Axes(a) => a.as_slice(),
            _ => &[],
        })
        .map(|s| s.as_str())
    }
    pub fn is_fully_replicated(&self) -> bool {
        self.dims.iter().all(|d| *d == DimSharding::Replicated)
    }
    pub fn has_open(&self) -> bool {
        self.dims.iter().any(|d| *d == DimSharding::Open)
    }
    /// Axes splitting dimension `d` (empty when replicated or open).
    pub fn dim_axes(&self, d: usize) -> &[String] {
        match &self.dims[d] {
            DimSharding::Axes(a) => a,
            _ => &[],
        }
    }
}

impl fmt::Display for Sharding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match d {
                DimSharding::Replicated => f.write_str("_")?,
                DimSharding::Open => f.write_str("?")?,
                DimSharding::Axes(a) if a.len() == 1 => f.write_str(&a[0])?,
                DimSharding::Axes(a) => write!(f, "({})", a.join(", "))?,
            }
        }
        f.write_str("]")
    }
}

/// One named mesh axis.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub struct MeshAxis {
    pub name: String,
    pub size: u64,
    pub span: Span,
}

/// The device mesh: named axes, major to minor; device ids are row-major over them.
#[derive(Clone, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Mesh {
    pub axes: Vec<MeshAxis>,
}

impl Mesh {
    pub fn device_count(&self) -> u64 {
        self.axes.iter().fold(1u64, |a, x| a.saturating_mul(x.size))
    }
    pub fn axis(&self, name: &str) -> Option<usize> {
        self.axes.iter().position(|a| a.name == name)
    }
    pub fn size(&self, name: &str) -> Option<u64> {
        self.axes.iter().find(|a| a.name == name).map(|a| a.size)
    }
    /// Product of the named axes' sizes (unknown axes count as 1; saturating, like
    /// [`Mesh::device_count`], though the parser rejects meshes whose device count
    /// does not fit in u64).
    pub fn group_size<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> u64 {
        names.into_iter().fold(1u64, |a, n| a.saturating_mul(self.size(n).unwrap_or(1)))
    }
    /// The coordinates of a device id along every axis.
    pub fn coords(&self, device: u64) -> Vec<u64> {
        let mut c = vec![0; self.axes.len()];
        let mut rest = device;
        for i in (0..self.axes.len()).rev() {
            c[i] = rest % self.axes[i].size;
            rest /= self.axes[i].size;
        }
        c
    }
    /// The group of `device` over `axes` (spec section 8): the devices that
    /// differ from it only along those axes, ordered by the axes as listed (first
    /// major), and `device`'s position in it.
    pub fn group(&self, axes: &[String], device: u64) -> Result<(Vec<u64>, usize), String> {
        let coords = self.coords(device);
        let mut idx = Vec::with_capacity(axes.len());
        for a in axes {
            let i = self.axis(a).ok_or_else(|| format!("collective over axis '{a}', which the mesh {self} does not have"))?;
            if idx.contains(&i) {
                return Err(format!("collective lists axis '{a}' twice"));
            }
            idx.push(i);
        }
        let n: u64 = idx.iter().map(|&i| self.axes[i].size).product();
        let mut members = Vec::with_capacity(n as usize);
        let mut pos = 0;
        for k in 0..n {
            let mut c = coords.clone();
            let mut rest = k;
            for &i in idx.iter().rev() {
                c[i] = rest % self.axes[i].size;
                rest /= self.axes[i].size;
            }
            let dev = self.device(&c);
            if dev == device {
                pos = k as usize;
            }
            members.push(dev);
        }
        Ok((members, pos))
    }

    /// The device id of coordinates.
    pub fn device(&self, coords: &[u64]) -> u64 {
        self.axes.iter().zip(coords).fold(0, |id, (a, &c)| id * a.size + c)
    }
}

impl fmt::Display for Mesh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("mesh [")?;
        for (i, a) in self.axes.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}={}", a.name, a.size)?;
        }
        f.write_str("]")
    }
}
