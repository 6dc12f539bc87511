//! The bytes of a plugin file, read once and hashed as they are read
//! ([`CodeBytes`]), and the FFI that keeps them: on Linux a sealed
//! anonymous in-memory file (`memfd_create`, `F_ADD_SEALS`), mapped
//! read-only when they are needed whole.

use std::io::Read as _;
use std::path::Path;

use sha2::{Digest as _, Sha256};

use crate::Error;
use crate::digest::Sha256Digest;

/// The bytes of a plugin file as a pinned open reads them
/// ([`Loader::read`](crate::Loader::read)), with their SHA-256: read once,
/// in chunks, hashed as they are read, into storage nothing can change
/// afterwards. The bytes hashed are the bytes a loader then opens
/// ([`Loader::open_bytes`](crate::Loader::open_bytes)), never the file again.
///
/// No more than [`CodeBytes::LIMIT`] bytes are read: a larger file is
/// refused before any of it is ([`Error::FileTooLarge`]), and the process
/// never holds the whole file in its own memory while hashing it.
///
/// ```
/// use xplug_providers::{CodeBytes, Sha256Digest};
///
/// let code = CodeBytes::copy_of("image", b"plugin bytes")?;
/// assert_eq!(code.sha256(), &Sha256Digest::of(b"plugin bytes"));
/// assert_eq!(&*code.map("image")?, b"plugin bytes");
/// # Ok::<(), xplug_providers::Error>(())
/// ```
///
/// # Platform-specific behaviour
/// On Linux the bytes are kept in an anonymous `memfd_create` file sealed
/// against every change (`F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK |
/// F_SEAL_SEAL`); elsewhere in the process's memory.
pub struct CodeBytes {
    #[cfg(target_os = "linux")]
    file: std::fs::File,
    #[cfg(not(target_os = "linux"))]
    bytes: Vec<u8>,
    len: u64,
    sha256: Sha256Digest,
}

impl std::fmt::Debug for CodeBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeBytes").field("len", &self.len).field("sha256", &self.sha256).finish()
    }
}

/// The size of one read while a file is copied and hashed.
const CHUNK: usize = 1 << 16;

impl CodeBytes {
    /// The largest plugin file read: 1 GiB, the largest image the
    /// embedded-ELF loader maps ([`xplug_elf::MAX_IMAGE_SIZE`]).
    pub const LIMIT: u64 = xplug_elf::MAX_IMAGE_SIZE;

    /// Reads the regular file at `path` (`what` it is, for messages: "plugin
    /// library"...), hashing it as it is read. The file is opened
    /// non-blocking, so a FIFO is refused rather than waited on; symbolic
    /// links are followed.
    ///
    /// # Errors
    /// [`Error::FileNotFound`]; [`Error::NotSharedObject`] for something
    /// other than a regular file; [`Error::FileTooLarge`] for a file over
    /// [`CodeBytes::LIMIT`] (checked before reading, and again while
    /// reading a file that grows); [`Error::Io`] naming the file.
    pub fn read_file(path: &Path, what: &'static str) -> Result<Self, Error> {
        let io_error = Error::reading(what, path);
        let file = open_regular(path, &io_error)?;
        let metadata = file.metadata().map_err(&io_error)?;
        let too_large =
            |size: u64| Error::FileTooLarge { path: path.to_path_buf(), size, limit: Self::LIMIT };
        if metadata.len() > Self::LIMIT {
            return Err(too_large(metadata.len()));
        }
        let mut store = Store::new(&file_name(path)).map_err(|(doing, error)| {
            Error::io(format!("cannot {doing} for {what} {}", path.display()), error)
        })?;
        let mut hasher = Sha256::new();
        let mut len = 0u64;
        let mut chunk = vec![0u8; CHUNK.min(usize::try_from(metadata.len()).unwrap_or(CHUNK) + 1)];
        // One byte past the limit is read to see a file that grew past it.
        let mut reader = file.take(Self::LIMIT + 1);
        loop {
            let count = match reader.read(&mut chunk) {
                Ok(0) => break,
                Ok(count) => count,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(io_error(error)),
            };
            len += count as u64;
            if len > Self::LIMIT {
                return Err(too_large(len));
            }
            hasher.update(&chunk[..count]);
            store.write(&chunk[..count]).map_err(|error| {
                Error::io(format!("cannot copy {what} {} into memory", path.display()), error)
            })?;
        }
        store.finish(Sha256Digest::from_bytes(hasher.finalize().into()), len).map_err(|(doing, error)| {
            Error::io(format!("cannot {doing} for {what} {}", path.display()), error)
        })
    }

