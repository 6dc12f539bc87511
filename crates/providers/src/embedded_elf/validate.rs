//! The pure half of the embedded loader: reads an ELF (or picks one out of a
//! FatELF container) and decides everything the mapping step will do, without
//! touching any memory outside the input.
//!
//! Every offset, size and address is computed with checked arithmetic and
//! every table is checked to lie inside the input before it is read; symbol
//! hash chains are walked at most once around the symbol table, so a cyclic
//! or huge chain is refused instead of looping.

use std::ops::Range;

use object::elf::{Dyn64, FileHeader64, ProgramHeader64, Rela64, Sym64};
use object::endian::Endianness;
use object::pod::{self, Pod};

use super::EmbeddedElfError;
use super::fatelf::{self, FatElfRecord, RecordWanted};

/// The exported query function every plugin has.
pub const QUERY_SYMBOL: &str = "iree_hal_executable_plugin_query";

/// The largest image (span of all loadable segments) the loader maps.
pub const MAX_IMAGE_SIZE: u64 = 1 << 30;

const EM_X86_64: u16 = 62;
const EM_AARCH64: u16 = 183;
const EM_RISCV: u16 = 243;

const ET_DYN: u16 = 3;
const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_TLS: u32 = 7;
const PT_GNU_RELRO: u32 = 0x6474_e552;
const PF_X: u32 = 1;
const PF_W: u32 = 2;
const PF_R: u32 = 4;

const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_PLTRELSZ: u64 = 2;
const DT_HASH: u64 = 4;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_RELA: u64 = 7;
const DT_RELASZ: u64 = 8;
const DT_RELAENT: u64 = 9;
const DT_STRSZ: u64 = 10;
const DT_SYMENT: u64 = 11;
const DT_INIT: u64 = 12;
const DT_REL: u64 = 17;
const DT_PLTREL: u64 = 20;
const DT_JMPREL: u64 = 23;
const DT_INIT_ARRAY: u64 = 25;
const DT_INIT_ARRAYSZ: u64 = 27;
const DT_FLAGS: u64 = 30;
const DT_PREINIT_ARRAY: u64 = 32;
const DT_PREINIT_ARRAYSZ: u64 = 33;
const DT_RELR: u64 = 36;
const DT_GNU_HASH: u64 = 0x6fff_fef5;
const DF_STATIC_TLS: u64 = 0x10;

const SHN_UNDEF: u16 = 0;
const SHN_ABS: u16 = 0xfff1;

