//! What an image is validated for: machine, byte order and page size.

use object::elf::{ELFCLASS64, EM_AARCH64, EM_RISCV, EM_X86_64};

use crate::error::EmbeddedElfError;
use crate::fatelf::RecordWanted;

/// The exported query function every plugin has.
pub const QUERY_SYMBOL: &str = "iree_hal_executable_plugin_query";

/// The exported query function of IREE's compiled executables (the
/// `llvm-cpu` backend's embedded ELF libraries), which
/// [`ElfTarget::with_query_symbol`] validates instead of [`QUERY_SYMBOL`].
pub const LIBRARY_QUERY_SYMBOL: &str = "iree_hal_executable_library_query";

/// The machine, byte order and page size an image is validated for, and
/// the exported function it must have ([`QUERY_SYMBOL`] unless
/// [`ElfTarget::with_query_symbol`] says otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElfTarget {
    machine: u16,
    pub(crate) little_endian: bool,
    page_size: u64,
    pub(crate) query_symbol: &'static str,
}

/// `page_size` rounded up to a power of two, at least 1 and at most 2^32.
fn normalized_page_size(page_size: u64) -> u64 {
    page_size.clamp(1, 1 << 32).next_power_of_two()
}

impl ElfTarget {
    /// x86_64 (little-endian) with `page_size`-byte pages (rounded up to a
    /// power of two).
    #[must_use]
    pub fn x86_64(page_size: u64) -> Self {
        Self {
            machine: EM_X86_64,
            little_endian: true,
            page_size: normalized_page_size(page_size),
            query_symbol: QUERY_SYMBOL,
        }
    }

    /// aarch64 (little-endian) with `page_size`-byte pages (rounded up to a
    /// power of two).
    #[must_use]
    pub fn aarch64(page_size: u64) -> Self {
        Self {
            machine: EM_AARCH64,
            little_endian: true,
            page_size: normalized_page_size(page_size),
            query_symbol: QUERY_SYMBOL,
        }
    }

    /// riscv64 (little-endian) with `page_size`-byte pages (rounded up to a
    /// power of two).
    #[must_use]
    pub fn riscv64(page_size: u64) -> Self {
        Self {
            machine: EM_RISCV,
            little_endian: true,
            page_size: normalized_page_size(page_size),
            query_symbol: QUERY_SYMBOL,
        }
    }

    /// The process's own architecture and page size.
    ///
    /// # Errors
    /// [`EmbeddedElfError::UnsupportedHost`] on an architecture without a
    /// relocation table here (only 64-bit x86_64, aarch64 and riscv64 are
    /// supported), or on a platform without the mapping step.
    pub fn host() -> Result<Self, EmbeddedElfError> {
        let page_size = crate::map::page_size()?;
        if cfg!(target_arch = "x86_64") {
            Ok(Self::x86_64(page_size))
        } else if cfg!(target_arch = "aarch64") && cfg!(target_endian = "little") {
            Ok(Self::aarch64(page_size))
        } else if cfg!(target_arch = "riscv64") {
            Ok(Self::riscv64(page_size))
        } else {
            Err(EmbeddedElfError::UnsupportedHost {
                reason: "only x86_64, aarch64 and riscv64 (64-bit, little-endian) are supported",
            })
        }
    }

    /// The same target, requiring the export `symbol` instead of
    /// [`QUERY_SYMBOL`]: IREE's own compiled executables export
    /// [`LIBRARY_QUERY_SYMBOL`](crate::LIBRARY_QUERY_SYMBOL) and are
    /// otherwise the same standalone ELF format, an outside corpus for the
    /// loader (`docs/src/reference/embedded-elf.md`).
    #[must_use]
    pub fn with_query_symbol(mut self, symbol: &'static str) -> Self {
        self.query_symbol = symbol;
        self
    }

    /// The ELF `e_machine` this target accepts.
    #[must_use]
    pub fn machine(&self) -> u16 {
        self.machine
    }

    /// The page size protections are applied with.
    #[must_use]
    pub fn page_size(&self) -> u64 {
        self.page_size
    }

    pub(crate) fn machine_label(&self) -> &'static str {
        match self.machine {
            EM_X86_64 => "x86_64",
            EM_AARCH64 => "aarch64",
            _ => "riscv64",
        }
    }

    pub(crate) fn wanted(&self) -> RecordWanted {
        RecordWanted {
            machine: self.machine,
            word_size: ELFCLASS64,
            // FatELF's byte order: 0 big-endian, 1 little-endian.
            byte_order: u8::from(self.little_endian),
        }
    }

    pub(crate) fn describe(&self) -> String {
        self.wanted().describe()
    }
}

/// The ELF `e_machine` of this process's architecture, when it has one
/// this crate knows (more than [`ElfTarget::host`] can map: a shared
/// library the OS loader opens is checked against it too); `None`
/// elsewhere.
#[must_use]
pub const fn host_machine() -> Option<u16> {
    use object::elf::{EM_386, EM_ARM, EM_LOONGARCH, EM_PPC, EM_PPC64, EM_S390};
    if cfg!(target_arch = "x86_64") {
        Some(EM_X86_64)
    } else if cfg!(target_arch = "aarch64") {
        Some(EM_AARCH64)
    } else if cfg!(target_arch = "x86") {
        Some(EM_386)
    } else if cfg!(target_arch = "arm") {
        Some(EM_ARM)
    } else if cfg!(any(target_arch = "riscv64", target_arch = "riscv32")) {
        Some(EM_RISCV)
    } else if cfg!(target_arch = "powerpc64") {
        Some(EM_PPC64)
    } else if cfg!(target_arch = "powerpc") {
        Some(EM_PPC)
    } else if cfg!(target_arch = "s390x") {
        Some(EM_S390)
    } else if cfg!(target_arch = "loongarch64") {
        Some(EM_LOONGARCH)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_sizes_are_powers_of_two() {
        assert_eq!(ElfTarget::x86_64(0).page_size(), 1);
        assert_eq!(ElfTarget::aarch64(4097).page_size(), 8192);
        assert_eq!(ElfTarget::riscv64(u64::MAX).page_size(), 1 << 32);
    }
}
