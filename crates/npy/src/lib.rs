//! NumPy's `.npy` array files, the format IREE's tools read with
//! `--input=@file.npy` and write with `--output=@file.npy`.
//!
//! xplug exchanges tensors with IREE in this format: `xplug run` reads and
//! writes it as `iree-run-module` does, and the end-to-end tests feed the
//! same files to both. The crate holds the one reader and writer; it knows
//! the container, not the element types (a dtype is kept as its `descr`
//! string, such as `<f4`).
//!
//! ```
//! use xplug_npy::{NpyArray, decode, encode_f32};
//!
//! let bytes = encode_f32(&[1.0, -2.5]);
//! let array: NpyArray = decode(&bytes)?;
//! assert_eq!(array.descr, "<f4");
//! assert_eq!(array.shape, [2]);
//! assert_eq!(array.data, [1.0f32.to_le_bytes(), (-2.5f32).to_le_bytes()].concat());
//! # Ok::<(), xplug_npy::Error>(())
//! ```
//!
//! A file is the magic `\x93NUMPY`, a major and minor version byte, the
//! header length (`u16` for version 1, `u32` for versions 2 and 3, little
//! endian), a Python-literal header dictionary (`descr`, `fortran_order`,
//! `shape`) padded with spaces and ending in a newline, then the data in C
//! order. Fortran-order arrays are refused.

/// Why bytes are not an `.npy` array this crate reads.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file does not start with the `.npy` magic.
    #[error("not an .npy file (no \\x93NUMPY magic)")]
    Magic,
    /// A version this reader does not know.
    #[error("unsupported .npy version {major}.{minor}")]
    Version {
        /// Major version byte.
        major: u8,
        /// Minor version byte.
        minor: u8,
    },
    /// The header or the data is cut short.
    #[error("truncated .npy file: {expected} bytes needed, {found} present")]
    Truncated {
        /// Bytes the header says are there.
        expected: usize,
        /// Bytes present.
        found: usize,
    },
    /// The header dictionary is not one this reader understands.
    #[error("unreadable .npy header {header:?}: {reason}")]
    Header {
        /// The header dictionary, cut to its start by [`excerpt`].
        header: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The array is not the one the caller asked for.
    #[error("expected {expected}, found dtype '{descr}' with shape {shape:?}")]
    Layout {
        /// What was expected.
        expected: &'static str,
        /// The file's dtype.
        descr: String,
        /// The file's shape.
        shape: Vec<usize>,
    },
}

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// The most characters of untrusted text (a file's header, an input the
/// user gave) that an error message quotes: [`excerpt`] cuts the rest.
pub const QUOTE_LIMIT: usize = 80;

/// `text` as an error message quotes it: whole when it has at most
/// [`QUOTE_LIMIT`] characters, else its first [`QUOTE_LIMIT`] followed by
/// `...` and the full length, so a 20 MB header is not echoed whole.
///
/// ```
/// assert_eq!(xplug_npy::excerpt("{'descr': '<f4'}"), "{'descr': '<f4'}");
/// let long = "x".repeat(1000);
/// assert_eq!(xplug_npy::excerpt(&long), format!("{}... (1000 bytes)", "x".repeat(80)));
/// ```
#[must_use]
pub fn excerpt(text: &str) -> String {
    excerpt_at(text, QUOTE_LIMIT)
}

/// [`excerpt`] with another limit: for a message that quotes bad input
/// among its own words (IREE's status for an input it could not parse
/// quotes the part it choked on, whatever its length).
#[must_use]
pub fn excerpt_at(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}... ({} bytes)", &text[..cut], text.len()),
    }
}

/// A dense C-order array: its dtype, shape and raw element bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyArray {
    /// NumPy's dtype string (`<f4`, `<i8`, `|u1`, `|b1`, ...).
    pub descr: String,
    /// The shape, outermost dimension first (empty for a scalar).
    pub shape: Vec<usize>,
    /// The elements' bytes in C order, as the dtype lays them out.
    pub data: Vec<u8>,
}

/// Encodes `array` as a version 1.0 file (version 2.0 when the header needs
/// more than 64 KiB).
#[must_use]
pub fn encode(array: &NpyArray) -> Vec<u8> {
    let dims: Vec<String> = array.shape.iter().map(ToString::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}", array.descr);
    let version: u8 = if header.len() + 64 > usize::from(u16::MAX) { 2 } else { 1 };
    let length_size = if version == 1 { 2 } else { 4 };
    // Magic, version, length, header and '\n', padded to 64 bytes.
    let unpadded = MAGIC.len() + 2 + length_size + header.len() + 1;
    header.extend(std::iter::repeat_n(' ', unpadded.next_multiple_of(64) - unpadded));
    header.push('\n');
    let mut bytes = Vec::with_capacity(unpadded.next_multiple_of(64) + array.data.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&[version, 0]);
    if version == 1 {
        bytes.extend_from_slice(&u16::try_from(header.len()).expect("checked above").to_le_bytes());
    } else {
        bytes.extend_from_slice(&u32::try_from(header.len()).unwrap_or(u32::MAX).to_le_bytes());
    }
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&array.data);
    bytes
}