/// The machine, byte order and page size an image is validated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElfTarget {
    machine: u16,
    little_endian: bool,
    page_size: u64,
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
        Self { machine: EM_X86_64, little_endian: true, page_size: normalized_page_size(page_size) }
    }

    /// aarch64 (little-endian) with `page_size`-byte pages (rounded up to a
    /// power of two).
    #[must_use]
    pub fn aarch64(page_size: u64) -> Self {
        Self { machine: EM_AARCH64, little_endian: true, page_size: normalized_page_size(page_size) }
    }

    /// riscv64 (little-endian) with `page_size`-byte pages (rounded up to a
    /// power of two).
    #[must_use]
    pub fn riscv64(page_size: u64) -> Self {
        Self { machine: EM_RISCV, little_endian: true, page_size: normalized_page_size(page_size) }
    }

    /// The process's own architecture and page size.
    ///
    /// # Errors
    /// [`EmbeddedElfError::UnsupportedHost`] on an architecture without a
    /// relocation table here (only 64-bit x86_64, aarch64 and riscv64 are
    /// supported), or on a platform without the mapping step.
    pub fn host() -> Result<Self, EmbeddedElfError> {
        let page_size = super::map::page_size()?;
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

    fn machine_label(&self) -> &'static str {
        match self.machine {
            EM_X86_64 => "x86_64",
            EM_AARCH64 => "aarch64",
            _ => "riscv64",
        }
    }

    fn wanted(&self) -> RecordWanted {
        RecordWanted { machine: self.machine, word_size: 2, byte_order: u8::from(self.little_endian) }
    }

    fn describe(&self) -> String {
        self.wanted().describe()
    }
}

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
    fn from_elf(flags: u32) -> Self {
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
    fn width(self) -> u64 {
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

/// Which symbol hash table the image was read through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolHashTable {
    /// The System V `DT_HASH` table (the one IREE's loader needs).
    Sysv,
    /// The GNU `DT_GNU_HASH` table.
    Gnu,
}

/// Everything the mapping step needs to load one ELF image, decided from
/// the bytes alone by [`validate`].
#[derive(Clone, Debug)]
pub struct ElfPlan {
    record: Option<FatElfRecord>,
    elf: Range<usize>,
    machine: u16,
    image_size: u64,
    segments: Vec<PlannedSegment>,
    pub(crate) relocations: Vec<PlannedRelocation>,
    relro: Option<Range<u64>>,
    query_offset: u64,
    hash_table: SymbolHashTable,
    symbol_count: u64,
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

    /// Offset of the query function from the image base.
    #[must_use]
    pub fn query_offset(&self) -> u64 {
        self.query_offset
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

/// Validates `bytes` (a FatELF container or one ELF) for this host.
///
/// Pure: reads only `bytes`, writes nothing, maps nothing.
///
/// ```
/// use xplug_providers::embedded_elf::{EmbeddedElfError, validate};
///
/// let error = validate(b"MZ\x90\x00 not an ELF").unwrap_err();
/// assert!(matches!(error, EmbeddedElfError::BadMagic { .. }));
/// ```
///
/// # Errors
/// An [`EmbeddedElfError`] naming the first check that fails.
pub fn validate(bytes: &[u8]) -> Result<ElfPlan, EmbeddedElfError> {
    validate_for(bytes, ElfTarget::host()?)
}

/// Validates `bytes` for `target` (any supported architecture, whatever
/// the host is); see [`validate`].
///
/// # Errors
/// An [`EmbeddedElfError`] naming the first check that fails.
pub fn validate_for(bytes: &[u8], target: ElfTarget) -> Result<ElfPlan, EmbeddedElfError> {
    let (record, elf_range) = if fatelf::is_fatelf(bytes) {
        let record = fatelf::select(bytes, target.wanted())?;
        (Some(record), record.range())
    } else {
        (None, 0..bytes.len())
    };
    let elf = &bytes[elf_range.clone()];
    let mut plan = if target.little_endian {
        Reader { elf, endian: Endianness::Little, target }.plan()?
    } else {
        Reader { elf, endian: Endianness::Big, target }.plan()?
    };
    plan.record = record;
    plan.elf = elf_range;
    Ok(plan)
}

/// The value of one `DT_*` tag, if present (the first occurrence).
#[derive(Default)]
struct Dynamic {
    hash: Option<u64>,
    gnu_hash: Option<u64>,
    strtab: Option<u64>,
    strsz: Option<u64>,
    symtab: Option<u64>,
    syment: Option<u64>,
    rela: Option<u64>,
    relasz: Option<u64>,
    relaent: Option<u64>,
    jmprel: Option<u64>,
    pltrelsz: Option<u64>,
    pltrel: Option<u64>,
    needed: Vec<u64>,
    /// The first initialiser tag seen, refused after imports (which say
    /// more about a non-standalone file).
    initializer: Option<&'static str>,
}

struct Reader<'a> {
    elf: &'a [u8],
    endian: Endianness,
    target: ElfTarget,
}

struct LoadSegment {
    index: usize,
    vaddr: u64,
    offset: u64,
    file_size: u64,
    mem_size: u64,
    flags: u32,
}

struct Symbols<'a> {
    table: &'a [Sym64<Endianness>],
    strings: &'a [u8],
}

impl Reader<'_> {
    fn available(&self) -> u64 {
        self.elf.len() as u64
    }

    /// `count` values of `T` at `offset`, checked to lie inside the ELF.
    fn slice<T: Pod>(&self, table: &'static str, offset: u64, count: u64) -> Result<&[T], EmbeddedElfError> {
        let size = count.checked_mul(size_of::<T>() as u64);
        let out_of_bounds = || EmbeddedElfError::TableOutOfBounds {
            table,
            offset,
            size: size.unwrap_or(u64::MAX),
            available: self.available(),
        };
        let end = size.and_then(|size| offset.checked_add(size)).ok_or_else(out_of_bounds)?;
        if end > self.available() {
            return Err(out_of_bounds());
        }
        // Both fit in usize: they are at most the input's length.
        let (start, count) = (offset as usize, count as usize);
        pod::slice_from_bytes::<T>(&self.elf[start..], count)
            .map(|(values, _)| values)
            .map_err(|()| out_of_bounds())
    }

    fn plan(&self) -> Result<ElfPlan, EmbeddedElfError> {
        let header = self.header()?;
        let e = self.endian;
        let phentsize = u64::from(header.e_phentsize.get(e));
        if phentsize != size_of::<ProgramHeader64<Endianness>>() as u64 {
            return Err(EmbeddedElfError::EntrySize {
                table: "program header",
                expected: 56,
                found: phentsize,
            });
        }
        let phdrs: &[ProgramHeader64<Endianness>] =
            self.slice("program header table", header.e_phoff.get(e), u64::from(header.e_phnum.get(e)))?;
        let shnum = u64::from(header.e_shnum.get(e));
        if shnum != 0 {
            let shentsize = u64::from(header.e_shentsize.get(e));
            if shentsize != 64 {
                return Err(EmbeddedElfError::EntrySize {
                    table: "section header",
                    expected: 64,
                    found: shentsize,
                });
            }
            self.slice::<[u8; 64]>("section header table", header.e_shoff.get(e), shnum)?;
        }

        let loads = self.load_segments(phdrs)?;
        let base_vaddr = loads[0].vaddr / self.target.page_size * self.target.page_size;
        let end = loads.iter().map(|s| s.vaddr + s.mem_size).max().unwrap_or(base_vaddr);
        let span = end - base_vaddr;
        let image_size = span
            .checked_next_multiple_of(self.target.page_size)
            .filter(|&size| size <= MAX_IMAGE_SIZE)
            .ok_or(EmbeddedElfError::TooLarge { what: "image", size: span, limit: MAX_IMAGE_SIZE })?;

        for phdr in phdrs {
            if phdr.p_type.get(e) == PT_TLS {
                return Err(EmbeddedElfError::ThreadLocalStorage { found: "a PT_TLS segment".to_owned() });
            }
        }
        let relro = self.relro(phdrs, &loads, base_vaddr)?;

        let dynamic_header = phdrs
            .iter()
            .find(|phdr| phdr.p_type.get(e) == PT_DYNAMIC)
            .ok_or(EmbeddedElfError::NoDynamicSection)?;
        let dynamic = self.dynamic(dynamic_header)?;

        let strtab = dynamic.strtab.ok_or(EmbeddedElfError::MissingDynamicEntry { tag: "DT_STRTAB" })?;
        let strsz = dynamic.strsz.ok_or(EmbeddedElfError::MissingDynamicEntry { tag: "DT_STRSZ" })?;
        let strings = self.at_address::<u8>(&loads, "the string table (DT_STRTAB)", strtab, strsz)?;
        if let Some(&needed) = dynamic.needed.first() {
            return Err(EmbeddedElfError::NeededLibrary {
                name: string_at(strings, needed).unwrap_or_else(|| format!("<name at {needed}>")),
            });
        }
        let symtab = dynamic.symtab.ok_or(EmbeddedElfError::MissingDynamicEntry { tag: "DT_SYMTAB" })?;
        if let Some(syment) = dynamic.syment {
            if syment != 24 {
                return Err(EmbeddedElfError::EntrySize { table: "DT_SYMENT", expected: 24, found: syment });
            }
        }
        let (hash_table, lookup) = match (dynamic.hash, dynamic.gnu_hash) {
            (Some(hash), _) => (SymbolHashTable::Sysv, HashLookup::Sysv(self.sysv_hash(&loads, hash)?)),
            (None, Some(gnu)) => (SymbolHashTable::Gnu, HashLookup::Gnu(self.gnu_hash(&loads, gnu)?)),
            (None, None) => {
                return Err(EmbeddedElfError::MissingDynamicEntry { tag: "DT_HASH or DT_GNU_HASH" });
            }
        };
        let symbol_count = lookup.symbol_count();
        let table = self.at_address::<Sym64<Endianness>>(
            &loads,
            "the symbol table (DT_SYMTAB)",
            symtab,
            symbol_count,
        )?;
        let symbols = Symbols { table, strings };

        // A standalone plugin defines everything it uses.
        for (index, symbol) in symbols.table.iter().enumerate().skip(1) {
            if symbol.st_shndx.get(e) == SHN_UNDEF {
                return Err(EmbeddedElfError::UndefinedSymbol { name: symbols.name(e, index as u64)? });
            }
        }

        if let Some(tag) = dynamic.initializer {
            return Err(EmbeddedElfError::Initializer { tag });
        }

        let query_index = lookup
            .find(self, &symbols, QUERY_SYMBOL)?
            .ok_or(EmbeddedElfError::MissingQuery { symbol: QUERY_SYMBOL })?;
        let query = &symbols.table[query_index as usize];
        let query_address = query.st_value.get(e);
        let in_code = loads.iter().any(|segment| {
            segment.flags & PF_X != 0
                && query_address >= segment.vaddr
                && query_address - segment.vaddr < segment.mem_size
        });
        if query.st_shndx.get(e) == SHN_ABS || !in_code {
            return Err(EmbeddedElfError::QueryNotCode { symbol: QUERY_SYMBOL, address: query_address });
        }

        let mut relocations = Vec::new();
        if let Some(rela) = dynamic.rela {
            let size = dynamic.relasz.ok_or(EmbeddedElfError::MissingDynamicEntry { tag: "DT_RELASZ" })?;
            let entry = dynamic.relaent.ok_or(EmbeddedElfError::MissingDynamicEntry { tag: "DT_RELAENT" })?;
            if entry != 24 {
                return Err(EmbeddedElfError::EntrySize { table: "DT_RELAENT", expected: 24, found: entry });
            }
            self.relocations(
                &loads,
                &symbols,
                base_vaddr,
                "the relocation table (DT_RELA)",
                rela,
                size,
                &mut relocations,
            )?;
        }
        if let Some(jmprel) = dynamic.jmprel {
            let size =
                dynamic.pltrelsz.ok_or(EmbeddedElfError::MissingDynamicEntry { tag: "DT_PLTRELSZ" })?;
            match dynamic.pltrel {
                Some(DT_RELA) => {}
                Some(DT_REL) => {
                    return Err(EmbeddedElfError::UnsupportedDynamicEntry {
                        tag: "DT_PLTREL = DT_REL",
                        hint: "64-bit plugins must use RELA relocations",
                    });
                }
                _ => return Err(EmbeddedElfError::MissingDynamicEntry { tag: "DT_PLTREL (= DT_RELA)" }),
            }
            self.relocations(
                &loads,
                &symbols,
                base_vaddr,
                "the PLT relocation table (DT_JMPREL)",
                jmprel,
                size,
                &mut relocations,
            )?;
        }

        let segments = loads
            .iter()
            .map(|segment| PlannedSegment {
                image_offset: segment.vaddr - base_vaddr,
                mem_size: segment.mem_size,
                file_range: segment.offset..segment.offset + segment.file_size,
                flags: SegmentFlags::from_elf(segment.flags),
            })
            .collect();
        Ok(ElfPlan {
            record: None,
            elf: 0..0,
            machine: self.target.machine,
            image_size,
            segments,
            relocations,
            relro,
            query_offset: query_address - base_vaddr,
            hash_table,
            symbol_count,
        })
    }

    fn header(&self) -> Result<&FileHeader64<Endianness>, EmbeddedElfError> {
        if self.elf.get(..4) != Some(b"\x7fELF") {
            return Err(EmbeddedElfError::BadMagic { found: self.elf.iter().take(4).copied().collect() });
        }
        let header = self.slice::<FileHeader64<Endianness>>("ELF header", 0, 1).map_err(|_| {
            EmbeddedElfError::Truncated {
                what: "ELF header",
                offset: 0,
                needed: 64,
                available: self.available(),
            }
        })?;
        let header = &header[0];
        let ident = &header.e_ident;
        let e = self.endian;
        let data_ok = ident.data == if self.target.little_endian { 1 } else { 2 };
        let machine = if ident.data == 2 {
            header.e_machine.get(Endianness::Big)
        } else {
            header.e_machine.get(Endianness::Little)
        };
        if ident.class != 2 || !data_ok || machine != self.target.machine {
            let class = match ident.class {
                1 => "32-bit",
                2 => "64-bit",
                _ => "unknown class",
            };
            let order = match ident.data {
                1 => "little-endian",
                2 => "big-endian",
                _ => "unknown byte order",
            };
            return Err(EmbeddedElfError::WrongArchitecture {
                expected: self.target.describe(),
                found: format!("{} ({class}, {order})", fatelf::machine_name(machine)),
            });
        }
        if ident.version != 1 || header.e_version.get(e) != 1 {
            return Err(EmbeddedElfError::BadHeader {
                field: "e_version",
                expected: "1",
                found: u64::from(header.e_version.get(e)),
                hint: "the file is corrupt",
            });
        }
        if header.e_type.get(e) != ET_DYN {
            return Err(EmbeddedElfError::BadHeader {
                field: "e_type",
                expected: "3 (ET_DYN, a shared object)",
                found: u64::from(header.e_type.get(e)),
                hint: "link the plugin with -shared",
            });
        }
        if header.e_ehsize.get(e) != 64 {
            return Err(EmbeddedElfError::EntrySize {
                table: "ELF header (e_ehsize)",
                expected: 64,
                found: u64::from(header.e_ehsize.get(e)),
            });
        }
        Ok(header)
    }

    /// The `PT_LOAD` segments in address order, checked.
    fn load_segments(
        &self,
        phdrs: &[ProgramHeader64<Endianness>],
    ) -> Result<Vec<LoadSegment>, EmbeddedElfError> {
        let e = self.endian;
        let mut loads = Vec::new();
        for (index, phdr) in phdrs.iter().enumerate() {
            if phdr.p_type.get(e) != PT_LOAD {
                continue;
            }
            let segment = LoadSegment {
                index,
                vaddr: phdr.p_vaddr.get(e),
                offset: phdr.p_offset.get(e),
                file_size: phdr.p_filesz.get(e),
                mem_size: phdr.p_memsz.get(e),
                flags: phdr.p_flags.get(e),
            };
            if segment.file_size > segment.mem_size {
                return Err(EmbeddedElfError::SegmentFileSize {
                    index,
                    file_size: segment.file_size,
                    mem_size: segment.mem_size,
                });
            }
            if segment.mem_size > MAX_IMAGE_SIZE {
                return Err(EmbeddedElfError::TooLarge {
                    what: "segment",
                    size: segment.mem_size,
                    limit: MAX_IMAGE_SIZE,
                });
            }
            if segment.vaddr.checked_add(segment.mem_size).is_none_or(|end| end > u64::MAX - MAX_IMAGE_SIZE) {
                return Err(EmbeddedElfError::TooLarge {
                    what: "segment's address range",
                    size: u64::MAX,
                    limit: MAX_IMAGE_SIZE,
                });
            }
            self.slice::<u8>("segment file bytes", segment.offset, segment.file_size)?;
            if segment.flags & PF_W != 0 && segment.flags & PF_X != 0 {
                return Err(EmbeddedElfError::WritableAndExecutable { index, flags: segment.flags });
            }
            loads.push(segment);
        }
        if loads.is_empty() {
            return Err(EmbeddedElfError::NoLoadSegments);
        }
        loads.sort_by_key(|segment| segment.vaddr);
        let page = self.target.page_size;
        for pair in loads.windows(2) {
            let (first, second) = (&pair[0], &pair[1]);
            let first_end = first.vaddr + first.mem_size;
            let ranges = (first.vaddr..first_end, second.vaddr..second.vaddr + second.mem_size);
            let how = if first_end > second.vaddr {
                Some("overlap")
            } else if first.mem_size != 0
                && second.mem_size != 0
                && (first_end - 1) / page == second.vaddr / page
                && first.flags != second.flags
            {
                Some("share a page with different protections")
            } else {
                None
            };
            if let Some(how) = how {
                return Err(EmbeddedElfError::SegmentsOverlap {
                    first: first.index.min(second.index),
                    second: first.index.max(second.index),
                    how,
                    first_range: ranges.0,
                    second_range: ranges.1,
                });
            }
        }
        Ok(loads)
    }

    /// The `PT_GNU_RELRO` range, whole pages inside one writable segment.
    fn relro(
        &self,
        phdrs: &[ProgramHeader64<Endianness>],
        loads: &[LoadSegment],
        base_vaddr: u64,
    ) -> Result<Option<Range<u64>>, EmbeddedElfError> {
        let e = self.endian;
        let Some(phdr) = phdrs.iter().find(|phdr| phdr.p_type.get(e) == PT_GNU_RELRO) else {
            return Ok(None);
        };
        let (start, size) = (phdr.p_vaddr.get(e), phdr.p_memsz.get(e));
        let inside = loads.iter().any(|segment| {
            start >= segment.vaddr
                && start.checked_add(size).is_some_and(|end| end <= segment.vaddr + segment.mem_size)
        });
        if !inside {
            return Err(EmbeddedElfError::AddressNotInFile {
                what: "the RELRO range (PT_GNU_RELRO)",
                address: start,
                size,
            });
        }
        // Only whole pages can change protection: round the start down (the
        // page holds nothing else writable) and the end down (a partial
        // last page stays writable, as other loaders do).
        let page = self.target.page_size;
        let first = (start - base_vaddr) / page * page;
        let last = (start + size - base_vaddr) / page * page;
        Ok((last > first).then_some(first..last))
    }

    fn dynamic(&self, phdr: &ProgramHeader64<Endianness>) -> Result<Dynamic, EmbeddedElfError> {
        let e = self.endian;
        let size = phdr.p_filesz.get(e);
        let entries: &[Dyn64<Endianness>] = self.slice("dynamic section", phdr.p_offset.get(e), size / 16)?;
        let mut dynamic = Dynamic::default();
        let mut init_array_size = None;
        let mut preinit_array_size = None;
        let mut init_array = false;
        let mut preinit_array = false;
        for entry in entries {
            let (tag, value) = (entry.d_tag.get(e), entry.d_val.get(e));
            let slot = match tag {
                DT_NULL => break,
                DT_NEEDED => {
                    dynamic.needed.push(value);
                    continue;
                }
                DT_HASH => &mut dynamic.hash,
                DT_GNU_HASH => &mut dynamic.gnu_hash,
                DT_STRTAB => &mut dynamic.strtab,
                DT_STRSZ => &mut dynamic.strsz,
                DT_SYMTAB => &mut dynamic.symtab,
                DT_SYMENT => &mut dynamic.syment,
                DT_RELA => &mut dynamic.rela,
                DT_RELASZ => &mut dynamic.relasz,
                DT_RELAENT => &mut dynamic.relaent,
                DT_JMPREL => &mut dynamic.jmprel,
                DT_PLTRELSZ => &mut dynamic.pltrelsz,
                DT_PLTREL => &mut dynamic.pltrel,
                DT_INIT => {
                    dynamic.initializer.get_or_insert("DT_INIT");
                    continue;
                }
                DT_INIT_ARRAY => {
                    init_array = true;
                    continue;
                }
                DT_INIT_ARRAYSZ => &mut init_array_size,
                DT_PREINIT_ARRAY => {
                    preinit_array = true;
                    continue;
                }
                DT_PREINIT_ARRAYSZ => &mut preinit_array_size,
                DT_REL => {
                    return Err(EmbeddedElfError::UnsupportedDynamicEntry {
                        tag: "DT_REL",
                        hint: "64-bit plugins must use RELA relocations (link for a 64-bit target)",
                    });
                }
                DT_RELR => {
                    return Err(EmbeddedElfError::UnsupportedDynamicEntry {
                        tag: "DT_RELR (packed relative relocations)",
                        hint: "link without `-z pack-relative-relocs`",
                    });
                }
                DT_FLAGS if value & DF_STATIC_TLS != 0 => {
                    return Err(EmbeddedElfError::ThreadLocalStorage {
                        found: "the DF_STATIC_TLS flag".to_owned(),
                    });
                }
                _ => continue,
            };
            slot.get_or_insert(value);
        }
        // An initialiser array is refused when it has entries (an empty one
        // is harmless); an array without its size counts as having entries.
        if init_array && init_array_size != Some(0) {
            dynamic.initializer.get_or_insert("DT_INIT_ARRAY");
        }
        if preinit_array && preinit_array_size != Some(0) {
            dynamic.initializer.get_or_insert("DT_PREINIT_ARRAY");
        }
        Ok(dynamic)
    }

    /// `count` values of `T` at virtual address `address`, which must lie
    /// in one segment's file bytes.
    fn at_address<T: Pod>(
        &self,
        loads: &[LoadSegment],
        what: &'static str,
        address: u64,
        count: u64,
    ) -> Result<&[T], EmbeddedElfError> {
        let not_in_file = || EmbeddedElfError::AddressNotInFile {
            what,
            address,
            size: count.saturating_mul(size_of::<T>() as u64),
        };
        let size = count.checked_mul(size_of::<T>() as u64).ok_or_else(not_in_file)?;
        let segment = loads
            .iter()
            .find(|segment| {
                address >= segment.vaddr
                    && address.checked_add(size).is_some_and(|end| end <= segment.vaddr + segment.file_size)
            })
            .ok_or_else(not_in_file)?;
        self.slice::<T>(what, segment.offset + (address - segment.vaddr), count)
    }

    fn sysv_hash<'a>(
        &'a self,
        loads: &[LoadSegment],
        address: u64,
    ) -> Result<SysvHash<'a>, EmbeddedElfError> {
        let header =
            self.at_address::<object::U32<Endianness>>(loads, "the hash table (DT_HASH)", address, 2)?;
        let (nbucket, nchain) =
            (u64::from(header[0].get(self.endian)), u64::from(header[1].get(self.endian)));
        if nbucket == 0 && nchain > 1 {
            return Err(EmbeddedElfError::BadHashTable {
                table: "DT_HASH",
                reason: format!("it has no buckets for {nchain} symbols"),
            });
        }
        let words = self.at_address::<object::U32<Endianness>>(
            loads,
            "the hash table (DT_HASH)",
            address,
            2 + nbucket + nchain,
        )?;
        Ok(SysvHash {
            buckets: &words[2..2 + nbucket as usize],
            chains: &words[2 + nbucket as usize..],
            endian: self.endian,
        })
    }

    fn gnu_hash<'a>(&'a self, loads: &[LoadSegment], address: u64) -> Result<GnuHash<'a>, EmbeddedElfError> {
        let e = self.endian;
        let header = self.at_address::<object::U32<Endianness>>(
            loads,
            "the GNU hash table (DT_GNU_HASH)",
            address,
            4,
        )?;
        let (nbucket, symoffset, bloom_size) =
            (u64::from(header[0].get(e)), u64::from(header[1].get(e)), u64::from(header[2].get(e)));
        let buckets_at = bloom_size
            .checked_mul(8)
            .and_then(|bloom| address.checked_add(16)?.checked_add(bloom))
            .ok_or(EmbeddedElfError::BadHashTable {
                table: "DT_GNU_HASH",
                reason: format!("its bloom filter size {bloom_size} overflows"),
            })?;
        let buckets =
            self.at_address::<object::U32<Endianness>>(loads, "the GNU hash buckets", buckets_at, nbucket)?;
        let chains_at = buckets_at + nbucket * 4;
        // The chain array runs to the end of the symbol table, whose length
        // the table does not record: take what the segment holds and find
        // the last symbol by walking from the highest bucket.
        let segment = loads
            .iter()
            .find(|segment| chains_at >= segment.vaddr && chains_at <= segment.vaddr + segment.file_size)
            .ok_or(EmbeddedElfError::AddressNotInFile {
                what: "the GNU hash chains",
                address: chains_at,
                size: 0,
            })?;
        let room = (segment.vaddr + segment.file_size - chains_at) / 4;
        let chains =
            self.at_address::<object::U32<Endianness>>(loads, "the GNU hash chains", chains_at, room)?;
        let max_bucket = buckets.iter().map(|bucket| u64::from(bucket.get(e))).max().unwrap_or(0);
        let mut count = symoffset.max(1);
        if max_bucket >= symoffset && max_bucket != 0 {
            let mut index = max_bucket;
            loop {
                let Some(word) = chains.get((index - symoffset) as usize) else {
                    return Err(EmbeddedElfError::BadHashTable {
                        table: "DT_GNU_HASH",
                        reason: format!(
                            "the chain from symbol {max_bucket} runs past the end of its segment without an end marker"
                        ),
                    });
                };
                if word.get(e) & 1 != 0 {
                    break;
                }
                index += 1;
            }
            count = index + 1;
        }
        Ok(GnuHash { nbucket, symoffset, buckets, chains, count, endian: e })
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "one call per relocation table; a struct would only rename them"
    )]
    fn relocations(
        &self,
        loads: &[LoadSegment],
        symbols: &Symbols<'_>,
        base_vaddr: u64,
        what: &'static str,
        address: u64,
        size: u64,
        out: &mut Vec<PlannedRelocation>,
    ) -> Result<(), EmbeddedElfError> {
        let e = self.endian;
        let entries = self.at_address::<Rela64<Endianness>>(loads, what, address, size / 24)?;
        let symbol_count = symbols.table.len() as u64;
        for entry in entries {
            let r_offset = entry.r_offset.get(e);
            let (r_type, r_sym) = (entry.r_type(e, false), u64::from(entry.r_sym(e, false)));
            let Some((kind, name)) =
                relocation_kind(self.target.machine, r_type).map_err(|(name, tls)| {
                    if tls {
                        EmbeddedElfError::ThreadLocalStorage {
                            found: format!("relocation {name} at address {r_offset:#x}"),
                        }
                    } else {
                        EmbeddedElfError::UnsupportedRelocation {
                            machine: self.target.machine_label(),
                            r_type,
                            name,
                            address: r_offset,
                        }
                    }
                })?
            else {
                continue;
            };
            let width = kind.width();
            let inside = loads.iter().any(|segment| {
                r_offset >= segment.vaddr
                    && r_offset.checked_add(width).is_some_and(|end| end <= segment.vaddr + segment.mem_size)
            });
            if !inside {
                return Err(EmbeddedElfError::RelocationOutOfImage { address: r_offset, width });
            }
            let symbol = if r_sym == 0 {
                SymbolValue::None
            } else {
                let symbol = symbols.table.get(r_sym as usize).ok_or_else(|| {
                    EmbeddedElfError::SymbolIndexOutOfRange {
                        user: format!("relocation {name} at address {r_offset:#x}"),
                        index: r_sym,
                        count: symbol_count,
                    }
                })?;
                let value = symbol.st_value.get(e);
                if symbol.st_shndx.get(e) == SHN_ABS {
                    SymbolValue::Absolute(value)
                } else {
                    let image_end = loads.iter().map(|s| s.vaddr + s.mem_size).max().unwrap_or(0);
                    if value < base_vaddr || value > image_end {
                        return Err(EmbeddedElfError::SymbolOutOfImage {
                            name: symbols.name(e, r_sym)?,
                            value,
                            image_size: image_end - base_vaddr,
                        });
                    }
                    SymbolValue::ImageOffset(value - base_vaddr)
                }
            };
            out.push(PlannedRelocation {
                image_offset: r_offset - base_vaddr,
                kind,
                name,
                addend: entry.r_addend.get(e),
                symbol,
                address: r_offset,
            });
        }
        Ok(())
    }
}

