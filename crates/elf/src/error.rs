//! Why an embedded ELF (`.sos`) image was refused.

use std::fmt;
use std::sync::Arc;

/// A refusal of the embedded ELF loader: the file is malformed, hostile,
/// built for another machine, or uses something a standalone plugin must
/// not (imports, initialisers, thread-locals, unsupported relocations).
///
/// Every variant carries the values the check expected and found; the
/// message says what to do. Offsets are byte offsets into the ELF image (or
/// into the FatELF container for container checks); addresses are the ELF's
/// virtual addresses unless stated otherwise.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum EmbeddedElfError {
    /// The input ends before a structure it declares.
    Truncated {
        /// The structure being read.
        what: &'static str,
        /// Where it starts.
        offset: u64,
        /// How many bytes it needs.
        needed: u64,
        /// How many bytes there are.
        available: u64,
    },
    /// Neither the FatELF magic nor the ELF magic.
    BadMagic {
        /// The first (up to four) bytes.
        found: Vec<u8>,
    },
    /// A FatELF container of a version this loader does not know.
    FatElfVersion {
        /// The supported version.
        expected: u16,
        /// The version in the file.
        found: u16,
    },
    /// A FatELF container with no records, or `join` given none or too many.
    FatElfRecordCount {
        /// The number of records found (reading) or asked for (joining).
        count: usize,
    },
    /// A FatELF record points outside the container.
    FatElfRecordOutOfBounds {
        /// The record's position.
        index: usize,
        /// Its declared offset.
        offset: u64,
        /// Its declared size.
        size: u64,
        /// The container's size.
        available: u64,
    },
    /// No FatELF record suits this host.
    NoMatchingRecord {
        /// The architecture looked for.
        expected: String,
        /// The architectures present, one entry per record.
        found: Vec<String>,
    },
    /// The ELF is built for another architecture, word size or byte order.
    WrongArchitecture {
        /// What the loader needs.
        expected: String,
        /// What the ELF declares.
        found: String,
    },
    /// An ELF header field has a value the loader does not accept.
    BadHeader {
        /// The field (`e_type`, `e_version`, `e_ehsize`...).
        field: &'static str,
        /// What was expected.
        expected: &'static str,
        /// What the file has.
        found: u64,
        /// What to do.
        hint: &'static str,
    },
    /// A table has entries of the wrong size.
    EntrySize {
        /// The table (`program headers`, `DT_RELAENT`...).
        table: &'static str,
        /// The size the format defines.
        expected: u64,
        /// The size the file declares.
        found: u64,
    },
    /// A table declared by the headers lies (partly) outside the file.
    TableOutOfBounds {
        /// The table.
        table: &'static str,
        /// Its declared offset.
        offset: u64,
        /// Its declared size in bytes.
        size: u64,
        /// The ELF's size.
        available: u64,
    },
    /// No `PT_LOAD` segment.
    NoLoadSegments {
        /// How many program headers the ELF has.
        program_header_count: u64,
    },
    /// A segment declares more file bytes than memory.
    SegmentFileSize {
        /// The program header's index.
        index: usize,
        /// `p_filesz`.
        file_size: u64,
        /// `p_memsz`.
        mem_size: u64,
    },
    /// Two segments overlap, or share a page with different protections.
    SegmentsOverlap {
        /// The earlier program header's index.
        first: usize,
        /// The later one.
        second: usize,
        /// `overlap` or `share a page with different protections`.
        how: &'static str,
        /// The first segment's address range.
        first_range: std::ops::Range<u64>,
        /// The second segment's address range.
        second_range: std::ops::Range<u64>,
    },
    /// The image (or one segment) is implausibly large.
    TooLarge {
        /// The image or a segment.
        what: &'static str,
        /// The size asked for (saturated on overflow).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A segment is writable and executable at once.
    WritableAndExecutable {
        /// The program header's index.
        index: usize,
        /// Its `p_flags`.
        flags: u32,
    },
    /// The plugin uses thread-local storage.
    ThreadLocalStorage {
        /// Where TLS was seen (`PT_TLS segment`, `DF_STATIC_TLS flag`, a relocation name).
        found: String,
    },
    /// There is no `PT_DYNAMIC` segment (no symbols to find the query with).
    NoDynamicSection {
        /// How many program headers the ELF has.
        program_header_count: u64,
    },
    /// A dynamic entry the loader needs is absent.
    MissingDynamicEntry {
        /// The tag, e.g. `DT_SYMTAB`.
        tag: &'static str,
    },
    /// A dynamic entry's address range is not inside a segment's file bytes.
    AddressNotInFile {
        /// What the address is for.
        what: &'static str,
        /// The virtual address.
        address: u64,
        /// The size needed there.
        size: u64,
    },
    /// A symbol hash table is inconsistent.
    BadHashTable {
        /// `DT_HASH` or `DT_GNU_HASH`.
        table: &'static str,
        /// What is wrong, with the values found.
        reason: String,
    },
    /// A symbol index outside the symbol table.
    SymbolIndexOutOfRange {
        /// Who used the index (a relocation at an address, a hash chain).
        user: String,
        /// The index.
        index: u64,
        /// The number of symbols.
        count: u64,
    },
    /// A symbol name offset outside the string table.
    BadSymbolName {
        /// The symbol's index.
        index: u64,
        /// `st_name`.
        offset: u64,
        /// `DT_STRSZ`.
        size: u64,
    },
    /// The plugin has an undefined symbol: it expects something from the host.
    UndefinedSymbol {
        /// The symbol's name.
        name: String,
    },
    /// The plugin depends on a shared library.
    NeededLibrary {
        /// The library's name.
        name: String,
    },
    /// The plugin has initialisers, which the embedded loader never runs.
    Initializer {
        /// The dynamic tag, e.g. `DT_INIT_ARRAY`.
        tag: &'static str,
    },
    /// A dynamic-section feature the loader does not implement.
    UnsupportedDynamicEntry {
        /// The tag, e.g. `DT_RELR`.
        tag: &'static str,
        /// What to do.
        hint: &'static str,
    },
    /// A relocation type the loader does not apply.
    UnsupportedRelocation {
        /// The machine (`x86_64`...).
        machine: &'static str,
        /// The numeric type.
        r_type: u32,
        /// Its name, or `unknown`.
        name: &'static str,
        /// `r_offset`.
        address: u64,
    },
    /// A relocation table, or the field a relocation writes, is not
    /// aligned as linkers lay them out: a table read from an address
    /// between entries would be taken as other entries (mostly `NONE`,
    /// leaving the image unrelocated), and a table size that is not a
    /// whole number of entries ends in a partial one.
    Misaligned {
        /// What is misaligned (`the relocation table (DT_RELA)`, `the
        /// size of ...`, `relocation R_AARCH64_ABS64`).
        what: &'static str,
        /// The address (or size) found.
        value: u64,
        /// The alignment (or entry size) it must be a multiple of.
        alignment: u64,
    },
    /// A relocation writes outside every loaded segment.
    RelocationOutOfImage {
        /// `r_offset`.
        address: u64,
        /// Bytes written.
        width: u64,
    },
    /// A relative relocation points outside the image.
    RelocationTargetOutOfImage {
        /// The type's name.
        name: &'static str,
        /// `r_offset`.
        address: u64,
        /// The address it points at (`r_addend`).
        target: i64,
        /// The image's size.
        image_size: u64,
    },
    /// A loadable segment's file offset and address disagree modulo its
    /// alignment.
    SegmentOffsetMismatch {
        /// Its index in the program header table.
        index: usize,
        /// `p_offset`.
        offset: u64,
        /// `p_vaddr`.
        vaddr: u64,
        /// `p_align`.
        align: u64,
    },
    /// The dynamic section's address and file offset name different bytes.
    DynamicAddressMismatch {
        /// `PT_DYNAMIC`'s `p_vaddr`.
        address: u64,
        /// Its `p_offset`.
        offset: u64,
        /// The file offset its address maps to.
        mapped: u64,
    },
    /// A relocated value does not fit its field at the load address.
    RelocationOverflow {
        /// The type's name.
        name: &'static str,
        /// `r_offset`.
        address: u64,
        /// The value (as a signed 128-bit number).
        value: i128,
        /// The field width.
        width: u64,
    },
    /// A symbol used by a relocation lies outside the image.
    SymbolOutOfImage {
        /// The symbol's name.
        name: String,
        /// Its `st_value`.
        value: u64,
        /// The image's size.
        image_size: u64,
    },
    /// The query function is not exported.
    MissingQuery {
        /// The symbol looked for.
        symbol: &'static str,
    },
    /// The query symbol does not point at code.
    QueryNotCode {
        /// The symbol.
        symbol: &'static str,
        /// Its address.
        address: u64,
    },
    /// The embedded loader does not run on this host.
    UnsupportedHost {
        /// Why.
        reason: &'static str,
    },
    /// A memory-mapping call failed.
    Memory {
        /// What was being done (`reserve memory`, `set page protections`).
        action: &'static str,
        /// The size concerned.
        size: u64,
        /// The operating system's error.
        source: Arc<std::io::Error>,
    },
}