    /// The bytes of the regular file at `path` in the process's memory,
    /// for an open that is not checked (an unpinned `.sos`, which is mapped
    /// from memory anyway): opened and bounded as [`CodeBytes::read_file`]
    /// opens and bounds it, in one read, not hashed.
    pub(crate) fn read_unchecked(path: &Path, what: &'static str) -> Result<Vec<u8>, Error> {
        let io_error = Error::reading(what, path);
        let file = open_regular(path, &io_error)?;
        let size = file.metadata().map_err(&io_error)?.len();
        if size > Self::LIMIT {
            return Err(Error::FileTooLarge { path: path.to_path_buf(), size, limit: Self::LIMIT });
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.take(Self::LIMIT + 1).read_to_end(&mut bytes).map_err(&io_error)?;
        if bytes.len() as u64 > Self::LIMIT {
            return Err(Error::FileTooLarge {
                path: path.to_path_buf(),
                size: bytes.len() as u64,
                limit: Self::LIMIT,
            });
        }
        Ok(bytes)
    }

    /// A copy of `bytes` (an image called `name`, for messages), hashed.
    ///
    /// # Errors
    /// [`Error::FileTooLarge`] for more than [`CodeBytes::LIMIT`] bytes;
    /// [`Error::Io`] when the in-memory file cannot be created.
    pub fn copy_of(name: &str, bytes: &[u8]) -> Result<Self, Error> {
        let io = |(doing, error): (&str, std::io::Error)| {
            Error::io(format!("cannot {doing} for memory image `{name}`"), error)
        };
        if bytes.len() as u64 > Self::LIMIT {
            return Err(Error::FileTooLarge {
                path: format!("memory image `{name}`").into(),
                size: bytes.len() as u64,
                limit: Self::LIMIT,
            });
        }
        let mut store = Store::new(name).map_err(io)?;
        store.write(bytes).map_err(|error| io(("write the in-memory file", error)))?;
        store.finish(Sha256Digest::of(bytes), bytes.len() as u64).map_err(io)
    }

    /// The SHA-256 of the bytes (what `sha256sum` prints for the file).
    #[must_use]
    pub fn sha256(&self) -> &Sha256Digest {
        &self.sha256
    }

    /// The number of bytes.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty file.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes, whole: on Linux a read-only mapping of the sealed file
    /// (`shown` names the plugin in the error).
    ///
    /// # Errors
    /// [`Error::Io`] when the mapping fails.
    pub fn map(&self, shown: &str) -> Result<CodeView<'_>, Error> {
        #[cfg(target_os = "linux")]
        {
            memfd::Mapping::new(&self.file, self.len)
                .map(|mapping| CodeView { mapping, _code: std::marker::PhantomData })
                .map_err(|error| Error::io(format!("cannot map the bytes of plugin {shown}"), error))
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = shown;
            Ok(CodeView { bytes: &self.bytes })
        }
    }

    /// The first bytes (at most `count`), to read a header.
    pub(crate) fn head(&self, count: usize) -> std::io::Result<Vec<u8>> {
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::FileExt as _;
            let mut head = vec![0u8; count.min(usize::try_from(self.len).unwrap_or(usize::MAX))];
            self.file.read_exact_at(&mut head, 0)?;
            Ok(head)
        }
        #[cfg(not(target_os = "linux"))]
        {
            Ok(self.bytes[..count.min(self.bytes.len())].to_vec())
        }
    }

    /// A new descriptor of the sealed file.
    #[cfg(target_os = "linux")]
    pub(crate) fn sealed_file(&self) -> std::io::Result<std::fs::File> {
        self.file.try_clone()
    }

    /// The bytes.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// The bytes of a [`CodeBytes`], whole ([`CodeBytes::map`]).
pub struct CodeView<'code> {
    #[cfg(target_os = "linux")]
    mapping: memfd::Mapping,
    #[cfg(target_os = "linux")]
    _code: std::marker::PhantomData<&'code CodeBytes>,
    #[cfg(not(target_os = "linux"))]
    bytes: &'code [u8],
}

impl std::ops::Deref for CodeView<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        #[cfg(target_os = "linux")]
        {
            self.mapping.bytes()
        }
        #[cfg(not(target_os = "linux"))]
        {
            self.bytes
        }
    }
}

impl std::fmt::Debug for CodeView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeView").field("len", &self.len()).finish()
    }
}

/// Opens the regular file at `path` for reading, non-blocking (a FIFO is
/// refused, never waited on); symbolic links are followed.
fn open_regular(path: &Path, io_error: &impl Fn(std::io::Error) -> Error) -> Result<std::fs::File, Error> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path).map_err(io_error)?;
    let metadata = file.metadata().map_err(io_error)?;
    if !metadata.is_file() {
        return Err(not_a_regular_file(path, &metadata));
    }
    Ok(file)
}

/// The last component of `path`, to name an in-memory file.
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |name| name.to_string_lossy().into_owned())
}

