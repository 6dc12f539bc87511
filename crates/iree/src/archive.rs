//! xplug's checks of a parameter archive around IREE's parser.
//!
//! IREE's parsers (`iree/io/formats/*`) check ranges with 64-bit sums that
//! wrap: an `.irpa` entry at offset `2^64 - 4096` passes them, and IREE's
//! index provider then imports `data + offset` of a mapped or preloaded
//! archive unchecked. So before IREE parses an archive, [`layout`] walks
//! the structures IREE's parser trusts (for `.irpa`: every header of the
//! chain, its segments and its entry table; for `.safetensors`: the header
//! length) with checked arithmetic and returns where parameter data may
//! lie; after IREE has indexed it, [`check_entries`] checks every entry
//! IREE made against the archive's real length and those regions. IREE's
//! parser stays the one that reads keys, types and data offsets.

use std::ops::Range;

use xplug_manager::providers::abi::StatusCode;

/// What is wrong with an archive: the IREE status code IREE's own parsers
/// give such a fault, the key of the entry at fault (when one is), and a
/// description naming the byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) code: StatusCode,
    pub(crate) key: Option<String>,
    pub(crate) problem: String,
}

fn fault(code: StatusCode, problem: String) -> Fault {
    Fault { code, key: None, problem }
}

/// The archive formats IREE's parser registry reads, by extension (as
/// `iree_io_parse_file_index` picks them: the text after the file name's
/// last `.`, or the whole name, case-insensitively).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Irpa,
    Gguf,
    Safetensors,
    /// Not one IREE reads: its parser refuses it.
    Other,
}

impl Format {
    pub(crate) fn of(path: &std::path::Path) -> Self {
        let name = path.file_name().map(|name| name.to_string_lossy()).unwrap_or_default();
        let extension = name.rsplit_once('.').map_or(&*name, |(_, extension)| extension);
        match extension.to_ascii_lowercase().as_str() {
            "irpa" => Self::Irpa,
            "gguf" => Self::Gguf,
            "safetensors" => Self::Safetensors,
            _ => Self::Other,
        }
    }
}

/// Reads bytes of an archive of `len` bytes; a read past the end is a
/// [`Fault`].
pub(crate) trait Source {
    fn len(&self) -> u64;
    fn read(&self, offset: u64, buffer: &mut [u8]) -> Result<(), Fault>;
}

impl Source for [u8] {
    fn len(&self) -> u64 {
        self.len() as u64
    }

    fn read(&self, offset: u64, buffer: &mut [u8]) -> Result<(), Fault> {
        let start = usize::try_from(offset).ok().filter(|start| *start <= self.len());
        match start.and_then(|start| self.get(start..start.checked_add(buffer.len())?)) {
            Some(bytes) => {
                buffer.copy_from_slice(bytes);
                Ok(())
            }
            None => Err(past_end(offset, buffer.len() as u64, Source::len(self))),
        }
    }
}

fn past_end(offset: u64, length: u64, len: u64) -> Fault {
    fault(
        StatusCode::OUT_OF_RANGE,
        format!("bytes {} are past the end of its {len} bytes", span(offset, length)),
    )
}

/// `[offset, offset + length)`, spelt without overflowing.
fn span(offset: u64, length: u64) -> String {
    match offset.checked_add(length) {
        Some(end) => format!("[{offset}, {end})"),
        None => format!("[{offset}, {offset} + {length}) (past 2^64)"),
    }
}

/// `offset..offset + length` when that lies within `within`.
fn inside(offset: u64, length: u64, within: &Range<u64>) -> Option<Range<u64>> {
    let end = offset.checked_add(length)?;
    (offset >= within.start && end <= within.end).then_some(offset..end)
}

/// The byte regions of the archive where parameter data may lie (entries
/// must not overlap headers, entry tables or metadata), after checking what
/// IREE's parser of `format` reads without checks of its own. A fault
/// IREE's parser reports itself (a bad magic, an unknown version) is left
/// to it: the regions are then the whole archive.
pub(crate) fn layout(format: Format, source: &(impl Source + ?Sized)) -> Result<Vec<Range<u64>>, Fault> {
    let len = source.len();
    match format {
        Format::Irpa => irpa_layout(source),
        Format::Safetensors => {
            let mut prefix = [0; 8];
            if len < 8 {
                return Ok(one(0..len));
            }
            source.read(0, &mut prefix)?;
            let header = u64::from_le_bytes(prefix);
            // IREE refuses a header longer than the file itself.
            Ok(one(8u64.checked_add(header).filter(|start| *start <= len).unwrap_or(0)..len))
        }
        // IREE's GGUF parser bounds each tensor by the data that follows
        // the header with checked sums; the length check covers the rest.
        Format::Gguf | Format::Other => Ok(one(0..len)),
    }
}