impl fmt::Display for EmbeddedElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated { available, needed, offset, what, .. } => write!(
                f,
                "truncated: the {what} needs bytes {offset}..{end} but the input has {available}; \
         the file is cut short or not an ELF plugin, rebuild it",
                end = offset.saturating_add(*needed)
            ),
            Self::BadMagic { found, .. } => write!(
                f,
                "not an ELF file or FatELF container: it starts with {found:02x?}, expected 7f 45 4c 46 \
         (ELF) or fa 70 0e 1f (FatELF); pass a `.sos` built for the embedded loader"
            ),
            Self::FatElfVersion { expected, found, .. } => write!(
                f,
                "FatELF container version {found} is not supported (expected {expected}); rebuild the container"
            ),
            Self::FatElfRecordCount { count, .. } => write!(
                f,
                "a FatELF container holds 1 to 255 records, not {count}; join at least one and at most 255 ELF files"
            ),
            Self::FatElfRecordOutOfBounds { available, index, offset, size, .. } => write!(
                f,
                "FatELF record {index} spans bytes {offset}..+{size} but the container has {available} bytes; \
         rebuild the container"
            ),
            Self::NoMatchingRecord { expected, found, .. } => write!(
                f,
                "the FatELF container has no record for {expected}; it holds {}; \
         add a record built for {expected} (`xplug fatelf join`)",
                if found.is_empty() { "no usable record".to_owned() } else { found.join(", ") }
            ),
            Self::WrongArchitecture { expected, found, .. } => write!(
                f,
                "the ELF is built for {found} but this loader needs {expected}; rebuild the plugin for {expected}"
            ),
            Self::BadHeader { expected, field, found, hint, .. } => {
                write!(f, "ELF header field {field} is {found:#x}, expected {expected}; {hint}")
            }
            Self::EntrySize { expected, found, table, .. } => write!(
                f,
                "{table} entries are {found} bytes, expected {expected}; the file is corrupt or not a 64-bit ELF"
            ),
            Self::TableOutOfBounds { available, offset, size, table, .. } => write!(
                f,
                "the {table} spans bytes {offset}..+{size}, outside the {available}-byte ELF; the file is corrupt"
            ),
            Self::NoLoadSegments { program_header_count, .. } => write!(
                f,
                "the ELF has no loadable (PT_LOAD) segment among its {program_header_count} program headers; \
         link the plugin as a shared object"
            ),
            Self::SegmentFileSize { file_size, index, mem_size, .. } => write!(
                f,
                "segment {index} has {file_size} file bytes but only {mem_size} bytes of memory \
         (filesz > memsz); the file is corrupt"
            ),
            Self::SegmentsOverlap { first, first_range, how, second, second_range, .. } => write!(
                f,
                "segments {first} and {second} {how}: {first_range:#x?} and {second_range:#x?}; \
         link with lld or ld's default layout (segments page-aligned)"
            ),
            Self::TooLarge { limit, size, what, .. } => write!(
                f,
                "the {what} needs {size} bytes of memory, over the embedded loader's limit of {limit}; \
         the file is corrupt or not a plugin"
            ),
            Self::WritableAndExecutable { flags, index, .. } => write!(
                f,
                "segment {index} is both writable and executable (flags {flags:#x}); the embedded loader \
         refuses W+X memory; link without `-z execstack`/`--omagic` so code and data are separate"
            ),
            Self::ThreadLocalStorage { found, .. } => write!(
                f,
                "the plugin uses thread-local storage ({found}); a standalone plugin cannot: \
         keep per-thread data in the state its load returns"
            ),
            Self::NoDynamicSection { program_header_count, .. } => write!(
                f,
                "the ELF has no dynamic section (no PT_DYNAMIC among its {program_header_count} program headers); \
         link the plugin with `-shared`"
            ),
            Self::MissingDynamicEntry { tag, .. } => write!(
                f,
                "the dynamic section has no {tag}; link the plugin with `-shared` (and `--hash-style=sysv` or `both`)"
            ),
            Self::AddressNotInFile { address, size, what, .. } => write!(
                f,
                "{what} at address {address:#x} (+{size} bytes) is not inside the file bytes of a loaded \
         segment; the file is corrupt"
            ),
            Self::BadHashTable { reason, table, .. } => {
                write!(f, "the {table} is malformed: {reason}; the file is corrupt")
            }
            Self::SymbolIndexOutOfRange { count, index, user, .. } => write!(
                f,
                "{user} refers to symbol {index} but the symbol table has {count} entries; the file is corrupt"
            ),
            Self::BadSymbolName { index, offset, size, .. } => write!(
                f,
                "symbol {index} has name offset {offset} outside the {size}-byte string table; the file is corrupt"
            ),
            Self::UndefinedSymbol { name, .. } => write!(
                f,
                "not a standalone plugin: it imports `{name}`; a standalone plugin must define everything \
         it uses (no libc: provide memcpy and friends yourself, link with --no-undefined)"
            ),
            Self::NeededLibrary { name, .. } => write!(
                f,
                "not a standalone plugin: it depends on the shared library `{name}` (DT_NEEDED); \
         link with -nostdlib and without -l options"
            ),
            Self::Initializer { tag, .. } => write!(
                f,
                "the plugin has initialisers ({tag}); the embedded loader does not run them (IREE's crashes on \
         them): do the work in the plugin's load function and remove static constructors"
            ),
            Self::UnsupportedDynamicEntry { hint, tag, .. } => {
                write!(f, "the plugin uses {tag}, which the embedded loader does not support; {hint}")
            }
            Self::UnsupportedRelocation { address, machine, name, r_type, .. } => write!(
                f,
                "relocation at address {address:#x} has type {name} ({r_type}), which the embedded loader \
         does not apply for {machine}; link with `-z now`, -fPIC and no thread-locals or ifuncs"
            ),
            Self::Misaligned { what, value, alignment, .. } => write!(
                f,
                "{what}: {value:#x} is not a multiple of {alignment} bytes, as linkers lay it out; the file is \
         corrupt or hostile"
            ),
            Self::RelocationOutOfImage { address, width, .. } => write!(
                f,
                "relocation at address {address:#x} writes {width} bytes outside every loaded segment; \
         the file is corrupt or hostile"
            ),
            Self::RelocationTargetOutOfImage { name, address, target, image_size, .. } => write!(
                f,
                "relocation {name} at address {address:#x} points at {target:#x}, outside the image \
         (0x0..{image_size:#x} from its base); the file is corrupt or hostile"
            ),
            Self::SegmentOffsetMismatch { index, offset, vaddr, align, .. } => write!(
                f,
                "loadable segment {index} has file offset {offset:#x} and address {vaddr:#x}, which differ \
         modulo its alignment {align:#x}; the file is corrupt"
            ),
            Self::DynamicAddressMismatch { address, offset, mapped, .. } => write!(
                f,
                "the dynamic section (PT_DYNAMIC) is at file offset {offset:#x} but its address {address:#x} \
         maps to file offset {mapped:#x}; the file is corrupt"
            ),
            Self::RelocationOverflow { address, name, value, width, .. } => write!(
                f,
                "relocation {name} at address {address:#x} computes {value:#x}, which does not fit its \
         {width}-byte field at this load address; build the plugin with -fPIC (no absolute 32-bit addresses)"
            ),
            Self::SymbolOutOfImage { image_size, name, value, .. } => write!(
                f,
                "symbol `{name}` has address {value:#x}, outside the image (0x0..{image_size:#x} from its base); the file is corrupt"
            ),
            Self::MissingQuery { symbol, .. } => write!(
                f,
                "the plugin does not export `{symbol}` in its dynamic symbol table; export it with C linkage \
         and default visibility (and keep it in the version script)"
            ),
            Self::QueryNotCode { address, symbol, .. } => write!(
                f,
                "`{symbol}` is at address {address:#x}, which is not inside an executable segment; \
         it must be a function"
            ),
            Self::UnsupportedHost { reason, .. } => {
                write!(f, "the embedded ELF loader does not support this host: {reason}")
            }
            Self::Memory { action, size, .. } => {
                write!(f, "cannot {action} for the embedded ELF image ({size} bytes)")
            }
        }
    }
}