impl Symbols<'_> {
    fn name(&self, e: Endianness, index: u64) -> Result<String, EmbeddedElfError> {
        let symbol = &self.table[index as usize];
        let offset = u64::from(symbol.st_name.get(e));
        string_at(self.strings, offset).ok_or(EmbeddedElfError::BadSymbolName {
            index,
            offset,
            size: self.strings.len() as u64,
        })
    }

    fn name_is(&self, e: Endianness, index: u64, name: &str) -> bool {
        let offset = self.table[index as usize].st_name.get(e) as usize;
        self.strings
            .get(offset..)
            .is_some_and(|rest| rest.starts_with(name.as_bytes()) && rest.get(name.len()) == Some(&0))
    }
}

/// The NUL-terminated string at `offset`, lossily decoded.
fn string_at(strings: &[u8], offset: u64) -> Option<String> {
    let rest = strings.get(usize::try_from(offset).ok()?..)?;
    let end = rest.iter().position(|&byte| byte == 0)?;
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

struct SysvHash<'a> {
    buckets: &'a [object::U32<Endianness>],
    chains: &'a [object::U32<Endianness>],
    endian: Endianness,
}

struct GnuHash<'a> {
    nbucket: u64,
    symoffset: u64,
    buckets: &'a [object::U32<Endianness>],
    chains: &'a [object::U32<Endianness>],
    count: u64,
    endian: Endianness,
}

