//! What validation decided: the plan the mapping step carries out.

use std::ops::Range;

use object::elf::{PF_R, PF_W, PF_X};

use crate::fatelf::FatElfRecord;
use crate::relocation::PlannedRelocation;

/// Memory protections of one segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SegmentFlags {
    /// Readable.
    pub read: bool,
    /// Writable.
    pub write: bool,
    /// Executable.
    pub execute: bool,
}

impl SegmentFlags {
    pub(crate) fn from_elf(flags: u32) -> Self {
        Self { read: flags & PF_R != 0, write: flags & PF_W != 0, execute: flags & PF_X != 0 }
    }
}

impl std::fmt::Display for SegmentFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let flag = |on: bool, c: char| if on { c } else { '-' };
        write!(f, "{}{}{}", flag(self.read, 'r'), flag(self.write, 'w'), flag(self.execute, 'x'))
    }
}

/// One loadable segment, as the mapping step places it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedSegment {
    /// Offset of the segment's first byte from the image base.
    pub image_offset: u64,
    /// Bytes of memory (`p_memsz`); those past the file bytes are zero.
    pub mem_size: u64,
    /// The file bytes to copy, as a range of the ELF ([`ElfPlan::elf`]).
    pub file_range: Range<u64>,
    /// Final protections.
    pub flags: SegmentFlags,
}

/// Which symbol hash table the image was read through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolHashTable {
    /// The System V `DT_HASH` table (the one IREE's loader needs).
    Sysv,
    /// The GNU `DT_GNU_HASH` table.
    Gnu,
}

/// Everything the mapping step needs to load one ELF image, decided from
/// the bytes alone by [`validate`](crate::validate).
#[derive(Clone, Debug)]
pub struct ElfPlan {
    pub(crate) record: Option<FatElfRecord>,
    pub(crate) elf: Range<usize>,
    pub(crate) machine: u16,
    pub(crate) image_size: u64,
    pub(crate) segments: Vec<PlannedSegment>,
    pub(crate) relocations: Vec<PlannedRelocation>,
    pub(crate) relro: Option<Range<u64>>,
    pub(crate) query_offset: u64,
    pub(crate) optional_exports: Vec<(&'static str, u64)>,
    /// The virtual address the image base stands for (the first segment's
    /// address rounded down to a page).
    pub(crate) base_vaddr: u64,
    pub(crate) hash_table: SymbolHashTable,
    pub(crate) symbol_count: u64,
}

impl ElfPlan {
    /// The FatELF record chosen, or `None` for a plain ELF.
    #[must_use]
    pub fn record(&self) -> Option<&FatElfRecord> {
        self.record.as_ref()
    }

    /// The chosen ELF's byte range in the input.
    #[must_use]
    pub fn elf(&self) -> Range<usize> {
        self.elf.clone()
    }

    /// The ELF's `e_machine`.
    #[must_use]
    pub fn machine(&self) -> u16 {
        self.machine
    }

    /// Bytes of memory to reserve (whole pages).
    #[must_use]
    pub fn image_size(&self) -> u64 {
        self.image_size
    }

    /// The loadable segments, in address order.
    #[must_use]
    pub fn segments(&self) -> &[PlannedSegment] {
        &self.segments
    }

    /// How many relocations the mapping step applies (`NONE` entries
    /// excluded).
    #[must_use]
    pub fn relocation_count(&self) -> usize {
        self.relocations.len()
    }

    /// The range made read-only after relocation (`PT_GNU_RELRO`, whole
    /// pages, from the image base), if any.
    #[must_use]
    pub fn relro(&self) -> Option<Range<u64>> {
        self.relro.clone()
    }

    /// The virtual address of the file that the image base stands for (the
    /// first loadable segment's, rounded down to a page): a symbol's
    /// `st_value` minus this is its offset from the base.
    #[must_use]
    pub fn base_vaddr(&self) -> u64 {
        self.base_vaddr
    }

    /// Offset of the query function from the image base.
    #[must_use]
    pub fn query_offset(&self) -> u64 {
        self.query_offset
    }

    /// xplug's optional exports ([`xplug_abi::OPTIONAL_EXPORTS`]) the image
    /// defines as code: (name, offset from the image base), in the list's
    /// order.
    #[must_use]
    pub fn optional_exports(&self) -> &[(&'static str, u64)] {
        &self.optional_exports
    }

    /// Offset of the optional export `name` from the image base, when the
    /// image defines it as code.
    #[must_use]
    pub fn optional_export(&self, name: &str) -> Option<u64> {
        self.optional_exports.iter().find(|(export, _)| *export == name).map(|(_, offset)| *offset)
    }

    /// The hash table symbols were found through.
    #[must_use]
    pub fn hash_table(&self) -> SymbolHashTable {
        self.hash_table
    }

    /// Entries in the dynamic symbol table (including the null symbol).
    #[must_use]
    pub fn symbol_count(&self) -> u64 {
        self.symbol_count
    }
}
