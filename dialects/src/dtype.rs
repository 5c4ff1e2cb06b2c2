//! Element types of PIR (spec section 3), declared once for every stage.

use std::fmt;

/// An element type. `Pred` is the boolean type.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
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

/// An f64 rounded to f32 with round-to-odd (truncate, then set the last bit if
/// anything was lost). Rounding that to a format with at most 22 significand
/// bits (f16, bf16) to nearest even gives the correctly rounded value of the
/// original: no double-rounding error.
pub fn f64_to_f32_odd(x: f64) -> f32 {
    let r = x as f32;
    if !r.is_finite() || r as f64 == x {
        return r;
    }
    let mut bits = r.to_bits();
    if (r as f64).abs() > x.abs() {
        bits -= 1; // rounded away from zero: step back to the truncation
    }
    f32::from_bits(bits | 1)
}

impl DType {
    /// `x` rounded to the nearest value of this float dtype (ties to even),
    /// returned as the exact f64 of that value.
    pub fn round_f64(self, x: f64) -> f64 {
        match self {
            DType::F64 => x,
            DType::F32 => x as f32 as f64,
            DType::F16 => half::f16::from_f32(f64_to_f32_odd(x)).to_f64(),
            DType::BF16 => half::bf16::from_f32(f64_to_f32_odd(x)).to_f64(),
            _ => x,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_to_bf16_is_single() {
        // 1 + 2^-8 + 2^-40 lies just above the bf16 tie between 1 and 1 + 2^-7.
        let x = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
        assert_eq!(DType::BF16.round_f64(x), 1.0 + 2f64.powi(-7));
        assert_eq!(DType::BF16.round_f64(1.0 + 2f64.powi(-8)), 1.0);
        assert_eq!(DType::F16.round_f64(1.0 + 2f64.powi(-11) + 2f64.powi(-40)), 1.0 + 2f64.powi(-10));
    }
}
