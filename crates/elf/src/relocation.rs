//! Relocations: which types the loader applies for each machine, and the
//! value each planned relocation writes at a given load address.

use object::elf::{
    EM_AARCH64, EM_RISCV, EM_X86_64, R_AARCH64_ABS64, R_AARCH64_COPY, R_AARCH64_GLOB_DAT,
    R_AARCH64_IRELATIVE, R_AARCH64_JUMP_SLOT, R_AARCH64_NONE, R_AARCH64_RELATIVE, R_AARCH64_TLS_DTPMOD,
    R_AARCH64_TLS_DTPREL, R_AARCH64_TLS_TPREL, R_AARCH64_TLSDESC, R_RISCV_32, R_RISCV_64, R_RISCV_COPY,
    R_RISCV_IRELATIVE, R_RISCV_JUMP_SLOT, R_RISCV_NONE, R_RISCV_RELATIVE, R_RISCV_TLS_DTPMOD32,
    R_RISCV_TLS_TPREL64, R_X86_64_32, R_X86_64_32S, R_X86_64_64, R_X86_64_COPY, R_X86_64_DTPMOD64,
    R_X86_64_DTPOFF64, R_X86_64_GLOB_DAT, R_X86_64_IRELATIVE, R_X86_64_JUMP_SLOT, R_X86_64_NONE,
    R_X86_64_PC32, R_X86_64_RELATIVE, R_X86_64_RELATIVE64, R_X86_64_TLSDESC, R_X86_64_TPOFF64,
};

use crate::error::EmbeddedElfError;

/// How a relocation computes its value (`S` symbol, `A` addend, `B` image
/// base, `P` the place written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RelocationKind {
    /// `B + A`, 8 bytes.
    Relative,
    /// `S + A`, 8 bytes.
    Absolute64,
    /// `S + A`, 4 bytes, zero-extended.
    Absolute32,
    /// `S + A`, 4 bytes, sign-extended.
    Absolute32Signed,
    /// `S + A - P`, 4 bytes, signed.
    PcRelative32,
}

impl RelocationKind {
    pub(crate) fn width(self) -> u64 {
        match self {
            Self::Relative | Self::Absolute64 => 8,
            Self::Absolute32 | Self::Absolute32Signed | Self::PcRelative32 => 4,
        }
    }
}

/// The value of a relocation's symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SymbolValue {
    /// No symbol (index 0): `S` is 0.
    None,
    /// A defined symbol: `S` is the image base plus this offset.
    ImageOffset(u64),
    /// An absolute symbol (`SHN_ABS`): `S` is this value.
    Absolute(u64),
}

/// One relocation the mapping step applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PlannedRelocation {
    /// Where to write, from the image base; checked to lie in one segment.
    pub(crate) image_offset: u64,
    pub(crate) kind: RelocationKind,
    pub(crate) name: &'static str,
    pub(crate) addend: i64,
    pub(crate) symbol: SymbolValue,
    /// `r_offset`, for messages.
    pub(crate) address: u64,
}

impl PlannedRelocation {
    /// The bytes to write (native byte order), for an image loaded at
    /// `base`.
    pub(crate) fn bytes(&self, base: u64) -> Result<([u8; 8], usize), EmbeddedElfError> {
        let base = i128::from(base);
        let symbol = match self.symbol {
            SymbolValue::None => 0,
            SymbolValue::ImageOffset(offset) => base + i128::from(offset),
            SymbolValue::Absolute(value) => i128::from(value),
        };
        let addend = i128::from(self.addend);
        let place = base + i128::from(self.image_offset);
        let value = match self.kind {
            RelocationKind::Relative => base + addend,
            RelocationKind::Absolute64 | RelocationKind::Absolute32 | RelocationKind::Absolute32Signed => {
                symbol + addend
            }
            RelocationKind::PcRelative32 => symbol + addend - place,
        };
        let overflow = || EmbeddedElfError::RelocationOverflow {
            name: self.name,
            address: self.address,
            value,
            width: self.kind.width(),
        };
        let mut out = [0u8; 8];
        match self.kind {
            RelocationKind::Relative | RelocationKind::Absolute64 => {
                // 64-bit fields wrap like the hardware's address arithmetic.
                out.copy_from_slice(&(value as u64).to_ne_bytes());
                Ok((out, 8))
            }
            RelocationKind::Absolute32 => {
                let narrow = u32::try_from(value).map_err(|_| overflow())?;
                out[..4].copy_from_slice(&narrow.to_ne_bytes());
                Ok((out, 4))
            }
            RelocationKind::Absolute32Signed | RelocationKind::PcRelative32 => {
                let narrow = i32::try_from(value).map_err(|_| overflow())?;
                out[..4].copy_from_slice(&narrow.to_ne_bytes());
                Ok((out, 4))
            }
        }
    }
}

/// AArch64's "no relocation" in the numbering some early toolchains used
/// (`R_AARCH64_NULL`, which `object` does not name).
const R_AARCH64_NULL: u32 = 256;

