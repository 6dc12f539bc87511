//! The `.npy` array format (version 1.0 to 3.0), for the one shape the
//! end-to-end tests exchange with IREE's runtime: a one-dimensional
//! little-endian `float32` array.
//!
//! A file is the magic `\x93NUMPY`, a major and minor version byte, the
//! header length (`u16` for version 1, `u32` for versions 2 and 3, little
//! endian), a Python-literal header dictionary (`descr`, `fortran_order`,
//! `shape`) padded with spaces and ending in a newline, then the data.

/// Why bytes are not a one-dimensional `<f4` array.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NpyError {
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
    /// The array is not a one-dimensional little-endian float32 array.
    #[error("expected a 1-D little-endian float32 array ('<f4', C order), header is {header:?}")]
    Layout {
        /// The header dictionary.
        header: String,
    },
}

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Encodes `values` as a version 1.0 `.npy` file of shape `(len,)`.
#[must_use]
pub fn encode_f32(values: &[f32]) -> Vec<u8> {
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({},), }}", values.len());
    // Magic (6) + version (2) + length (2) + header + '\n', padded to 64.
    let unpadded = MAGIC.len() + 4 + header.len() + 1;
    header.extend(std::iter::repeat_n(' ', unpadded.next_multiple_of(64) - unpadded));
    header.push('\n');
    let mut bytes = Vec::with_capacity(MAGIC.len() + 4 + header.len() + values.len() * 4);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&[1, 0]);
    let length = u16::try_from(header.len()).expect("a 1-D header is far below 64 KiB");
    bytes.extend_from_slice(&length.to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for value in values {
        bytes.extend_from_slice(&value.to_le_bytes());
    }
    bytes
}

/// Decodes a one-dimensional little-endian `float32` `.npy` file.
///
/// # Errors
/// [`NpyError`] when the bytes are not such a file.
pub fn decode_f32(bytes: &[u8]) -> Result<Vec<f32>, NpyError> {
    if bytes.len() < MAGIC.len() + 2 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(NpyError::Magic);
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (length_size, header_length) = match major {
        1 => (2, bytes.get(8..10).map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))),
        2 | 3 => (4, bytes.get(8..12).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)),
        _ => return Err(NpyError::Version { major, minor }),
    };
    let start = 8 + length_size;
    let header_length = header_length.ok_or(NpyError::Truncated { expected: start, found: bytes.len() })?;
    let data_start = start + header_length;
    let header = bytes
        .get(start..data_start)
        .ok_or(NpyError::Truncated { expected: data_start, found: bytes.len() })?;
    let header = String::from_utf8_lossy(header).into_owned();
    let compact: String = header.chars().filter(|c| !c.is_whitespace()).collect();
    let layout_error = || NpyError::Layout { header: header.trim().to_owned() };
    if !compact.contains("'descr':'<f4'") || !compact.contains("'fortran_order':False") {
        return Err(layout_error());
    }
    let shape =
        compact.split("'shape':(").nth(1).and_then(|rest| rest.split(')').next()).ok_or_else(layout_error)?;
    let dims: Vec<&str> = shape.split(',').filter(|dim| !dim.is_empty()).collect();
    let [count] = dims.as_slice() else { return Err(layout_error()) };
    let count: usize = count.parse().map_err(|_| layout_error())?;
    let data_end =
        count.checked_mul(4).and_then(|len| len.checked_add(data_start)).ok_or_else(layout_error)?;
    let data = bytes
        .get(data_start..data_end)
        .ok_or(NpyError::Truncated { expected: data_end, found: bytes.len() })?;
    Ok(data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
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
    fn bad_files_are_refused() {
        assert!(matches!(decode_f32(b"PK\x03\x04"), Err(NpyError::Magic)));
        assert!(matches!(decode_f32(b"\x93NUMPY\x09\x00"), Err(NpyError::Version { major: 9, .. })));
        let mut doubles = encode_f32(&[1.0]);
        let at = doubles.windows(3).position(|w| w == b"<f4").unwrap();
        doubles[at + 2] = b'8';
        assert!(matches!(decode_f32(&doubles), Err(NpyError::Layout { .. })));
        let full = encode_f32(&[1.0, 2.0]);
        assert!(matches!(
            decode_f32(&full[..full.len() - 1]),
            Err(NpyError::Truncated { expected, found }) if expected == full.len() && found == full.len() - 1
        ));
    }
}
