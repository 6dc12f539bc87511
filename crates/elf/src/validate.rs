//! The pure half of the embedded loader: reads an ELF (or picks one out of a
//! FatELF container) and decides everything the mapping step will do, without
//! touching any memory outside the input.
//!
//! Every offset, size and address is computed with checked arithmetic and
//! every table is checked to lie inside the input before it is read; symbol
//! hash chains are walked at most once around the symbol table, so a cyclic
//! or huge chain is refused instead of looping.
//!
//! [`Reader::plan`] runs the checks in a fixed order, one named step each:
//! header, program headers, section headers, loadable segments and the
//! image's extent, thread-locals, RELRO, the dynamic section, strings and
//! needed libraries, symbols, imports, initialisers, the query symbol,
//! relocations. The order decides which error a file with several faults
//! gets, so it is part of the behaviour.

use std::ops::Range;

use object::elf::{
    DF_STATIC_TLS, DT_FLAGS, DT_GNU_HASH, DT_HASH, DT_INIT, DT_INIT_ARRAY, DT_INIT_ARRAYSZ, DT_JMPREL,
    DT_NEEDED, DT_NULL, DT_PLTREL, DT_PLTRELSZ, DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ, DT_REL, DT_RELA,
    DT_RELAENT, DT_RELASZ, DT_STRSZ, DT_STRTAB, DT_SYMENT, DT_SYMTAB, Dyn64, ELFCLASS32, ELFCLASS64,
    ELFDATA2LSB, ELFDATA2MSB, ELFMAG, ET_DYN, EV_CURRENT, FileHeader64, PF_W, PF_X, PT_DYNAMIC, PT_GNU_RELRO,
    PT_LOAD, PT_TLS, ProgramHeader64, Rela64, SHN_ABS, SHN_UNDEF, SectionHeader64, Sym64,
};
use object::endian::Endianness;
use object::pod::{self, Pod};

use crate::error::EmbeddedElfError;
use crate::fatelf;
use crate::plan::{ElfPlan, PlannedSegment, SegmentFlags, SymbolHashTable};
use crate::relocation::{PlannedRelocation, RelocationKind, SymbolValue, relocation_kind};
use crate::symbols::{GnuHash, HashLookup, Symbols, SysvHash, string_at};
use crate::target::ElfTarget;

/// The largest image (span of all loadable segments) the loader maps.
pub const MAX_IMAGE_SIZE: u64 = 1 << 30;

/// `DT_RELR` (packed relative relocations), which `object` 0.36 does not
/// name.
const DT_RELR: u32 = 36;

/// The size of `T` as a file field compares it.
const fn size_u64<T>() -> u64 {
    size_of::<T>() as u64
}

/// Validates `bytes` (a FatELF container or one ELF) for this host.
///
/// Pure: reads only `bytes`, writes nothing, maps nothing.
///
/// ```
/// use xplug_elf::{EmbeddedElfError, validate};
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
    let endian = if target.little_endian { Endianness::Little } else { Endianness::Big };
    let mut plan = Reader { elf, endian, target }.plan()?;
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

pub(crate) struct LoadSegment {
    index: usize,
    pub(crate) vaddr: u64,
    offset: u64,
    pub(crate) file_size: u64,
    pub(crate) mem_size: u64,
    flags: u32,
}

/// Where the image starts (page-aligned virtual address) and how much
/// memory it takes (whole pages).
struct Extent {
    base_vaddr: u64,
    image_size: u64,
}

type ProgramHeader = ProgramHeader64<Endianness>;