enum HashLookup<'a> {
    Sysv(SysvHash<'a>),
    Gnu(GnuHash<'a>),
}

impl HashLookup<'_> {
    fn symbol_count(&self) -> u64 {
        match self {
            Self::Sysv(table) => table.chains.len() as u64,
            Self::Gnu(table) => table.count,
        }
    }

    /// The index of symbol `name`, walking at most one chain, never more
    /// steps than there are symbols.
    fn find(
        &self,
        reader: &Reader<'_>,
        symbols: &Symbols<'_>,
        name: &str,
    ) -> Result<Option<u64>, EmbeddedElfError> {
        let e = reader.endian;
        let count = symbols.table.len() as u64;
        match self {
            Self::Sysv(table) => {
                if table.buckets.is_empty() {
                    return Ok(None);
                }
                let hash = sysv_hash(name.as_bytes());
                let mut index =
                    u64::from(table.buckets[(hash % table.buckets.len() as u32) as usize].get(table.endian));
                let mut steps = 0u64;
                while index != 0 {
                    if index >= count {
                        return Err(EmbeddedElfError::SymbolIndexOutOfRange {
                            user: "a DT_HASH chain".to_owned(),
                            index,
                            count,
                        });
                    }
                    if symbols.name_is(e, index, name) {
                        return Ok(Some(index));
                    }
                    steps += 1;
                    if steps > count {
                        return Err(EmbeddedElfError::BadHashTable {
                            table: "DT_HASH",
                            reason: format!(
                                "a chain is longer than the {count}-entry symbol table (a cycle)"
                            ),
                        });
                    }
                    index = u64::from(table.chains[index as usize].get(table.endian));
                }
                Ok(None)
            }
            Self::Gnu(table) => {
                if table.nbucket == 0 {
                    return Ok(None);
                }
                let hash = gnu_hash(name.as_bytes());
                let mut index =
                    u64::from(table.buckets[(u64::from(hash) % table.nbucket) as usize].get(table.endian));
                if index < table.symoffset {
                    return Ok(None);
                }
                // Bounded: `index` grows by one each step and stops at the
                // symbol count computed (with an end marker) at parse time.
                while index < table.count {
                    let word = table.chains[(index - table.symoffset) as usize].get(table.endian);
                    if word | 1 == hash | 1 && symbols.name_is(e, index, name) {
                        return Ok(Some(index));
                    }
                    if word & 1 != 0 {
                        break;
                    }
                    index += 1;
                }
                Ok(None)
            }
        }
    }
}