const IRPA_MAGIC: u32 = 0x4150_5249;
const IRPA_PREFIX: u64 = 32;
const IRPA_V0_HEADER: u64 = 88;
const IRPA_ENTRY_HEADER: u64 = 60;
const IRPA_DATA_ENTRY: u64 = IRPA_ENTRY_HEADER + 16;
const IRPA_ENTRY_ALIGNMENT: u64 = 16;
const IRPA_TYPE_DATA: u32 = 2;

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// Walks every header of an `.irpa` chain as `iree_io_parse_irpa_index`
/// does, with checked sums: the header, its three segments, each entry of
/// the entry table (its size, name, metadata and, for data, storage) and
/// the link to the next header. Returns the storage segments.
fn irpa_layout(source: &(impl Source + ?Sized)) -> Result<Vec<Range<u64>>, Fault> {
    let source = &Window::new(source);
    let len = source.len();
    let file = 0..len;
    let mut regions = Vec::new();
    let mut base = 0u64;
    loop {
        let mut header = [0u8; IRPA_V0_HEADER as usize];
        // What IREE's parser reports itself: too short, bad magic, a
        // version or header size it does not read.
        if inside(base, IRPA_PREFIX, &file).is_none() {
            return Ok(regions_or_all(regions, len));
        }
        source.read(base, &mut header[..IRPA_PREFIX as usize])?;
        let (magic, major, minor) = (
            u32_at(&header, 0),
            u16::from_le_bytes([header[4], header[5]]),
            u16::from_le_bytes([header[6], header[7]]),
        );
        let (header_size, next) = (u64_at(&header, 8), u64_at(&header, 16));
        if magic != IRPA_MAGIC || major != 0 || minor != 0 || header_size != IRPA_V0_HEADER {
            return Ok(regions_or_all(regions, len));
        }
        // IREE compares the header's size with the file's length, not with
        // what follows a linked header's offset.
        if IRPA_V0_HEADER > len {
            return Ok(regions_or_all(regions, len));
        }
        if inside(base, IRPA_V0_HEADER, &file).is_none() {
            return Err(fault(
                StatusCode::OUT_OF_RANGE,
                format!("its header at {} is past the end of its {len} bytes", span(base, IRPA_V0_HEADER)),
            ));
        }
        source.read(base, &mut header)?;
        let entry_count = u64_at(&header, 32);
        let segment = |at: usize, what: &str| {
            let (offset, length) = (u64_at(&header, at), u64_at(&header, at + 8));
            base.checked_add(offset).and_then(|start| inside(start, length, &file)).ok_or_else(|| {
                fault(
                    StatusCode::OUT_OF_RANGE,
                    format!(
                        "its {what} segment at {} (from the header at {base}) is outside its {len} bytes",
                        span(offset, length)
                    ),
                )
            })
        };
        let entries = segment(40, "entry")?;
        let metadata = segment(56, "metadata")?;
        let storage = segment(72, "storage")?;
        let mut at = entries.start;
        for i in 0..entry_count {
            let remaining = entries.end - at;
            let mut entry = [0u8; IRPA_DATA_ENTRY as usize];
            if remaining < IRPA_ENTRY_HEADER {
                return Err(fault(
                    StatusCode::OUT_OF_RANGE,
                    format!(
                        "its entry table {} ends inside entry {i} of {entry_count}",
                        span(entries.start, entries.end - entries.start)
                    ),
                ));
            }
            source.read(at, &mut entry[..IRPA_ENTRY_HEADER as usize])?;
            let size = u64_at(&entry, 0);
            if size < IRPA_ENTRY_HEADER || size > remaining {
                return Err(fault(
                    StatusCode::OUT_OF_RANGE,
                    format!(
                        "entry {i} at byte {at} declares {size} bytes, outside its entry table {}",
                        span(entries.start, entries.end - entries.start)
                    ),
                ));
            }
            // IREE steps by the aligned size and subtracts it from what
            // remains: past the table's end, the next entry would be read
            // from beyond it.
            let aligned = size.next_multiple_of(IRPA_ENTRY_ALIGNMENT);
            if aligned > remaining && i + 1 < entry_count {
                return Err(fault(
                    StatusCode::OUT_OF_RANGE,
                    format!(
                        "entry {i} at byte {at} ends, aligned, past its entry table {}",
                        span(entries.start, entries.end - entries.start)
                    ),
                ));
            }
            let kind = u32_at(&entry, 8);
            let reference = |at: usize, what: &str| {
                let (offset, length) = (u64_at(&entry, at), u64_at(&entry, at + 8));
                let segment_length = metadata.end - metadata.start;
                // IREE ignores an empty reference, whatever its offset.
                if length == 0 {
                    return Ok((metadata.start, 0));
                }
                if inside(offset, length, &(0..segment_length)).is_none() {
                    return Err(fault(
                        StatusCode::OUT_OF_RANGE,
                        format!(
                            "entry {i}'s {what} at {} is outside its metadata segment of {segment_length} bytes",
                            span(offset, length)
                        ),
                    ));
                }
                Ok((metadata.start + offset, length))
            };
            let (name_at, name_length) = reference(20, "name")?;
            reference(36, "metadata")?;
            let key = || -> Result<String, Fault> {
                let mut name = vec![0; usize::try_from(name_length).unwrap_or(usize::MAX).min(4096)];
                source.read(name_at, &mut name)?;
                Ok(String::from_utf8_lossy(&name).into_owned())
            };
            if kind == IRPA_TYPE_DATA && size >= IRPA_DATA_ENTRY {
                source.read(at + IRPA_ENTRY_HEADER, &mut entry[IRPA_ENTRY_HEADER as usize..])?;
                let (offset, length, alignment) = (
                    u64_at(&entry, IRPA_ENTRY_HEADER as usize),
                    u64_at(&entry, IRPA_ENTRY_HEADER as usize + 8),
                    u64_at(&entry, 52),
                );
                let segment_length = storage.end - storage.start;
                let Some(range) = inside(offset, length, &(0..segment_length)) else {
                    return Err(Fault {
                        key: Some(key()?),
                        ..fault(
                            StatusCode::OUT_OF_RANGE,
                            format!(
                                "its data at {} of the storage segment is outside the segment's {segment_length} bytes",
                                span(offset, length)
                            ),
                        )
                    });
                };
                let start = storage.start + range.start;
                if alignment > 1 && (!alignment.is_power_of_two() || start % alignment != 0) {
                    return Err(Fault {
                        key: Some(key()?),
                        ..fault(
                            StatusCode::INVALID_ARGUMENT,
                            format!(
                                "its data at byte {start} is not aligned to the {alignment} bytes it declares"
                            ),
                        )
                    });
                }
            }
            at += aligned.min(remaining);
        }
        regions.push(storage);
        if next == 0 {
            return Ok(regions);
        }
        // IREE checks that the linked header's prefix fits with a sum
        // that wraps; one that does not fit it refuses itself.
        base = base.checked_add(next).filter(|next| next.checked_add(IRPA_PREFIX).is_some()).ok_or_else(
            || {
                fault(
                    StatusCode::OUT_OF_RANGE,
                    format!("its header at {base} links to one past 2^64 (+{next})"),
                )
            },
        )?;
        if regions.len() as u64 > len / IRPA_V0_HEADER {
            return Err(fault(StatusCode::OUT_OF_RANGE, "its headers link in a loop".to_owned()));
        }
    }
}