/// Where bytes are written before they are sealed: an in-memory file,
/// its runs of zero bytes left as holes (read back as zeros, holding no
/// memory), so a sparse file stays small.
#[cfg(target_os = "linux")]
struct Store {
    file: std::fs::File,
    written: u64,
}

#[cfg(target_os = "linux")]
impl Store {
    fn new(name: &str) -> Result<Self, (&'static str, std::io::Error)> {
        memfd::create(name).map(|file| Self { file, written: 0 })
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt as _;
        if bytes.iter().any(|&byte| byte != 0) {
            self.file.write_all_at(bytes, self.written)?;
        }
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn finish(self, sha256: Sha256Digest, len: u64) -> Result<CodeBytes, (&'static str, std::io::Error)> {
        self.file.set_len(len).map_err(|error| ("size the in-memory file", error))?;
        memfd::seal(&self.file)?;
        Ok(CodeBytes { file: self.file, len, sha256 })
    }
}

/// Where bytes are written before they are sealed.
#[cfg(not(target_os = "linux"))]
struct Store(Vec<u8>);

#[cfg(not(target_os = "linux"))]
impl Store {
    fn new(_name: &str) -> Result<Self, (&'static str, std::io::Error)> {
        Ok(Self(Vec::new()))
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }

    fn finish(self, sha256: Sha256Digest, len: u64) -> Result<CodeBytes, (&'static str, std::io::Error)> {
        Ok(CodeBytes { bytes: self.0, len, sha256 })
    }
}

/// Sealed in-memory files (`memfd_create`, `F_ADD_SEALS`) and read-only
/// mappings of them: the FFI of keeping bytes no one can change.
#[cfg(target_os = "linux")]
pub(crate) mod memfd {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    /// Every seal: no write, no growth, no shrinking, no seal removed.
    const ALL_SEALS: libc::c_int =
        libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL;