/// Decodes an `.npy` file. The data length is checked against the shape and
/// the dtype's item size (from its `descr`); bytes after the array are not
/// read (see [`decode_prefix`]).
///
/// # Errors
/// [`Error`] when the bytes are not such a file.
pub fn decode(bytes: &[u8]) -> Result<NpyArray, Error> {
    decode_prefix(bytes).map(|(array, _)| array)
}

/// Decodes the `.npy` array at the start of `bytes` and returns it with
/// the number of bytes it takes, so that several arrays written one after
/// the other (`iree-run-module --output=@f.npy --output=+f.npy`) are read
/// in turn.
///
/// # Errors
/// [`Error`] when the bytes do not start with such an array.
pub fn decode_prefix(bytes: &[u8]) -> Result<(NpyArray, usize), Error> {
    if bytes.len() < MAGIC.len() + 2 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(Error::Magic);
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (length_size, header_length) = match major {
        1 => (2, bytes.get(8..10).map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))),
        2 | 3 => (4, bytes.get(8..12).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)),
        _ => return Err(Error::Version { major, minor }),
    };
    let start = 8 + length_size;
    let header_length = header_length.ok_or(Error::Truncated { expected: start, found: bytes.len() })?;
    let data_start = start
        .checked_add(header_length)
        .ok_or(Error::Truncated { expected: usize::MAX, found: bytes.len() })?;
    let header =
        bytes.get(start..data_start).ok_or(Error::Truncated { expected: data_start, found: bytes.len() })?;
    let header = String::from_utf8_lossy(header).into_owned();
    let compact: String = header.chars().filter(|c| !c.is_whitespace()).collect();
    // The header is the file's: an error quotes only its start.
    let bad = |reason| Error::Header { header: excerpt(header.trim()), reason };
    if !compact.contains("'fortran_order':False") {
        return Err(bad("only C-order arrays ('fortran_order': False) are read"));
    }
    let descr = compact
        .split("'descr':'")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .ok_or_else(|| bad("no 'descr'"))?
        .to_owned();
    let item_size = item_size(&descr).ok_or_else(|| bad("the dtype has no fixed item size"))?;
    let shape_text = compact
        .split("'shape':(")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .ok_or_else(|| bad("no 'shape'"))?;
    let shape = shape_text
        .split(',')
        .filter(|dim| !dim.is_empty())
        .map(|dim| dim.parse::<usize>().map_err(|_| bad("a dimension is not a number")))
        .collect::<Result<Vec<usize>, Error>>()?;
    let length = shape
        .iter()
        .try_fold(item_size, |acc, &dim| acc.checked_mul(dim))
        .and_then(|len| len.checked_add(data_start))
        .ok_or_else(|| bad("the shape's size overflows"))?;
    let data =
        bytes.get(data_start..length).ok_or(Error::Truncated { expected: length, found: bytes.len() })?;
    Ok((NpyArray { descr, shape, data: data.to_vec() }, length))
}

/// The item size of a fixed-size dtype `descr` (`<f4` → 4).
#[must_use]
pub fn item_size(descr: &str) -> Option<usize> {
    let size: usize = descr.get(2..)?.parse().ok()?;
    (size > 0 && matches!(descr.as_bytes().first(), Some(b'<' | b'>' | b'|' | b'='))).then_some(size)
}

/// Encodes `values` as a one-dimensional little-endian `float32` file.
#[must_use]
pub fn encode_f32(values: &[f32]) -> Vec<u8> {
    encode(&NpyArray {
        descr: "<f4".to_owned(),
        shape: vec![values.len()],
        data: values.iter().flat_map(|value| value.to_le_bytes()).collect(),
    })
}

