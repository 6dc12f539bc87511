//! Pinned plugins: the SHA-256 of the bytes a loader maps
//! ([`Sha256Digest`]), allow-lists of such hashes ([`AllowList`]), and the
//! one routine that reads, hashes, checks and maps ([`open_verified`]).
//!
//! The hash is taken of exactly the bytes that are mapped: the loader reads
//! its file once ([`Loader::read`]: in chunks, hashed as they are read, into
//! a sealed in-memory file, [`crate::CodeBytes`]), the hash is checked, and
//! those same bytes are mapped ([`Loader::open_bytes`]); a shared library is
//! opened from the sealed file, never from its path again, and refused
//! unless the OS loader mapped that very file. So a file replaced after the
//! check, or a library loaded earlier, changes nothing
//! (`docs/src/reference/loading.md#pinned-plugins`).

use std::path::{Path, PathBuf};

use crate::digest::Sha256Digest;
use crate::{Code, Error, Loader};

/// The environment variable naming an allow-list file ([`AllowList::from_env`]).
pub const ALLOW_LIST_VAR: &str = "XPLUG_ALLOWED_PLUGINS";

/// The hashes of the plugins an operator allows, read from a file in
/// `sha256sum` format: one `HEX  NAME` line per plugin (`HEX *NAME` too;
/// the name is a reminder for people, only the hash counts), blank lines
/// and lines starting with `#` ignored.
///
/// A manager with an allow-list refuses every plugin whose code is not on
/// it; plugins linked into the program (`static:`) are excepted, since
/// linking them was the trust decision (`docs/src/reference/loading.md#allow-lists`).
///
/// ```
/// use xplug_providers::{AllowList, Sha256Digest};
///
/// let digest = Sha256Digest::of(b"plugin bytes");
/// let list = AllowList::parse(&format!("# approved 2026-12-03\n{digest}  libfast.so\n"), "allowed.txt")?;
/// assert!(list.allows(&digest));
/// assert!(!list.allows(&Sha256Digest::of(b"other bytes")));
/// let error = AllowList::parse("not-a-hash  libfast.so\n", "allowed.txt").unwrap_err();
/// assert!(error.to_string().contains("allowed.txt line 1"), "{error}");
/// # Ok::<(), xplug_providers::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowList {
    path: PathBuf,
    entries: Vec<(Sha256Digest, String)>,
}

impl AllowList {
    /// Reads the allow-list file at `path`.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file when it cannot be read;
    /// [`Error::AllowListInvalid`] naming the file and line of the first
    /// malformed line.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let bytes = read_bounded(path).map_err(|error| {
            Error::io(
                format!(
                    "cannot read allow-list {} (named by {ALLOW_LIST_VAR} or given to the host)",
                    path.display()
                ),
                error,
            )
        })?;
        let text = String::from_utf8(bytes).map_err(|error| Error::AllowListInvalid {
            path: path.to_path_buf(),
            line: 1 + error.as_bytes()[..error.utf8_error().valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count(),
            reason: "it is not UTF-8 text; write `sha256sum` lines".to_owned(),
        })?;
        Self::parse(&text, path)
    }

    /// The allow-list named by [`ALLOW_LIST_VAR`] (`XPLUG_ALLOWED_PLUGINS`),
    /// or `None` when the variable is unset. Set, it must name a file: set
    /// but empty (or only whitespace) is refused, never read as "no list"
    /// (an allow-list fails closed).
    ///
    /// # Errors
    /// [`Error::AllowListUnnamed`] when the variable is set but empty; as
    /// [`AllowList::read`] otherwise.
    ///
    /// # Thread-safety
    /// Reads the environment; do not call while another thread modifies it.
    pub fn from_env() -> Result<Option<Self>, Error> {
        match std::env::var_os(ALLOW_LIST_VAR) {
            None => Ok(None),
            Some(path) if path.to_string_lossy().trim().is_empty() => {
                Err(Error::AllowListUnnamed { var: ALLOW_LIST_VAR })
            }
            Some(path) => Self::read(PathBuf::from(path)).map(Some),
        }
    }

    /// Parses allow-list `text`, as read from a file called `path`.
    ///
    /// # Errors
    /// [`Error::AllowListInvalid`] naming `path` and the line of the first
    /// malformed line.
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let mut entries = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let invalid = |reason: String| Error::AllowListInvalid {
                path: path.to_path_buf(),
                line: index + 1,
                reason,
            };
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((hex, name)) = line.split_once(' ') else {
                return Err(invalid(format!(
                    "`{line}` is not `HASH  NAME`; write the lines `sha256sum FILE` prints"
                )));
            };
            let digest = Sha256Digest::parse(hex).map_err(&invalid)?;
            // `sha256sum` writes two spaces, or a space and `*` (binary mode).
            let name = name.strip_prefix([' ', '*']).unwrap_or(name);
            if name.is_empty() {
                return Err(invalid(format!("`{line}` has no file name after the hash")));
            }
            entries.push((digest, name.to_owned()));
        }
        Ok(Self { path: path.to_path_buf(), entries })
    }

    /// The file the list was read from.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The hashes allowed, each with the name written next to it.
    #[must_use]
    pub fn entries(&self) -> &[(Sha256Digest, String)] {
        &self.entries
    }

    /// True when `digest` is on the list.
    #[must_use]
    pub fn allows(&self, digest: &Sha256Digest) -> bool {
        self.entries.iter().any(|(allowed, _)| allowed == digest)
    }

    /// Refuses code hashed to `found` unless it is on the list:
    /// [`Error::NotAllowed`] naming `target`.
    ///
    /// # Errors
    /// [`Error::NotAllowed`].
    pub fn admit(&self, target: &str, found: &Sha256Digest) -> Result<(), Error> {
        if self.allows(found) {
            return Ok(());
        }
        Err(Error::NotAllowed { target: target.to_owned(), found: *found, list: self.path.clone() })
    }
}

