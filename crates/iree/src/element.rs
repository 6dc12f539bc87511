//! IREE's element types.

use std::fmt;

/// IREE's element type code (`iree_hal_element_type_t`): the numerical
/// kind in the high byte, the bit width in the low byte. A transparent
/// newtype because outputs carry whatever code IREE reports.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct ElementType(pub u32);

impl ElementType {
    /// `i8` (signless 8-bit integer).
    pub const I8: Self = Self(0x1000_0008);
    /// `i16`.
    pub const I16: Self = Self(0x1000_0010);
    /// `i32`.
    pub const I32: Self = Self(0x1000_0020);
    /// `i64`.
    pub const I64: Self = Self(0x1000_0040);
    /// `si8` (signed 8-bit integer).
    pub const SI8: Self = Self(0x1100_0008);
    /// `si16`.
    pub const SI16: Self = Self(0x1100_0010);
    /// `si32` (signed 32-bit integer).
    pub const SI32: Self = Self(0x1100_0020);
    /// `si64`.
    pub const SI64: Self = Self(0x1100_0040);
    /// `ui8`.
    pub const UI8: Self = Self(0x1200_0008);
    /// `ui16`.
    pub const UI16: Self = Self(0x1200_0010);
    /// `ui32`.
    pub const UI32: Self = Self(0x1200_0020);
    /// `ui64`.
    pub const UI64: Self = Self(0x1200_0040);
    /// `f16`.
    pub const F16: Self = Self(0x2100_0010);
    /// `bf16` (bfloat16: IREE's brain-float kind, 16 bits; NumPy has no
    /// dtype for it, so it has no `.npy` form, as in IREE's tools).
    pub const BF16: Self = Self(0x2200_0010);
    /// `f32`.
    pub const F32: Self = Self(0x2100_0020);
    /// `f64`.
    pub const F64: Self = Self(0x2100_0040);
    /// A boolean stored as one byte (IREE spells it `i1`).
    pub const BOOL: Self = Self(0x1300_0008);

    /// Bits per element.
    #[must_use]
    pub fn bit_count(self) -> u32 {
        self.0 & 0xFF
    }

    /// Bytes per element as stored (sub-byte types take a byte each).
    #[must_use]
    pub fn byte_size(self) -> usize {
        (self.bit_count() as usize).div_ceil(8)
    }

    /// IREE's spelling (`f32`, `i32`, ...), when this crate knows it.
    #[must_use]
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Self::I8 => "i8",
            Self::I16 => "i16",
            Self::I32 => "i32",
            Self::I64 => "i64",
            Self::SI8 => "si8",
            Self::SI16 => "si16",
            Self::SI32 => "si32",
            Self::SI64 => "si64",
            Self::UI8 => "ui8",
            Self::UI16 => "ui16",
            Self::UI32 => "ui32",
            Self::UI64 => "ui64",
            Self::F16 => "f16",
            Self::BF16 => "bf16",
            Self::F32 => "f32",
            Self::F64 => "f64",
            Self::BOOL => "i1",
            _ => return None,
        })
    }
}

impl fmt::Debug for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "ElementType({:#010x})", self.0),
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