/// Decodes a one-dimensional little-endian `float32` file.
///
/// # Errors
/// [`Error`] when the bytes are not such a file.
pub fn decode_f32(bytes: &[u8]) -> Result<Vec<f32>, Error> {
    let array = decode(bytes)?;
    if array.descr != "<f4" || array.shape.len() != 1 {
        return Err(Error::Layout {
            expected: "a 1-D little-endian float32 array ('<f4')",
            descr: array.descr,
            shape: array.shape,
        });
    }
    Ok(array.data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_every_bit() {
        let values = [0.0, -0.0, 1.5, f32::MIN_POSITIVE, f32::MAX, -3.25e-7];
        let bytes = encode_f32(&values);
        assert_eq!((bytes.len() - values.len() * 4) % 64, 0, "header padded to 64 bytes");
        let back = decode_f32(&bytes).unwrap();
        assert_eq!(back.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), values.map(f32::to_bits));
        assert_eq!(decode_f32(&encode_f32(&[])).unwrap(), Vec::<f32>::new());
    }

    #[test]
    fn any_shape_and_dtype_round_trips() {
        for (descr, shape) in [("<i4", vec![2, 3]), ("|u1", vec![4]), ("<f8", vec![]), ("|b1", vec![1, 1, 2])]
        {
            let size = item_size(descr).unwrap() * shape.iter().product::<usize>();
            let array =
                NpyArray { descr: descr.to_owned(), shape, data: (0..size).map(|i| i as u8).collect() };
            assert_eq!(decode(&encode(&array)).unwrap(), array);
        }
    }

    #[test]
    fn numpy_version_2_header_is_read() {
        let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
        let header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
        bytes.extend_from_slice(&u32::try_from(header.len()).unwrap().to_le_bytes());
        bytes.extend_from_slice(header);
        bytes.extend_from_slice(&1.0f32.to_le_bytes());
        bytes.extend_from_slice(&(-2.0f32).to_le_bytes());
        assert_eq!(decode_f32(&bytes).unwrap(), [1.0, -2.0]);
    }

    #[test]
    fn zero_dimensional_arrays_read_as_iree_writes_them() {
        // The bytes iree-run-module wrote for `--output=@o.npy` of an `i32`
        // result 42: version 1.0, shape `()`, 128-byte header.
        let mut iree = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
        let mut header = "{'descr': '<i4', 'fortran_order': False, 'shape': (), }".to_owned();
        header.push_str(&" ".repeat(0x76 - header.len() - 1));
        header.push('\n');
        iree.extend_from_slice(header.as_bytes());
        iree.extend_from_slice(&42i32.to_le_bytes());
        let array = decode(&iree).unwrap();
        assert_eq!(
            array,
            NpyArray { descr: "<i4".into(), shape: vec![], data: 42i32.to_le_bytes().to_vec() }
        );
        assert_eq!(encode(&array), iree, "a 0-d array is written byte for byte as IREE writes it");
    }

    #[test]
    fn arrays_written_one_after_another_are_read_in_turn() {
        let first = encode_f32(&[1.0, 2.0]);
        let second =
            encode(&NpyArray { descr: "<i8".into(), shape: vec![], data: 7i64.to_le_bytes().to_vec() });
        let both = [first.clone(), second.clone()].concat();
        let (array, used) = decode_prefix(&both).unwrap();
        assert_eq!((array.shape, used), (vec![2], first.len()));
        let (array, used) = decode_prefix(&both[used..]).unwrap();
        assert_eq!((array.descr.as_str(), used), ("<i8", second.len()));
    }

    #[test]
    fn a_huge_bad_header_is_quoted_only_in_part() {
        let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
        let header =
            format!("{{'descr': '<f4', 'fortran_order': True, 'junk': '{}'}}\n", "A".repeat(20 << 20));
        bytes.extend_from_slice(&u32::try_from(header.len()).unwrap().to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        let error = decode(&bytes).unwrap_err();
        let Error::Header { header: quoted, .. } = &error else { panic!("{error}") };
        assert!(quoted.starts_with("{'descr': '<f4'"), "{quoted}");
        assert!(quoted.ends_with(&format!("... ({} bytes)", header.trim().len())), "{quoted}");
        assert!(error.to_string().len() < 300, "{}", error.to_string().len());
    }

    #[test]
    fn bad_files_are_refused() {
        assert!(matches!(decode_f32(b"PK\x03\x04"), Err(Error::Magic)));
        assert!(matches!(decode_f32(b"\x93NUMPY\x09\x00"), Err(Error::Version { major: 9, .. })));
        let mut doubles = encode_f32(&[1.0]);
        let at = doubles.windows(3).position(|w| w == b"<f4").unwrap();
        doubles[at + 2] = b'8';
        assert!(matches!(decode_f32(&doubles), Err(Error::Truncated { .. })), "8-byte items need 8 bytes");
        let full = encode_f32(&[1.0, 2.0]);
        assert!(matches!(
            decode_f32(&full[..full.len() - 1]),
            Err(Error::Truncated { expected, found }) if expected == full.len() && found == full.len() - 1
        ));
        let mut fortran = full.clone();
        let at = fortran.windows(5).position(|w| w == b"False").unwrap();
        fortran[at..at + 5].copy_from_slice(b"True ");
        assert!(matches!(decode(&fortran), Err(Error::Header { .. })));
        let ints = encode(&NpyArray { descr: "<i4".into(), shape: vec![1], data: vec![0; 4] });
        assert!(matches!(decode_f32(&ints), Err(Error::Layout { .. })));
    }
}
