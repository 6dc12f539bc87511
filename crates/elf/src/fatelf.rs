//! FatELF containers: several ELF images of one plugin, one per
//! architecture, in one file (`docs/src/reference/embedded-elf.md#fatelf-container`).
//!
//! Layout (little-endian): an 8-byte header (`u32` magic `0x1F0E70FA`,
//! `u16` version 1, `u8` record count, `u8` reserved) followed by 24-byte
//! records (`u16` machine, `u8` OS ABI, `u8` OS ABI version, `u8` word size
//! (1 = 32-bit, 2 = 64-bit), `u8` byte order (0 = big, 1 = little), two
//! reserved bytes, `u64` offset, `u64` size). Each ELF starts at a
//! 4096-aligned offset.

use std::fmt;
use std::ops::Range;

use object::elf::{
    ELFDATA2MSB, ELFMAG, EM_386, EM_AARCH64, EM_ARM, EM_LOONGARCH, EM_MIPS, EM_PPC, EM_PPC64, EM_RISCV,
    EM_S390, EM_X86_64, FileHeader64, Ident,
};

use object::endian::Endianness;

use crate::error::EmbeddedElfError;

/// The FatELF magic number (little-endian on disk: `fa 70 0e 1f`).
pub const FATELF_MAGIC: u32 = 0x1F0E_70FA;
/// The FatELF format version this module reads and writes.
pub const FATELF_VERSION: u16 = 1;
/// Alignment of every ELF inside a container written by [`join`].
pub const FATELF_ALIGNMENT: u64 = 4096;

const HEADER_SIZE: usize = 8;
const RECORD_SIZE: usize = 24;

/// One FatELF record: which architecture an ELF is for and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FatElfRecord {
    /// Position in the container.
    pub index: usize,
    /// ELF `e_machine` (62 x86_64, 183 aarch64, 243 riscv).
    pub machine: u16,
    /// ELF OS ABI (0 System V, 3 Linux, 255 standalone).
    pub osabi: u8,
    /// ELF OS ABI version.
    pub osabi_version: u8,
    /// 1 for 32-bit, 2 for 64-bit (ELF's `EI_CLASS`).
    pub word_size: u8,
    /// 0 big-endian, 1 little-endian.
    pub byte_order: u8,
    /// Offset of the ELF in the container.
    pub offset: u64,
    /// Size of the ELF in bytes.
    pub size: u64,
}

impl FatElfRecord {
    /// The record's byte range in the container (checked when the container
    /// was parsed).
    #[must_use]
    pub fn range(&self) -> Range<usize> {
        // Both fit in usize: `parse` checked them against the input length.
        let start = usize::try_from(self.offset).unwrap_or(usize::MAX);
        start..start.saturating_add(usize::try_from(self.size).unwrap_or(usize::MAX))
    }
}

impl fmt::Display for FatElfRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = match self.word_size {
            1 => "32-bit",
            2 => "64-bit",
            _ => "unknown word size",
        };
        let order = match self.byte_order {
            0 => "big-endian",
            1 => "little-endian",
            _ => "unknown byte order",
        };
        write!(f, "{} ({bits}, {order}, osabi {})", machine_name(self.machine), self.osabi)
    }
}

/// A readable name for an ELF `e_machine`.
#[must_use]
pub fn machine_name(machine: u16) -> String {
    match machine {
        EM_386 => "x86".to_owned(),
        EM_MIPS => "mips".to_owned(),
        EM_PPC => "powerpc".to_owned(),
        EM_PPC64 => "powerpc64".to_owned(),
        EM_S390 => "s390x".to_owned(),
        EM_ARM => "arm".to_owned(),
        EM_X86_64 => "x86_64".to_owned(),
        EM_AARCH64 => "aarch64".to_owned(),
        EM_RISCV => "riscv".to_owned(),
        EM_LOONGARCH => "loongarch".to_owned(),
        other => format!("ELF machine {other}"),
    }
}