/// How relocation `r_type` of `machine` is applied: `Ok(None)` for NONE,
/// `Err((name, is_tls))` when refused.
pub(crate) fn relocation_kind(
    machine: u16,
    r_type: u32,
) -> Result<Option<(RelocationKind, &'static str)>, (&'static str, bool)> {
    use RelocationKind::*;
    let applied = match (machine, r_type) {
        (EM_X86_64, R_X86_64_NONE)
        | (EM_AARCH64, R_AARCH64_NONE | R_AARCH64_NULL)
        | (EM_RISCV, R_RISCV_NONE) => return Ok(None),
        (EM_X86_64, R_X86_64_64) => (Absolute64, "R_X86_64_64"),
        (EM_X86_64, R_X86_64_PC32) => (PcRelative32, "R_X86_64_PC32"),
        (EM_X86_64, R_X86_64_GLOB_DAT) => (Absolute64, "R_X86_64_GLOB_DAT"),
        (EM_X86_64, R_X86_64_JUMP_SLOT) => (Absolute64, "R_X86_64_JUMP_SLOT"),
        (EM_X86_64, R_X86_64_RELATIVE) => (Relative, "R_X86_64_RELATIVE"),
        (EM_X86_64, R_X86_64_32) => (Absolute32, "R_X86_64_32"),
        (EM_X86_64, R_X86_64_32S) => (Absolute32Signed, "R_X86_64_32S"),
        (EM_AARCH64, R_AARCH64_ABS64) => (Absolute64, "R_AARCH64_ABS64"),
        (EM_AARCH64, R_AARCH64_GLOB_DAT) => (Absolute64, "R_AARCH64_GLOB_DAT"),
        (EM_AARCH64, R_AARCH64_JUMP_SLOT) => (Absolute64, "R_AARCH64_JUMP_SLOT"),
        (EM_AARCH64, R_AARCH64_RELATIVE) => (Relative, "R_AARCH64_RELATIVE"),
        (EM_RISCV, R_RISCV_32) => (Absolute32, "R_RISCV_32"),
        (EM_RISCV, R_RISCV_64) => (Absolute64, "R_RISCV_64"),
        (EM_RISCV, R_RISCV_RELATIVE) => (Relative, "R_RISCV_RELATIVE"),
        (EM_RISCV, R_RISCV_JUMP_SLOT) => (Absolute64, "R_RISCV_JUMP_SLOT"),
        refused => return Err(refused_relocation(refused)),
    };
    Ok(Some(applied))
}

/// The name of a refused relocation type and whether it is a TLS one.
fn refused_relocation(key: (u16, u32)) -> (&'static str, bool) {
    match key {
        (EM_X86_64, R_X86_64_COPY) => ("R_X86_64_COPY", false),
        (EM_X86_64, R_X86_64_DTPMOD64) => ("R_X86_64_DTPMOD64", true),
        (EM_X86_64, R_X86_64_DTPOFF64) => ("R_X86_64_DTPOFF64", true),
        (EM_X86_64, R_X86_64_TPOFF64) => ("R_X86_64_TPOFF64", true),
        (EM_X86_64, R_X86_64_TLSDESC) => ("R_X86_64_TLSDESC", true),
        (EM_X86_64, R_X86_64_IRELATIVE) => ("R_X86_64_IRELATIVE", false),
        (EM_X86_64, R_X86_64_RELATIVE64) => ("R_X86_64_RELATIVE64", false),
        (EM_AARCH64, R_AARCH64_COPY) => ("R_AARCH64_COPY", false),
        (EM_AARCH64, R_AARCH64_TLS_DTPMOD) => ("R_AARCH64_TLS_DTPMOD64", true),
        (EM_AARCH64, R_AARCH64_TLS_DTPREL) => ("R_AARCH64_TLS_DTPREL64", true),
        (EM_AARCH64, R_AARCH64_TLS_TPREL) => ("R_AARCH64_TLS_TPREL64", true),
        (EM_AARCH64, R_AARCH64_TLSDESC) => ("R_AARCH64_TLSDESC", true),
        (EM_AARCH64, R_AARCH64_IRELATIVE) => ("R_AARCH64_IRELATIVE", false),
        (EM_RISCV, R_RISCV_COPY) => ("R_RISCV_COPY", false),
        (EM_RISCV, R_RISCV_TLS_DTPMOD32..=R_RISCV_TLS_TPREL64) => ("R_RISCV_TLS_*", true),
        (EM_RISCV, R_RISCV_IRELATIVE) => ("R_RISCV_IRELATIVE", false),
        _ => ("unknown", false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relocation_values_are_range_checked() {
        let relocation = |kind, symbol, addend| PlannedRelocation {
            image_offset: 0x100,
            kind,
            name: "R_TEST",
            addend,
            symbol,
            address: 0x100,
        };
        let base = 0x7f00_0000_0000;
        let (bytes, width) =
            relocation(RelocationKind::Relative, SymbolValue::None, 0x40).bytes(base).unwrap();
        assert_eq!((u64::from_ne_bytes(bytes), width), (base + 0x40, 8));
        let (bytes, width) =
            relocation(RelocationKind::PcRelative32, SymbolValue::ImageOffset(0x80), -4).bytes(base).unwrap();
        assert_eq!((i32::from_ne_bytes(bytes[..4].try_into().unwrap()), width), (0x80 - 4 - 0x100, 4));
        // An absolute 32-bit address of a high image does not fit.
        let error = relocation(RelocationKind::Absolute32, SymbolValue::ImageOffset(0x80), 0)
            .bytes(base)
            .unwrap_err();
        assert!(matches!(error, EmbeddedElfError::RelocationOverflow { width: 4, .. }), "{error}");
        let (bytes, _) = relocation(RelocationKind::Absolute32Signed, SymbolValue::Absolute(0x10), -0x20)
            .bytes(base)
            .unwrap();
        assert_eq!(i32::from_ne_bytes(bytes[..4].try_into().unwrap()), -0x10);
        assert!(
            relocation(RelocationKind::Absolute32, SymbolValue::Absolute(0x10), -0x20).bytes(base).is_err()
        );
    }
}