    /// An anonymous in-memory file called `xplug:NAME`, not yet sealed; on
    /// failure, what was being done and the OS error.
    pub(crate) fn create(name: &str) -> Result<std::fs::File, (&'static str, std::io::Error)> {
        let memfd_name = std::ffi::CString::new(format!("xplug:{}", name.replace('\0', "_")))
            .unwrap_or_else(|_| std::ffi::CString::from(c"xplug:plugin"));
        // SAFETY: `memfd_name` is a valid NUL-terminated string; the call has
        // no other preconditions.
        let fd =
            unsafe { libc::memfd_create(memfd_name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
        if fd < 0 {
            return Err(("create an in-memory file (memfd_create)", std::io::Error::last_os_error()));
        }
        // SAFETY: `fd` is a freshly created descriptor owned by nobody else.
        Ok(std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Seals `file` with [`ALL_SEALS`].
    pub(crate) fn seal(file: &std::fs::File) -> Result<(), (&'static str, std::io::Error)> {
        // SAFETY: `F_ADD_SEALS` takes an int of seal bits on a descriptor
        // `file` keeps open; nothing is mapped from it yet (a shared
        // writable mapping would make `F_SEAL_WRITE` fail, not misbehave).
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, ALL_SEALS) } != 0 {
            return Err(("seal the in-memory file (F_ADD_SEALS)", std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// True when `file` carries every seal of [`ALL_SEALS`].
    pub(crate) fn is_sealed(file: &std::fs::File) -> bool {
        // SAFETY: `F_GET_SEALS` only reads the seals of a descriptor `file`
        // keeps open; it answers -1 for a file that cannot be sealed.
        let seals = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
        seals >= 0 && seals & ALL_SEALS == ALL_SEALS
    }

    /// A private read-only mapping of a whole sealed file, unmapped on
    /// drop.
    pub(crate) struct Mapping {
        address: *mut libc::c_void,
        len: usize,
    }

    impl Mapping {
        /// Maps the `len` bytes of the sealed `file`.
        pub(crate) fn new(file: &std::fs::File, len: u64) -> std::io::Result<Self> {
            let len =
                usize::try_from(len).map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
            if len == 0 {
                return Ok(Self { address: std::ptr::null_mut(), len });
            }
            // SAFETY: a new read-only private mapping of a descriptor `file`
            // keeps open, at an address the kernel chooses: no existing
            // memory is affected. The file is sealed against writes,
            // growing and shrinking, so the mapped bytes never change and
            // never fault for a truncated file.
            let address = unsafe {
                libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0)
            };
            if address == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            Ok(Self { address, len })
        }

        /// The mapped bytes.
        pub(crate) fn bytes(&self) -> &[u8] {
            if self.len == 0 {
                return &[];
            }
            // SAFETY: `address` is a live read-only mapping of `len` bytes
            // (made in `new`, unmapped only in `drop`), whose bytes never
            // change (the file is sealed).
            unsafe { std::slice::from_raw_parts(self.address.cast::<u8>(), self.len) }
        }
    }

    impl Drop for Mapping {
        fn drop(&mut self) {
            if self.len != 0 {
                // SAFETY: unmaps exactly the mapping made in `new`; no
                // borrow of its bytes outlives `self`.
                unsafe { libc::munmap(self.address, self.len) };
            }
        }
    }
}

/// The refusal of a path that names something other than a regular file
/// (a directory, a FIFO...): plugins are only ever read from files.
pub(crate) fn not_a_regular_file(path: &Path, metadata: &std::fs::Metadata) -> Error {
    Error::NotSharedObject {
        path: path.to_path_buf(),
        reason: format!(
            "it is {}, not a regular file; pass the path of a plugin file",
            file_kind(&metadata.file_type())
        ),
    }
}

/// "a directory", "a FIFO"...
fn file_kind(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() { "a directory" } else { "not a regular file" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn code_bytes_are_sealed_against_every_change() {
        use std::io::Write;
        use std::os::fd::AsRawFd;

        let code = CodeBytes::copy_of("unit", b"bytes").unwrap();
        assert!(memfd::is_sealed(&code.file));
        // Reopened for writing through /proc, as an attacker in this
        // process's user could: every change is refused.
        let path = format!("/proc/self/fd/{}", code.file.as_raw_fd());
        let mut writer = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        assert_eq!(writer.write(b"X").unwrap_err().raw_os_error(), Some(libc::EPERM));
        assert_eq!(writer.set_len(1).unwrap_err().raw_os_error(), Some(libc::EPERM));
        assert_eq!(std::fs::read(&path).unwrap(), b"bytes");
        assert_eq!(&*code.map("unit").unwrap(), b"bytes");
        let unsealed = tempfile::tempfile().unwrap();
        assert!(!memfd::is_sealed(&unsealed), "a plain file has no seals");
    }

    #[test]
    fn a_file_is_hashed_in_chunks_as_sha256sum_hashes_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lib.so");
        // Several chunks and a partial one.
        let bytes: Vec<u8> = (0..3 * CHUNK + 123).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let code = CodeBytes::read_file(&path, "plugin library").unwrap();
        assert_eq!(code.sha256(), &Sha256Digest::of(&bytes));
        assert_eq!(code.len(), bytes.len() as u64);
        assert_eq!(&*code.map("lib.so").unwrap(), &bytes[..]);
        assert_eq!(code.head(4).unwrap(), &bytes[..4]);
        let empty = dir.path().join("empty.so");
        std::fs::write(&empty, b"").unwrap();
        let code = CodeBytes::read_file(&empty, "plugin library").unwrap();
        assert!(code.is_empty());
        assert_eq!(code.sha256(), &Sha256Digest::of(b""));
        assert!(code.map("empty.so").unwrap().is_empty());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_sparse_file_stays_sparse_in_memory() {
        use std::os::unix::fs::MetadataExt as _;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse.so");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(16 << 20).unwrap();
        // One non-zero byte in the middle of a chunk, far into the file.
        std::os::unix::fs::FileExt::write_all_at(&file, b"\x01", (10 << 20) + 5).unwrap();
        let code = CodeBytes::read_file(&path, "plugin library").unwrap();
        let mut expected = vec![0u8; 16 << 20];
        expected[(10 << 20) + 5] = 1;
        assert_eq!(code.sha256(), &Sha256Digest::of(&expected));
        assert_eq!(code.len(), 16 << 20);
        // The in-memory file holds the one chunk written (512-byte blocks).
        let allocated = code.file.metadata().unwrap().blocks() * 512;
        assert!(allocated <= CHUNK as u64, "{allocated} bytes allocated for a sparse 16 MiB file");
        let view = code.map("sparse.so").unwrap();
        assert_eq!(view.len(), 16 << 20);
        assert!(view[..(10 << 20) + 5].iter().all(|&byte| byte == 0));
        assert_eq!(view[(10 << 20) + 5], 1);
        assert_eq!(*view.last().unwrap(), 0);
    }

    #[test]
    fn a_file_over_the_limit_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.so");
        // Sparse: 3 GiB that occupy no disk and no memory.
        std::fs::File::create(&path).unwrap().set_len(3 << 30).unwrap();
        let error = CodeBytes::read_file(&path, "plugin library").unwrap_err();
        assert!(
            matches!(&error, Error::FileTooLarge { size, limit, .. } if *size == 3 << 30 && *limit == CodeBytes::LIMIT),
            "{error}"
        );
        assert!(error.to_string().contains("huge.so"), "{error}");
        // An unchecked read (an unpinned `.sos`) is bounded the same way.
        let error = CodeBytes::read_unchecked(&path, "embedded ELF plugin").unwrap_err();
        assert!(matches!(&error, Error::FileTooLarge { size, .. } if *size == 3 << 30), "{error}");
    }
}