/// True when `bytes` starts with the FatELF magic.
#[must_use]
pub fn is_fatelf(bytes: &[u8]) -> bool {
    bytes.get(..4) == Some(&FATELF_MAGIC.to_le_bytes()[..])
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// Parses a FatELF container's records, checking that each lies inside
/// `bytes`.
///
/// # Errors
/// [`EmbeddedElfError::BadMagic`] without the magic;
/// [`EmbeddedElfError::Truncated`], [`EmbeddedElfError::FatElfVersion`],
/// [`EmbeddedElfError::FatElfRecordCount`] or
/// [`EmbeddedElfError::FatElfRecordOutOfBounds`] for a malformed container.
pub fn records(bytes: &[u8]) -> Result<Vec<FatElfRecord>, EmbeddedElfError> {
    if !is_fatelf(bytes) {
        return Err(EmbeddedElfError::BadMagic { found: bytes.iter().take(4).copied().collect() });
    }
    let available = bytes.len() as u64;
    if bytes.len() < HEADER_SIZE {
        return Err(EmbeddedElfError::Truncated {
            what: "FatELF header",
            offset: 0,
            needed: HEADER_SIZE as u64,
            available,
        });
    }
    let version = u16_at(bytes, 4);
    if version != FATELF_VERSION {
        return Err(EmbeddedElfError::FatElfVersion { expected: FATELF_VERSION, found: version });
    }
    let count = usize::from(bytes[6]);
    if count == 0 {
        return Err(EmbeddedElfError::FatElfRecordCount { count });
    }
    let table_size = count * RECORD_SIZE;
    if bytes.len() < HEADER_SIZE + table_size {
        return Err(EmbeddedElfError::Truncated {
            what: "FatELF record table",
            offset: HEADER_SIZE as u64,
            needed: table_size as u64,
            available,
        });
    }
    (0..count)
        .map(|index| {
            let at = HEADER_SIZE + index * RECORD_SIZE;
            let record = FatElfRecord {
                index,
                machine: u16_at(bytes, at),
                osabi: bytes[at + 2],
                osabi_version: bytes[at + 3],
                word_size: bytes[at + 4],
                byte_order: bytes[at + 5],
                offset: u64_at(bytes, at + 8),
                size: u64_at(bytes, at + 16),
            };
            match record.offset.checked_add(record.size) {
                Some(end) if end <= available => Ok(record),
                _ => Err(EmbeddedElfError::FatElfRecordOutOfBounds {
                    index,
                    offset: record.offset,
                    size: record.size,
                    available,
                }),
            }
        })
        .collect()
}

/// The architecture a FatELF record must have to be picked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RecordWanted {
    pub(crate) machine: u16,
    pub(crate) word_size: u8,
    pub(crate) byte_order: u8,
}

impl RecordWanted {
    fn matches(self, record: &FatElfRecord) -> bool {
        record.machine == self.machine
            && record.word_size == self.word_size
            && record.byte_order == self.byte_order
            && matches!(record.osabi, 0 | 3 | 255)
    }

    pub(crate) fn describe(self) -> String {
        let record = FatElfRecord {
            index: 0,
            machine: self.machine,
            osabi: 0,
            osabi_version: 0,
            word_size: self.word_size,
            byte_order: self.byte_order,
            offset: 0,
            size: 0,
        };
        let text = record.to_string();
        text.trim_end_matches(", osabi 0)").to_owned() + ")"
    }
}

/// Picks the first record matching `wanted` (IREE's rule: machine, word
/// size and byte order equal, OS ABI 0, 3 or 255).
pub(crate) fn select(bytes: &[u8], wanted: RecordWanted) -> Result<FatElfRecord, EmbeddedElfError> {
    let all = records(bytes)?;
    all.iter().find(|record| wanted.matches(record)).copied().ok_or_else(|| {
        EmbeddedElfError::NoMatchingRecord {
            expected: wanted.describe(),
            found: all.iter().map(ToString::to_string).collect(),
        }
    })
}

/// Joins ELF images into one FatELF container, in the order given (the
/// loader picks the first matching record). Each record's machine, word
/// size, byte order and OS ABI are read from the ELF's own header; each ELF
/// is placed at a [`FATELF_ALIGNMENT`]-aligned offset.
///
/// ```
/// use xplug_elf::fatelf;
///
/// // A minimal ELF identification + header prefix is enough to join.
/// let mut elf = vec![0u8; 64];
/// elf[..4].copy_from_slice(b"\x7fELF");
/// elf[4] = 2; // 64-bit
/// elf[5] = 1; // little-endian
/// elf[18] = 62; // x86_64
/// let container = fatelf::join(&[&elf])?;
/// let records = fatelf::records(&container)?;
/// assert_eq!(records.len(), 1);
/// assert_eq!(records[0].machine, 62);
/// assert_eq!(&container[records[0].range()], &elf[..]);
/// # Ok::<(), xplug_elf::EmbeddedElfError>(())
/// ```
///
/// # Errors
/// [`EmbeddedElfError::FatElfRecordCount`] for no input or more than 255;
/// [`EmbeddedElfError::BadMagic`] or [`EmbeddedElfError::Truncated`] for an
/// input that is not an ELF (a FatELF cannot be nested).
pub fn join(elves: &[&[u8]]) -> Result<Vec<u8>, EmbeddedElfError> {
    let count = u8::try_from(elves.len())
        .ok()
        .filter(|&count| count != 0)
        .ok_or(EmbeddedElfError::FatElfRecordCount { count: elves.len() })?;
    let mut output = Vec::new();
    output.extend_from_slice(&FATELF_MAGIC.to_le_bytes());
    output.extend_from_slice(&FATELF_VERSION.to_le_bytes());
    output.push(count);
    output.push(0);
    let mut offset = align_up(HEADER_SIZE as u64 + u64::from(count) * RECORD_SIZE as u64);
    for elf in elves {
        let ident = elf_identity(elf)?;
        output.extend_from_slice(&ident.machine.to_le_bytes());
        output.push(ident.os_abi);
        output.push(ident.abi_version);
        output.push(ident.class);
        // FatELF's byte order: 0 big-endian, 1 little-endian.
        output.push(u8::from(ident.data != ELFDATA2MSB));
        output.extend_from_slice(&[0, 0]);
        output.extend_from_slice(&offset.to_le_bytes());
        output.extend_from_slice(&(elf.len() as u64).to_le_bytes());
        offset = align_up(offset + elf.len() as u64);
    }
    for elf in elves {
        output.resize(usize::try_from(align_up(output.len() as u64)).unwrap_or(usize::MAX), 0);
        output.extend_from_slice(elf);
    }
    Ok(output)
}