impl Reader<'_> {
    fn available(&self) -> u64 {
        self.elf.len() as u64
    }

    /// `count` values of `T` at `offset`, checked to lie inside the ELF.
    fn slice<T: Pod>(&self, table: &'static str, offset: u64, count: u64) -> Result<&[T], EmbeddedElfError> {
        let size = count.checked_mul(size_u64::<T>());
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

    /// Every check, in order; see the module documentation.
    fn plan(&self) -> Result<ElfPlan, EmbeddedElfError> {
        let header = self.header()?;
        let phdrs = self.program_headers(header)?;
        self.section_headers(header)?;
        let loads = self.load_segments(phdrs)?;
        let extent = self.extent(&loads)?;
        self.refuse_tls_segment(phdrs)?;
        let relro = self.relro(phdrs, &loads, extent.base_vaddr)?;
        let dynamic = self.dynamic(phdrs, &loads)?;
        let strings = self.strings(&loads, &dynamic)?;
        let (hash_table, lookup, symbols) = self.symbols(&loads, &dynamic, strings)?;
        self.refuse_imports(&symbols)?;
        if let Some(tag) = dynamic.initializer {
            return Err(EmbeddedElfError::Initializer { tag });
        }
        let query_address = self.query_address(&loads, &lookup, &symbols)?;
        let optional_exports = self.optional_exports(&loads, &lookup, &symbols, extent.base_vaddr)?;
        let relocations = self.planned_relocations(&loads, &symbols, extent.base_vaddr, &dynamic)?;
        let segments = loads
            .iter()
            .map(|segment| PlannedSegment {
                image_offset: segment.vaddr - extent.base_vaddr,
                mem_size: segment.mem_size,
                file_range: segment.offset..segment.offset + segment.file_size,
                flags: SegmentFlags::from_elf(segment.flags),
            })
            .collect();
        Ok(ElfPlan {
            record: None,
            elf: 0..0,
            machine: self.target.machine(),
            image_size: extent.image_size,
            segments,
            relocations,
            relro,
            query_offset: query_address - extent.base_vaddr,
            optional_exports,
            base_vaddr: extent.base_vaddr,
            hash_table,
            symbol_count: lookup.symbol_count(),
        })
    }

    /// The program header table, with entries of the 64-bit size.
    fn program_headers(
        &self,
        header: &FileHeader64<Endianness>,
    ) -> Result<&[ProgramHeader], EmbeddedElfError> {
        let e = self.endian;
        let phentsize = u64::from(header.e_phentsize.get(e));
        if phentsize != size_u64::<ProgramHeader>() {
            return Err(EmbeddedElfError::EntrySize {
                table: "program header",
                expected: size_u64::<ProgramHeader>(),
                found: phentsize,
            });
        }
        self.slice("program header table", header.e_phoff.get(e), u64::from(header.e_phnum.get(e)))
    }

    /// The section header table, when there is one, must have entries of
    /// the 64-bit size and lie inside the file (its contents are unused).
    fn section_headers(&self, header: &FileHeader64<Endianness>) -> Result<(), EmbeddedElfError> {
        let e = self.endian;
        let shnum = u64::from(header.e_shnum.get(e));
        if shnum == 0 {
            return Ok(());
        }
        let shentsize = u64::from(header.e_shentsize.get(e));
        if shentsize != size_u64::<SectionHeader64<Endianness>>() {
            return Err(EmbeddedElfError::EntrySize {
                table: "section header",
                expected: size_u64::<SectionHeader64<Endianness>>(),
                found: shentsize,
            });
        }
        self.slice::<SectionHeader64<Endianness>>("section header table", header.e_shoff.get(e), shnum)?;
        Ok(())
    }

    /// The page-aligned start of the lowest segment and the whole pages
    /// up to the end of the highest, within [`MAX_IMAGE_SIZE`].
    fn extent(&self, loads: &[LoadSegment]) -> Result<Extent, EmbeddedElfError> {
        let page = self.target.page_size();
        let base_vaddr = loads[0].vaddr / page * page;
        let end = loads.iter().map(|s| s.vaddr + s.mem_size).max().unwrap_or(base_vaddr);
        let span = end - base_vaddr;
        let image_size = span
            .checked_next_multiple_of(page)
            .filter(|&size| size <= MAX_IMAGE_SIZE)
            .ok_or(EmbeddedElfError::TooLarge { what: "image", size: span, limit: MAX_IMAGE_SIZE })?;
        Ok(Extent { base_vaddr, image_size })
    }

    /// A `PT_TLS` segment means thread-locals, which a standalone plugin
    /// cannot have.
    fn refuse_tls_segment(&self, phdrs: &[ProgramHeader]) -> Result<(), EmbeddedElfError> {
        if phdrs.iter().any(|phdr| phdr.p_type.get(self.endian) == PT_TLS) {
            return Err(EmbeddedElfError::ThreadLocalStorage { found: "a PT_TLS segment".to_owned() });
        }
        Ok(())
    }

    /// The string table, after refusing a needed library (named from it).
    fn strings(&self, loads: &[LoadSegment], dynamic: &Dynamic) -> Result<&[u8], EmbeddedElfError> {
        let strtab = dynamic.strtab.ok_or(EmbeddedElfError::MissingDynamicEntry { tag: "DT_STRTAB" })?;
        let strsz = dynamic.strsz.ok_or(EmbeddedElfError::MissingDynamicEntry { tag: "DT_STRSZ" })?;
        let strings = self.at_address::<u8>(loads, "the string table (DT_STRTAB)", strtab, strsz)?;
        if let Some(&needed) = dynamic.needed.first() {
            return Err(EmbeddedElfError::NeededLibrary {
                name: string_at(strings, needed).unwrap_or_else(|| format!("<name at {needed}>")),
            });
        }
        Ok(strings)
    }

    /// The dynamic symbol table, sized by the hash table symbols are found
    /// through (`DT_HASH` preferred, as IREE's loader needs it).
    fn symbols<'s>(
        &'s self,
        loads: &[LoadSegment],
        dynamic: &Dynamic,
        strings: &'s [u8],
    ) -> Result<(SymbolHashTable, HashLookup<'s>, Symbols<'s>), EmbeddedElfError> {
        let symtab = dynamic.symtab.ok_or(EmbeddedElfError::MissingDynamicEntry { tag: "DT_SYMTAB" })?;
        let symbol_size = size_u64::<Sym64<Endianness>>();
        if let Some(syment) = dynamic.syment.filter(|&syment| syment != symbol_size) {
            return Err(EmbeddedElfError::EntrySize {
                table: "DT_SYMENT",
                expected: symbol_size,
                found: syment,
            });
        }
        let (hash_table, lookup) = match (dynamic.hash, dynamic.gnu_hash) {
            (Some(hash), _) => (SymbolHashTable::Sysv, HashLookup::Sysv(self.sysv_hash(loads, hash)?)),
            (None, Some(gnu)) => (SymbolHashTable::Gnu, HashLookup::Gnu(self.gnu_hash(loads, gnu)?)),
            (None, None) => {
                return Err(EmbeddedElfError::MissingDynamicEntry { tag: "DT_HASH or DT_GNU_HASH" });
            }
        };
        let table = self.at_address::<Sym64<Endianness>>(
            loads,
            "the symbol table (DT_SYMTAB)",
            symtab,
            lookup.symbol_count(),
        )?;
        Ok((hash_table, lookup, Symbols { table, strings, endian: self.endian }))
    }

    /// A standalone plugin defines everything it uses: no undefined
    /// symbol past the null one.
    fn refuse_imports(&self, symbols: &Symbols<'_>) -> Result<(), EmbeddedElfError> {
        for (index, symbol) in symbols.table.iter().enumerate().skip(1) {
            if symbol.st_shndx.get(self.endian) == SHN_UNDEF {
                return Err(EmbeddedElfError::UndefinedSymbol { name: symbols.name(index as u64)? });
            }
        }
        Ok(())
    }

    /// The address of the target's query symbol ([`QUERY_SYMBOL`](crate::QUERY_SYMBOL) unless
    /// changed), which must be inside an executable segment.
    fn query_address(
        &self,
        loads: &[LoadSegment],
        lookup: &HashLookup<'_>,
        symbols: &Symbols<'_>,
    ) -> Result<u64, EmbeddedElfError> {
        let e = self.endian;
        let symbol = self.target.query_symbol;
        let query_index = lookup.find(symbols, symbol)?.ok_or(EmbeddedElfError::MissingQuery { symbol })?;
        let query = &symbols.table[query_index as usize];
        let address = query.st_value.get(e);
        let in_code = in_executable_segment(loads, address);
        if query.st_shndx.get(e) == SHN_ABS || !in_code {
            return Err(EmbeddedElfError::QueryNotCode { symbol, address });
        }
        Ok(address)
    }

    /// xplug's optional exports ([`xplug_abi::OPTIONAL_EXPORTS`]) the image
    /// defines inside an executable segment, as (name, offset from the
    /// image base). A name defined elsewhere (data, absolute) is left out:
    /// nothing but code is ever called.
    fn optional_exports(
        &self,
        loads: &[LoadSegment],
        lookup: &HashLookup<'_>,
        symbols: &Symbols<'_>,
        base_vaddr: u64,
    ) -> Result<Vec<(&'static str, u64)>, EmbeddedElfError> {
        let e = self.endian;
        let mut found = Vec::new();
        for name in xplug_abi::OPTIONAL_EXPORTS {
            let Ok(name) = name.to_str() else { continue };
            let Some(index) = lookup.find(symbols, name)? else { continue };
            let symbol = &symbols.table[index as usize];
            let address = symbol.st_value.get(e);
            let in_code = in_executable_segment(loads, address);
            let shndx = symbol.st_shndx.get(e);
            if shndx != SHN_ABS && shndx != SHN_UNDEF && in_code {
                found.push((name, address - base_vaddr));
            }
        }
        Ok(found)
    }

    /// The relocations of `DT_RELA` then `DT_JMPREL` (which must be RELA
    /// too), each checked.
    fn planned_relocations(
        &self,
        loads: &[LoadSegment],
        symbols: &Symbols<'_>,
        base_vaddr: u64,
        dynamic: &Dynamic,
    ) -> Result<Vec<PlannedRelocation>, EmbeddedElfError> {
        let rela_size = size_u64::<Rela64<Endianness>>();
        let mut relocations = Vec::new();
        // A table's size or entry size without the table itself: the
        // table's tag was damaged, and the image would run unrelocated.
        if dynamic.rela.is_none()
            && (dynamic.relasz.is_some_and(|size| size != 0) || dynamic.relaent.is_some())
        {
            return Err(EmbeddedElfError::MissingDynamicEntry { tag: "DT_RELA" });
        }
        if dynamic.jmprel.is_none() && dynamic.pltrelsz.is_some_and(|size| size != 0) {
            return Err(EmbeddedElfError::MissingDynamicEntry { tag: "DT_JMPREL" });
        }
        if let Some(rela) = dynamic.rela {
            let size = dynamic.relasz.ok_or(EmbeddedElfError::MissingDynamicEntry { tag: "DT_RELASZ" })?;
            let entry = dynamic.relaent.ok_or(EmbeddedElfError::MissingDynamicEntry { tag: "DT_RELAENT" })?;
            if entry != rela_size {
                return Err(EmbeddedElfError::EntrySize {
                    table: "DT_RELAENT",
                    expected: rela_size,
                    found: entry,
                });
            }
            let table = RelocationTable {
                what: "the relocation table (DT_RELA)",
                size_what: "the size of the relocation table (DT_RELASZ)",
                address: rela,
                size,
            };
            self.relocations(loads, symbols, base_vaddr, table, &mut relocations)?;
        }
        if let Some(jmprel) = dynamic.jmprel {
            let size =
                dynamic.pltrelsz.ok_or(EmbeddedElfError::MissingDynamicEntry { tag: "DT_PLTRELSZ" })?;
            match dynamic.pltrel {
                Some(tag) if tag == u64::from(DT_RELA) => {}
                Some(tag) if tag == u64::from(DT_REL) => {
                    return Err(EmbeddedElfError::UnsupportedDynamicEntry {
                        tag: "DT_PLTREL = DT_REL",
                        hint: "64-bit plugins must use RELA relocations",
                    });
                }
                _ => return Err(EmbeddedElfError::MissingDynamicEntry { tag: "DT_PLTREL (= DT_RELA)" }),
            }
            let table = RelocationTable {
                what: "the PLT relocation table (DT_JMPREL)",
                size_what: "the size of the PLT relocation table (DT_PLTRELSZ)",
                address: jmprel,
                size,
            };
            self.relocations(loads, symbols, base_vaddr, table, &mut relocations)?;
        }
        Ok(relocations)
    }

    fn header(&self) -> Result<&FileHeader64<Endianness>, EmbeddedElfError> {
        if self.elf.get(..ELFMAG.len()) != Some(&ELFMAG[..]) {
            return Err(EmbeddedElfError::BadMagic { found: self.elf.iter().take(4).copied().collect() });
        }
        let header = self.slice::<FileHeader64<Endianness>>("ELF header", 0, 1).map_err(|_| {
            EmbeddedElfError::Truncated {
                what: "ELF header",
                offset: 0,
                needed: size_u64::<FileHeader64<Endianness>>(),
                available: self.available(),
            }
        })?;
        let header = &header[0];
        let ident = &header.e_ident;
        let e = self.endian;
        let data_ok = ident.data == if self.target.little_endian { ELFDATA2LSB } else { ELFDATA2MSB };
        let machine = if ident.data == ELFDATA2MSB {
            header.e_machine.get(Endianness::Big)
        } else {
            header.e_machine.get(Endianness::Little)
        };
        if ident.class != ELFCLASS64 || !data_ok || machine != self.target.machine() {
            let class = match ident.class {
                ELFCLASS32 => "32-bit",
                ELFCLASS64 => "64-bit",
                _ => "unknown class",
            };
            let order = match ident.data {
                ELFDATA2LSB => "little-endian",
                ELFDATA2MSB => "big-endian",
                _ => "unknown byte order",
            };
            return Err(EmbeddedElfError::WrongArchitecture {
                expected: self.target.describe(),
                found: format!("{} ({class}, {order})", fatelf::machine_name(machine)),
            });
        }
        if ident.version != EV_CURRENT || header.e_version.get(e) != u32::from(EV_CURRENT) {
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
        if u64::from(header.e_ehsize.get(e)) != size_u64::<FileHeader64<Endianness>>() {
            return Err(EmbeddedElfError::EntrySize {
                table: "ELF header (e_ehsize)",
                expected: size_u64::<FileHeader64<Endianness>>(),
                found: u64::from(header.e_ehsize.get(e)),
            });
        }
        Ok(header)
    }

    /// The `PT_LOAD` segments in address order, checked.
    fn load_segments(&self, phdrs: &[ProgramHeader]) -> Result<Vec<LoadSegment>, EmbeddedElfError> {
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
            // A segment's file offset and address agree modulo its alignment
            // (the ELF specification's rule for loadable segments): a loader
            // that maps or copies whole pages, as IREE's does, would
            // otherwise put other bytes of the file at the segment's
            // addresses, code included.
            let align = phdr.p_align.get(e);
            if align > 1 && segment.offset % align != segment.vaddr % align {
                return Err(EmbeddedElfError::SegmentOffsetMismatch {
                    index,
                    offset: segment.offset,
                    vaddr: segment.vaddr,
                    align,
                });
            }
            if segment.flags & PF_W != 0 && segment.flags & PF_X != 0 {
                return Err(EmbeddedElfError::WritableAndExecutable { index, flags: segment.flags });
            }
            loads.push(segment);
        }
        if loads.is_empty() {
            return Err(EmbeddedElfError::NoLoadSegments { program_header_count: phdrs.len() as u64 });
        }
        loads.sort_by_key(|segment| segment.vaddr);
        let page = self.target.page_size();
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
        phdrs: &[ProgramHeader],
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
        let page = self.target.page_size();
        let first = (start - base_vaddr) / page * page;
        let last = (start + size - base_vaddr) / page * page;
        Ok((last > first).then_some(first..last))
    }

    /// The tags of the `PT_DYNAMIC` segment the loader uses, refusing
    /// those it does not support.
    fn dynamic(&self, phdrs: &[ProgramHeader], loads: &[LoadSegment]) -> Result<Dynamic, EmbeddedElfError> {
        let e = self.endian;
        let phdr = phdrs
            .iter()
            .find(|phdr| phdr.p_type.get(e) == PT_DYNAMIC)
            .ok_or(EmbeddedElfError::NoDynamicSection { program_header_count: phdrs.len() as u64 })?;
        let size = phdr.p_filesz.get(e);
        let entries: &[Dyn64<Endianness>] =
            self.slice("dynamic section", phdr.p_offset.get(e), size / size_u64::<Dyn64<Endianness>>())?;
        // Loaders find the table by its address (IREE's does), this check by
        // its file offset: both must name the same bytes of one segment.
        let (address, offset) = (phdr.p_vaddr.get(e), phdr.p_offset.get(e));
        let segment = loads
            .iter()
            .find(|segment| {
                address >= segment.vaddr
                    && address.checked_add(size).is_some_and(|end| end <= segment.vaddr + segment.file_size)
            })
            .ok_or(EmbeddedElfError::AddressNotInFile {
                what: "the dynamic section (PT_DYNAMIC)",
                address,
                size,
            })?;
        if segment.offset + (address - segment.vaddr) != offset {
            return Err(EmbeddedElfError::DynamicAddressMismatch {
                address,
                offset,
                mapped: segment.offset + (address - segment.vaddr),
            });
        }
        let mut dynamic = Dynamic::default();
        let mut init_array_size = None;
        let mut preinit_array_size = None;
        let mut init_array = false;
        let mut preinit_array = false;
        for entry in entries {
            let value = entry.d_val.get(e);
            // Every tag the loader knows fits in 32 bits; wider ones are
            // vendor tags it ignores.
            let Ok(tag) = u32::try_from(entry.d_tag.get(e)) else {
                continue;
            };
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
                DT_FLAGS if value & u64::from(DF_STATIC_TLS) != 0 => {
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

    /// The System V hash table at `address`.
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

    /// The GNU hash table at `address`, with the symbol count its chains
    /// imply.
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

    /// Checks and plans the entries of one RELA table, appending to `out`.
    fn relocations(
        &self,
        loads: &[LoadSegment],
        symbols: &Symbols<'_>,
        base_vaddr: u64,
        table: RelocationTable,
        out: &mut Vec<PlannedRelocation>,
    ) -> Result<(), EmbeddedElfError> {
        let e = self.endian;
        let entry_size = size_u64::<Rela64<Endianness>>();
        // Entries are 8-byte aligned (their fields are 64-bit words); read
        // from an address between entries, the table would decode as other
        // entries, mostly `NONE`, and the image would run unrelocated.
        if !table.address.is_multiple_of(8) {
            return Err(EmbeddedElfError::Misaligned {
                what: table.what,
                value: table.address,
                alignment: 8,
            });
        }
        if !table.size.is_multiple_of(entry_size) {
            return Err(EmbeddedElfError::Misaligned {
                what: table.size_what,
                value: table.size,
                alignment: entry_size,
            });
        }
        let count = table.size / entry_size;
        let entries = self.at_address::<Rela64<Endianness>>(loads, table.what, table.address, count)?;
        let symbol_count = symbols.table.len() as u64;
        for entry in entries {
            let r_offset = entry.r_offset.get(e);
            let (r_type, r_sym) = (entry.r_type(e, false), u64::from(entry.r_sym(e, false)));
            let Some((kind, name)) =
                relocation_kind(self.target.machine(), r_type).map_err(|(name, tls)| {
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
            // Linkers align every field a dynamic relocation writes (a
            // pointer or a 32-bit word) to its size.
            if !r_offset.is_multiple_of(width) {
                return Err(EmbeddedElfError::Misaligned { what: name, value: r_offset, alignment: width });
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
                            name: symbols.name(r_sym)?,
                            value,
                            image_size: image_end - base_vaddr,
                        });
                    }
                    SymbolValue::ImageOffset(value - base_vaddr)
                }
            };
            let addend = entry.r_addend.get(e);
            // A relative relocation stores the image's address of its addend:
            // a pointer into the image, at most one past its end.
            if kind == RelocationKind::Relative {
                let image_end = loads.iter().map(|s| s.vaddr + s.mem_size).max().unwrap_or(0);
                if !u64::try_from(addend).is_ok_and(|target| (base_vaddr..=image_end).contains(&target)) {
                    return Err(EmbeddedElfError::RelocationTargetOutOfImage {
                        name,
                        address: r_offset,
                        target: addend,
                        image_size: image_end - base_vaddr,
                    });
                }
            }
            out.push(PlannedRelocation {
                image_offset: r_offset - base_vaddr,
                kind,
                name,
                addend,
                symbol,
                address: r_offset,
            });
        }
        Ok(())
    }
}

/// One RELA table: what it is called in messages, where, how many bytes.
struct RelocationTable {
    what: &'static str,
    /// `what`'s size entry, for messages.
    size_what: &'static str,
    address: u64,
    size: u64,
}

/// Whether `address` (a virtual address of the file) lies inside an
/// executable `PT_LOAD` segment: where anything the host calls must be.
fn in_executable_segment(loads: &[LoadSegment], address: u64) -> bool {
    loads.iter().any(|segment| {
        segment.flags & PF_X != 0 && address >= segment.vaddr && address - segment.vaddr < segment.mem_size
    })
}
