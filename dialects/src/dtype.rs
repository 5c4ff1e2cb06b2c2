//! Element types of PIR (spec section 3), declared once for every stage.

use std::fmt;

/// An element type. `Pred` is the boolean type.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum DType {
    F64,
    F32,
    F16,
    BF16,
    I64,
    I32,
    I16,
    I8,
    U64,
    U32,
    U16,
    U8,
    Pred,
}

impl DType {
    /// Every dtype, in the order the spec lists them.
    pub const ALL: [DType; 13] = [
        DType::F64,
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::I32,
        DType::I16,
        DType::I8,
        DType::U64,
        DType::U32,
        DType::U16,
        DType::U8,
        DType::Pred,
    ];

    /// The spelling in PIR text.
    pub fn name(self) -> &'static str {
        match self {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::I16 => "i16",
            DType::I8 => "i8",
            DType::U64 => "u64",
            DType::U32 => "u32",
            DType::U16 => "u16",
            DType::U8 => "u8",
            DType::Pred => "pred",
        }
    }

    pub fn from_name(s: &str) -> Option<DType> {
        DType::ALL.iter().copied().find(|d| d.name() == s)
    }

    /// Width in bits of one element (pred is stored as one byte).
    pub fn bits(self) -> u32 {
        match self {
            DType::F64 | DType::I64 | DType::U64 => 64,
            DType::F32 | DType::I32 | DType::U32 => 32,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 16,
            DType::I8 | DType::U8 | DType::Pred => 8,
        }
    }

    /// Bytes of one element in a row-major buffer.
    pub fn size_bytes(self) -> usize {
        (self.bits() / 8) as usize
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F64 | DType::F32 | DType::F16 | DType::BF16)
    }

    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::I64 | DType::I32 | DType::I16 | DType::I8)
    }

    pub fn is_unsigned_int(self) -> bool {
        matches!(self, DType::U64 | DType::U32 | DType::U16 | DType::U8)
    }

    pub fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }

    pub fn is_pred(self) -> bool {
        self == DType::Pred
    }

    /// Range of an integer dtype as i128 (None for floats and pred).
    pub fn int_range(self) -> Option<(i128, i128)> {
        if self.is_signed_int() {
            let b = self.bits();
            Some((-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1))
        } else if self.is_unsigned_int() {
            Some((0, (1i128 << self.bits()) - 1))
        } else {
            None
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A class of element types an operand may have; the verifier checks it.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum DClass {
    /// Every dtype.
    Any,
    /// Every dtype but pred (where the spec does not give pred a meaning).
    Numeric,
    /// Floating point only.
    Float,
    /// Integers and pred (logic and bitwise ops).
    IntOrPred,
    /// Integers only.
    Int,
    /// Signed integers and floats (no meaning for unsigned or pred).
    SignedOrFloat,
}

impl DClass {
    pub fn admits(self, d: DType) -> bool {
        match self {
            DClass::Any => true,
            DClass::Numeric => !d.is_pred(),
            DClass::Float => d.is_float(),
            DClass::IntOrPred => d.is_int() || d.is_pred(),
            DClass::Int => d.is_int(),
            DClass::SignedOrFloat => d.is_float() || d.is_signed_int(),
        }
    }

    /// Words for an error message: "expected a float dtype".
    pub fn describe(self) -> &'static str {
        match self {
            DClass::Any => "any dtype",
            DClass::Numeric => "a numeric (non-pred) dtype",
            DClass::Float => "a float dtype",
            DClass::IntOrPred => "an integer or pred dtype",
            DClass::Int => "an integer dtype",
            DClass::SignedOrFloat => "a signed integer or float dtype",
        }
    }
}