/// What a FatELF record says about an ELF, read from its identification
/// bytes and `e_machine` (fields 32- and 64-bit headers share).
struct ElfIdentity {
    class: u8,
    data: u8,
    os_abi: u8,
    abi_version: u8,
    machine: u16,
}

/// The [`ElfIdentity`] of `elf`.
fn elf_identity(elf: &[u8]) -> Result<ElfIdentity, EmbeddedElfError> {
    use std::mem::offset_of;
    if elf.get(..ELFMAG.len()) != Some(&ELFMAG[..]) {
        return Err(EmbeddedElfError::BadMagic { found: elf.iter().take(ELFMAG.len()).copied().collect() });
    }
    let machine_at = offset_of!(FileHeader64<Endianness>, e_machine);
    let needed = machine_at + size_of::<u16>();
    let Some(&[low, high]) = elf.get(machine_at..needed) else {
        return Err(EmbeddedElfError::Truncated {
            what: "ELF header",
            offset: 0,
            needed: needed as u64,
            available: elf.len() as u64,
        });
    };
    let data = elf[offset_of!(Ident, data)];
    Ok(ElfIdentity {
        class: elf[offset_of!(Ident, class)],
        data,
        os_abi: elf[offset_of!(Ident, os_abi)],
        abi_version: elf[offset_of!(Ident, abi_version)],
        machine: if data == ELFDATA2MSB {
            u16::from_be_bytes([low, high])
        } else {
            u16::from_le_bytes([low, high])
        },
    })
}

fn align_up(value: u64) -> u64 {
    value.div_ceil(FATELF_ALIGNMENT) * FATELF_ALIGNMENT
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf(machine: u16, class: u8) -> Vec<u8> {
        let mut elf = vec![0u8; 100];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = class;
        elf[5] = 1;
        elf[18..20].copy_from_slice(&machine.to_le_bytes());
        elf[99] = machine as u8;
        elf
    }

    #[test]
    fn join_then_records_round_trips() {
        let (a, b) = (elf(183, 2), elf(62, 2));
        let container = join(&[&a, &b]).unwrap();
        let all = records(&container).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].machine, all[1].machine), (183, 62));
        assert!(all.iter().all(|record| record.offset % FATELF_ALIGNMENT == 0));
        assert_eq!(&container[all[0].range()], &a[..]);
        assert_eq!(&container[all[1].range()], &b[..]);
        let wanted = RecordWanted { machine: 62, word_size: 2, byte_order: 1 };
        assert_eq!(select(&container, wanted).unwrap().index, 1);
    }

    #[test]
    fn no_matching_record_lists_what_is_there() {
        let container = join(&[&elf(183, 2), &elf(62, 1)]).unwrap();
        let wanted = RecordWanted { machine: 62, word_size: 2, byte_order: 1 };
        let error = select(&container, wanted).unwrap_err();
        let message = error.to_string();
        assert!(
            matches!(&error, EmbeddedElfError::NoMatchingRecord { found, .. } if found.len() == 2),
            "{message}"
        );
        assert!(message.contains("no record for x86_64 (64-bit, little-endian)"), "{message}");
        assert!(message.contains("aarch64 (64-bit"), "{message}");
        assert!(message.contains("x86_64 (32-bit"), "{message}");
    }

    #[test]
    fn malformed_containers_are_refused() {
        let mut container = join(&[&elf(62, 2)]).unwrap();
        assert!(matches!(records(&container[..10]), Err(EmbeddedElfError::Truncated { .. })));
        // Record size past the end.
        container[8 + 16..8 + 24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            records(&container),
            Err(EmbeddedElfError::FatElfRecordOutOfBounds { index: 0, .. })
        ));
        container[4] = 2;
        assert!(matches!(records(&container), Err(EmbeddedElfError::FatElfVersion { found: 2, .. })));
        container[4] = 1;
        container[6] = 0;
        assert!(matches!(records(&container), Err(EmbeddedElfError::FatElfRecordCount { count: 0 })));
        assert!(matches!(join(&[b"MZ\0\0".as_slice()]), Err(EmbeddedElfError::BadMagic { .. })));
        assert!(matches!(join(&[]), Err(EmbeddedElfError::FatElfRecordCount { count: 0 })));
    }
}