/// The largest allow-list read: 4 MiB, some 40 000 lines.
const ALLOW_LIST_LIMIT: u64 = 4 << 20;

/// Reads the regular file at `path`, at most [`ALLOW_LIST_LIMIT`] bytes:
/// opened non-blocking, so a FIFO is refused rather than waited on, and
/// `/dev/zero` is refused as not a regular file.
fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "it is not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(ALLOW_LIST_LIMIT + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > ALLOW_LIST_LIMIT {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("it is larger than {} MiB", ALLOW_LIST_LIMIT >> 20),
        ));
    }
    Ok(bytes)
}

/// What a pinned open checks before anything is mapped: the hash the spec
/// pins, and the allow-lists that apply.
#[derive(Clone, Copy, Debug, Default)]
pub struct PinPolicy<'a> {
    /// The hash the code must have (`?sha256=HEX`).
    pub sha256: Option<&'a Sha256Digest>,
    /// Allow-lists the code's hash must be on, each of them.
    pub allow_lists: &'a [&'a AllowList],
}

impl PinPolicy<'_> {
    /// True when nothing is checked (no pin, no allow-list): the code is
    /// opened by path, as [`Loader::open`] does.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sha256.is_none() && self.allow_lists.is_empty()
    }

    /// Checks `found`, the hash of `target`'s bytes.
    ///
    /// # Errors
    /// [`Error::HashMismatch`] when a pinned hash differs,
    /// [`Error::NotAllowed`] when an allow-list lacks it.
    pub fn verify(&self, target: &str, found: &Sha256Digest) -> Result<(), Error> {
        if let Some(expected) = self.sha256
            && expected != found
        {
            return Err(Error::HashMismatch {
                target: target.to_owned(),
                expected: *expected,
                found: *found,
            });
        }
        self.allow_lists.iter().try_for_each(|list| list.admit(target, found))
    }
}

/// Reads the code `target` names with `loader` ([`Loader::read`]), hashes
/// the bytes, checks the hash with `check`, and only then maps those same
/// bytes ([`Loader::open_bytes`]); the [`Code`] carries the hash
/// ([`Code::sha256`]). Nothing is mapped or run when the check fails.
///
/// # Errors
/// [`Error::PinUnsupported`] for a loader that cannot read its code as
/// bytes (plugins linked in); the read's errors; those of
/// [`PinPolicy::verify`]; then those of [`Loader::open_bytes`].
///
/// # Safety
/// As [`Loader::open`]: the code must be a trusted v0 plugin (the hash
/// proves it is the code that was approved, not that it is sound).
pub unsafe fn open_verified(
    loader: &'static dyn Loader,
    target: &str,
    policy: &PinPolicy<'_>,
) -> Result<Code, Error> {
    let bytes = loader.read(target)?;
    let found = *bytes.sha256();
    policy.verify(target, &found)?;
    // SAFETY: forwarded to the caller.
    let code = unsafe { loader.open_bytes(target, &bytes) }?;
    Ok(code.with_sha256(found))
}