impl std::error::Error for EmbeddedElfError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Memory { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

impl EmbeddedElfError {
    /// The IREE status code a C host reports for this refusal.
    #[must_use]
    pub fn code(&self) -> xplug_abi::StatusCode {
        use xplug_abi::StatusCode;
        match self {
            Self::NoMatchingRecord { .. } | Self::WrongArchitecture { .. } => StatusCode::FAILED_PRECONDITION,
            Self::UnsupportedHost { .. } => StatusCode::UNIMPLEMENTED,
            Self::Memory { .. } => StatusCode::RESOURCE_EXHAUSTED,
            Self::MissingQuery { .. } => StatusCode::NOT_FOUND,
            // Not a standalone plugin (an ordinary shared library given to
            // the embedded loader): the caller's file is the wrong kind, as
            // for any other refused input; nothing is unimplemented.
            Self::UndefinedSymbol { .. }
            | Self::NeededLibrary { .. }
            | Self::Initializer { .. }
            | Self::ThreadLocalStorage { .. } => StatusCode::INVALID_ARGUMENT,
            Self::UnsupportedRelocation { .. }
            | Self::UnsupportedDynamicEntry { .. }
            | Self::RelocationOverflow { .. } => StatusCode::UNIMPLEMENTED,
            _ => StatusCode::INVALID_ARGUMENT,
        }
    }
}