/// The System V ELF hash.
fn sysv_hash(name: &[u8]) -> u32 {
    let mut hash = 0u32;
    for &byte in name {
        hash = (hash << 4).wrapping_add(u32::from(byte));
        let high = hash & 0xf000_0000;
        if high != 0 {
            hash ^= high >> 24;
        }
        hash &= !high;
    }
    hash
}

/// The GNU hash (djb2).
fn gnu_hash(name: &[u8]) -> u32 {
    name.iter().fold(5381u32, |hash, &byte| hash.wrapping_mul(33).wrapping_add(u32::from(byte)))
}

/// How relocation `r_type` of `machine` is applied: `Ok(None)` for NONE,
/// `Err((name, is_tls))` when refused.
fn relocation_kind(
    machine: u16,
    r_type: u32,
) -> Result<Option<(RelocationKind, &'static str)>, (&'static str, bool)> {
    use RelocationKind::*;
    let applied = match (machine, r_type) {
        (EM_X86_64, 0) | (EM_AARCH64, 0 | 256) | (EM_RISCV, 0) => return Ok(None),
        (EM_X86_64, 1) => (Absolute64, "R_X86_64_64"),
        (EM_X86_64, 2) => (PcRelative32, "R_X86_64_PC32"),
        (EM_X86_64, 6) => (Absolute64, "R_X86_64_GLOB_DAT"),
        (EM_X86_64, 7) => (Absolute64, "R_X86_64_JUMP_SLOT"),
        (EM_X86_64, 8) => (Relative, "R_X86_64_RELATIVE"),
        (EM_X86_64, 10) => (Absolute32, "R_X86_64_32"),
        (EM_X86_64, 11) => (Absolute32Signed, "R_X86_64_32S"),
        (EM_AARCH64, 257) => (Absolute64, "R_AARCH64_ABS64"),
        (EM_AARCH64, 1025) => (Absolute64, "R_AARCH64_GLOB_DAT"),
        (EM_AARCH64, 1026) => (Absolute64, "R_AARCH64_JUMP_SLOT"),
        (EM_AARCH64, 1027) => (Relative, "R_AARCH64_RELATIVE"),
        (EM_RISCV, 1) => (Absolute32, "R_RISCV_32"),
        (EM_RISCV, 2) => (Absolute64, "R_RISCV_64"),
        (EM_RISCV, 3) => (Relative, "R_RISCV_RELATIVE"),
        (EM_RISCV, 5) => (Absolute64, "R_RISCV_JUMP_SLOT"),
        refused => return Err(refused_relocation(refused)),
    };
    Ok(Some(applied))
}