/// Reads a [`Source`] through a window of [`Window::SIZE`] bytes, so that
/// walking an entry table reads the archive once per window, not once per
/// field.
struct Window<'a, S: Source + ?Sized> {
    source: &'a S,
    at: std::cell::Cell<u64>,
    bytes: std::cell::RefCell<Vec<u8>>,
}

impl<'a, S: Source + ?Sized> Window<'a, S> {
    const SIZE: u64 = 64 << 10;

    fn new(source: &'a S) -> Self {
        Self { source, at: std::cell::Cell::new(0), bytes: std::cell::RefCell::new(Vec::new()) }
    }
}

impl<S: Source + ?Sized> Source for Window<'_, S> {
    fn len(&self) -> u64 {
        self.source.len()
    }

    fn read(&self, offset: u64, buffer: &mut [u8]) -> Result<(), Fault> {
        let length = buffer.len() as u64;
        let within = |at: u64, held: usize| {
            offset
                .checked_sub(at)
                .filter(|start| start.checked_add(length).is_some_and(|end| end <= held as u64))
        };
        if within(self.at.get(), self.bytes.borrow().len()).is_none() {
            let end = self.len();
            if length > Self::SIZE || offset > end {
                return self.source.read(offset, buffer);
            }
            let mut bytes = vec![0; Self::SIZE.min(end - offset) as usize];
            self.source.read(offset, &mut bytes)?;
            self.at.set(offset);
            *self.bytes.borrow_mut() = bytes;
        }
        let bytes = self.bytes.borrow();
        let Some(start) = within(self.at.get(), bytes.len()) else {
            return Err(past_end(offset, length, self.len()));
        };
        let start = start as usize;
        buffer.copy_from_slice(&bytes[start..start + buffer.len()]);
        Ok(())
    }
}

