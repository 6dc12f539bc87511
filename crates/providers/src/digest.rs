//! The SHA-256 of a plugin's code ([`Sha256Digest`]): a leaf record that
//! pinned specs, allow-lists, sealed code bytes and errors all name.

use std::fmt;

use sha2::{Digest as _, Sha256};

/// A SHA-256 hash of a plugin's code: the bytes of its file as the loader
/// maps them (a `.so` or a whole `.sos` container), what `sha256sum` prints
/// for the file.
///
/// ```
/// use xplug_providers::Sha256Digest;
///
/// let digest = Sha256Digest::of(b"abc");
/// assert_eq!(digest.to_string(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
/// assert_eq!(Sha256Digest::parse(&digest.to_string()), Ok(digest));
/// assert!(Sha256Digest::parse("ba78").is_err());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sha256Digest([u8; 32]);

impl Sha256Digest {
    /// The hash of `bytes`.
    #[must_use]
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// The hash written as 64 hex digits (either case).
    ///
    /// # Errors
    /// What is wrong with `hex` (its length, or a character that is not a
    /// hex digit), as a sentence for the caller's error.
    pub fn parse(hex: &str) -> Result<Self, String> {
        if hex.len() != 64 {
            return Err(format!(
                "a SHA-256 hash is 64 hex digits, `{hex}` has {} characters; `xplug pin PLUGIN` or \
                 `sha256sum FILE` prints it",
                hex.chars().count()
            ));
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(hex, &mut bytes).map_err(|_| {
            format!("`{hex}` is not a SHA-256 hash: it holds a character that is not a hex digit")
        })?;
        Ok(Self(bytes))
    }

    /// The hash whose 32 bytes are `bytes`.
    pub(crate) fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The 32 bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

/// Lower-case hex, as `sha256sum` prints it.
impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Digest({self})")
    }
}