/// The name of a refused relocation type and whether it is a TLS one.
fn refused_relocation(key: (u16, u32)) -> (&'static str, bool) {
    match key {
        (EM_X86_64, 5) => ("R_X86_64_COPY", false),
        (EM_X86_64, 16) => ("R_X86_64_DTPMOD64", true),
        (EM_X86_64, 17) => ("R_X86_64_DTPOFF64", true),
        (EM_X86_64, 18) => ("R_X86_64_TPOFF64", true),
        (EM_X86_64, 36) => ("R_X86_64_TLSDESC", true),
        (EM_X86_64, 37) => ("R_X86_64_IRELATIVE", false),
        (EM_X86_64, 38) => ("R_X86_64_RELATIVE64", false),
        (EM_AARCH64, 1024) => ("R_AARCH64_COPY", false),
        (EM_AARCH64, 1028) => ("R_AARCH64_TLS_DTPMOD64", true),
        (EM_AARCH64, 1029) => ("R_AARCH64_TLS_DTPREL64", true),
        (EM_AARCH64, 1030) => ("R_AARCH64_TLS_TPREL64", true),
        (EM_AARCH64, 1031) => ("R_AARCH64_TLSDESC", true),
        (EM_AARCH64, 1032) => ("R_AARCH64_IRELATIVE", false),
        (EM_RISCV, 4) => ("R_RISCV_COPY", false),
        (EM_RISCV, 6..=11) => ("R_RISCV_TLS_*", true),
        (EM_RISCV, 58) => ("R_RISCV_IRELATIVE", false),
        _ => ("unknown", false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_functions_match_the_elf_specifications() {
        // Reference values from the System V ABI and the GNU hash
        // description: "" and a plain name.
        assert_eq!(sysv_hash(b""), 0);
        assert_eq!(gnu_hash(b""), 5381);
        assert_eq!(sysv_hash(b"printf"), 0x077905a6);
        assert_eq!(gnu_hash(b"printf"), 0x156b2bb8);
    }

    #[test]
    fn page_sizes_are_powers_of_two() {
        assert_eq!(ElfTarget::x86_64(0).page_size(), 1);
        assert_eq!(ElfTarget::aarch64(4097).page_size(), 8192);
        assert_eq!(ElfTarget::riscv64(u64::MAX).page_size(), 1 << 32);
    }

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