/// A list of one region.
fn one(region: Range<u64>) -> Vec<Range<u64>> {
    std::iter::once(region).collect()
}

fn regions_or_all(regions: Vec<Range<u64>>, len: u64) -> Vec<Range<u64>> {
    if regions.is_empty() { one(0..len) } else { regions }
}

/// One entry of IREE's index, as [`check_entries`] checks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) key: String,
    /// Stored in a file (else a splat, which reads no file).
    pub(crate) in_file: bool,
    /// Stored in this archive (not another file).
    pub(crate) in_archive: bool,
    pub(crate) offset: u64,
    pub(crate) length: u64,
}

/// Checks every file-backed entry IREE indexed from an archive of `len`
/// bytes: its range, summed without overflow, must lie within the archive
/// and within one of its data `regions`.
pub(crate) fn check_entries(len: u64, regions: &[Range<u64>], entries: &[Entry]) -> Result<(), Fault> {
    for entry in entries.iter().filter(|entry| entry.in_file) {
        let at_fault = |code, problem| Err(Fault { code, key: Some(entry.key.clone()), problem });
        if !entry.in_archive {
            return at_fault(StatusCode::INVALID_ARGUMENT, "its data is in another file".to_owned());
        }
        if inside(entry.offset, entry.length, &(0..len)).is_none() {
            return at_fault(
                StatusCode::OUT_OF_RANGE,
                format!(
                    "its data at bytes {} is past the end of its {len} bytes",
                    span(entry.offset, entry.length)
                ),
            );
        }
        if !regions.iter().any(|region| inside(entry.offset, entry.length, region).is_some()) {
            return at_fault(
                StatusCode::OUT_OF_RANGE,
                format!(
                    "its data at bytes {} overlaps the archive's header (data lies in {})",
                    span(entry.offset, entry.length),
                    regions
                        .iter()
                        .map(|region| format!("[{}, {})", region.start, region.end))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, offset: u64, length: u64) -> Entry {
        Entry { key: key.to_owned(), in_file: true, in_archive: true, offset, length }
    }

    #[test]
    fn entries_are_checked_with_sums_that_do_not_wrap() {
        let regions = one(64..4096);
        assert_eq!(check_entries(4096, &regions, &[entry("a", 64, 4032)]), Ok(()));
        let wrapped =
            check_entries(4096, &regions, &[entry("it's", u64::MAX - 4095, 4096 + 128)]).unwrap_err();
        assert_eq!((wrapped.code, wrapped.key.as_deref()), (StatusCode::OUT_OF_RANGE, Some("it's")));
        assert!(wrapped.problem.contains("past 2^64"), "{}", wrapped.problem);
        let past = check_entries(4096, &regions, &[entry("a", 4000, 97)]).unwrap_err();
        assert!(past.problem.contains("[4000, 4097)"), "{}", past.problem);
        let header = check_entries(4096, &regions, &[entry("a", 0, 16)]).unwrap_err();
        assert!(header.problem.contains("overlaps the archive's header"), "{}", header.problem);
        // Splats read no file.
        let splat = Entry { in_file: false, ..entry("s", u64::MAX, u64::MAX) };
        assert_eq!(check_entries(4096, &regions, &[splat]), Ok(()));
    }

    /// IREE's `.irpa` writer's layout, and faults the fuzzer and the
    /// issue found.
    #[test]
    fn irpa_references_are_checked_as_iree_reads_them() {
        use xplug_fixtures::archives::{IrpaEntry, irpa, irpa_at};
        let put = |bytes: &mut Vec<u8>, at: usize, value: u64| {
            bytes[at..at + 8].copy_from_slice(&value.to_le_bytes())
        };
        let good = irpa(&[IrpaEntry::new("w", 0, 64)], &[7; 64]);
        let storage = u64::from_le_bytes(good[irpa_at::STORAGE_SEGMENT..][..8].try_into().unwrap());
        assert_eq!(layout(Format::Irpa, good.as_slice()), Ok(one(storage..storage + 64)));
        // An empty name far away is no name, as IREE reads it (found by
        // the fuzzer: the sum overflowed).
        let mut bytes = good.clone();
        put(&mut bytes, irpa_at::FIRST_ENTRY + irpa_at::ENTRY_NAME, u64::MAX);
        put(&mut bytes, irpa_at::FIRST_ENTRY + irpa_at::ENTRY_NAME + 8, 0);
        assert_eq!(layout(Format::Irpa, bytes.as_slice()), Ok(one(storage..storage + 64)));
        // A name whose reference wraps.
        put(&mut bytes, irpa_at::FIRST_ENTRY + irpa_at::ENTRY_NAME + 8, 2);
        let fault = layout(Format::Irpa, bytes.as_slice()).unwrap_err();
        assert!(fault.problem.contains("entry 0's name"), "{}", fault.problem);
        // Data 2^64 - 0x2000 into a segment whose length wraps.
        let mut bytes = good.clone();
        put(&mut bytes, irpa_at::STORAGE_SEGMENT + 8, 0u64.wrapping_sub(storage));
        put(&mut bytes, irpa_at::FIRST_ENTRY + irpa_at::ENTRY_STORAGE, 0u64.wrapping_sub(0x2000));
        let fault = layout(Format::Irpa, bytes.as_slice()).unwrap_err();
        assert_eq!(fault.code, StatusCode::OUT_OF_RANGE);
        assert!(
            fault.problem.contains("storage segment") && fault.problem.contains("past 2^64"),
            "{}",
            fault.problem
        );
    }

    #[test]
    fn a_window_reads_what_its_source_holds() {
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let window = Window::new(bytes.as_slice());
        for (offset, length) in
            [(0, 8), (65_530, 12), (65_536, 60), (10, 70_000), (199_990, 10), (131_000, 4096)]
        {
            let mut buffer = vec![0; length];
            window.read(offset, &mut buffer).unwrap();
            assert_eq!(buffer, bytes[offset as usize..offset as usize + length], "{offset} {length}");
        }
        let mut buffer = [0; 16];
        let past = window.read(199_990, &mut buffer).unwrap_err();
        assert_eq!(past.code, StatusCode::OUT_OF_RANGE);
        assert!(window.read(u64::MAX - 4, &mut buffer).is_err());
    }

    #[test]
    fn formats_are_named_by_extension_as_iree_names_them() {
        for (name, format) in [
            ("a/w.irpa", Format::Irpa),
            ("W.IRPA", Format::Irpa),
            ("x.gguf", Format::Gguf),
            ("safetensors", Format::Safetensors),
            ("m.vmfb", Format::Other),
        ] {
            assert_eq!(Format::of(std::path::Path::new(name)), format, "{name}");
        }
    }

    #[test]
    fn a_safetensors_header_bounds_its_data() {
        let mut file = 16u64.to_le_bytes().to_vec();
        file.extend_from_slice(&[b' '; 16]);
        file.extend_from_slice(&[0; 8]);
        assert_eq!(layout(Format::Safetensors, file.as_slice()), Ok(one(24..32)));
        // A header longer than the file: IREE's parser refuses it.
        file[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(layout(Format::Safetensors, file.as_slice()), Ok(one(0..32)));
    }
}
