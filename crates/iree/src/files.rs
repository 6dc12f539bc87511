//! Reading the files a user names: a module (`xplug run MODULE.vmfb`), an
//! `--input=@FILE` and `xplug call --file`. Every such read goes through
//! [`read_bounded`]: regular files only, and at most a limit, both checked
//! before the first byte is read, so `/dev/zero`, a FIFO or a directory is
//! refused at once instead of growing memory until the process is killed
//! (`docs/src/embedding/iree.md`, "Bounded input").
//!
//! A module may also come down a pipe, as IREE's tests feed it
//! (`iree-compile prog.mlir | iree-run-module --module=-`):
//! [`crate::Module::from_file`] takes a FIFO (`/dev/stdin` on a pipe) and
//! [`crate::Module::from_stdin`] standard input, both read through the
//! same bounded read, which stops one byte past [`MODULE_LIMIT`].

use std::fs::File;
use std::io::Read;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::Error;

/// The largest module xplug reads: 2 GiB, the most a `.vmfb`'s
/// FlatBuffer (32-bit offsets) can address.
pub const MODULE_LIMIT: u64 = 2 << 30;

/// The largest `--input=@FILE` xplug reads: 1 GiB.
pub const INPUT_LIMIT: u64 = 1 << 30;

/// Reads the regular file at `path`, at most `limit` bytes. `what` names
/// the file in errors (`"the module"`, `"the input file"`).
///
/// The file is opened without blocking (a FIFO with no writer does not
/// hang the open), its type and size are checked on the open descriptor,
/// and the read stops one byte past `limit`, so a file that grows while
/// it is read is refused too.
///
/// # Errors
/// [`Error::NotAFile`] for a device, FIFO, socket or directory;
/// [`Error::FileTooLarge`] above `limit`; [`Error::FileRead`] when the
/// file cannot be opened or read.
pub fn read_bounded(path: &Path, what: &'static str, limit: u64) -> Result<Vec<u8>, Error> {
    read_file(path, what, limit, Pipes::Refuse)
}

/// Whether [`read_file`] reads a FIFO.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pipes {
    Refuse,
    Read,
}

/// Reads the module at `path`: a regular file as [`read_bounded`] does, or
/// a FIFO (a named pipe, or `/dev/stdin` when standard input is a pipe),
/// opened for reading as `iree-run-module` opens it (waiting for a writer)
/// and read to its end. Devices, sockets and directories are refused as
/// [`read_bounded`] refuses them.
///
/// # Errors
/// As [`read_bounded`], with [`MODULE_LIMIT`] for a pipe too.
pub(crate) fn read_module(path: &Path) -> Result<Vec<u8>, Error> {
    read_file(path, "the module", MODULE_LIMIT, Pipes::Read)
}

/// The one bounded read of a named file: opened without blocking (a FIFO
/// with no writer does not hang the open), its type and size checked on
/// the open descriptor, then read through [`read_stream`]. A FIFO, when
/// `pipes` allows it, is read through the same descriptor once a writer
/// has come, blocking: until every writer has closed it (a non-blocking
/// descriptor would read an empty pipe as its end).
fn read_file(path: &Path, what: &'static str, limit: u64, pipes: Pipes) -> Result<Vec<u8>, Error> {
    let read_error = |source| Error::FileRead { what, path: path.to_owned(), source };
    let file = File::options().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(read_error)?;
    let metadata = file.metadata().map_err(read_error)?;
    if pipes == Pipes::Read && metadata.file_type().is_fifo() {
        // The same descriptor, made blocking once a writer came: reopening
        // would lose what a writer wrote and closed in between, and then
        // wait for a writer that never comes.
        crate::sys::wait_for_fifo_writer(&file).map_err(read_error)?;
        return read_stream(file, what, path, limit);
    }
    if !metadata.is_file() {
        return Err(Error::NotAFile { what, path: path.to_owned(), kind: file_kind(&metadata) });
    }
    if metadata.len() > limit {
        return Err(Error::FileTooLarge { what, path: path.to_owned(), limit });
    }
    read_stream(file, what, path, limit)
}

/// Reads standard input to its end, at most `limit` bytes, for `what`
/// (`--module=-`). Standard input must be a pipe, a socket or a regular
/// file: a terminal or another device is refused at once, naming what it
/// is, since reading it would wait for typing or never end.
///
/// # Errors
/// [`Error::NotAFile`] for a terminal or device (the path is `-`),
/// [`Error::FileTooLarge`] above `limit`, [`Error::FileRead`] when the
/// read fails.
pub(crate) fn read_stdin(what: &'static str, limit: u64) -> Result<Vec<u8>, Error> {
    let path = Path::new("-");
    let stdin = std::io::stdin();
    // The descriptor's type, without taking ownership of it: fstat through
    // a duplicate, closed on drop.
    let metadata = stdin
        .as_fd()
        .try_clone_to_owned()
        .map(File::from)
        .and_then(|file| file.metadata())
        .map_err(|source| Error::FileRead { what, path: path.to_owned(), source })?;
    let file_type = metadata.file_type();
    if !(file_type.is_file() || file_type.is_fifo() || file_type.is_socket()) {
        let kind = if std::io::IsTerminal::is_terminal(&stdin) { "a terminal" } else { file_kind(&metadata) };
        return Err(Error::NotAFile { what, path: path.to_owned(), kind });
    }
    if file_type.is_file() && metadata.len() > limit {
        return Err(Error::FileTooLarge { what, path: path.to_owned(), limit });
    }
    read_stream(stdin.lock(), what, path, limit)
}

/// Reads `reader` to its end for `what` (named `path` in errors), at most
/// `limit` bytes: the read stops one byte past the limit, so an endless
/// stream is refused after `limit + 1` bytes, not when memory runs out.
///
/// # Errors
/// [`Error::FileTooLarge`] above `limit`, [`Error::FileRead`] when a read
/// fails.
pub(crate) fn read_stream(
    reader: impl Read,
    what: &'static str,
    path: &Path,
    limit: u64,
) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    reader.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(|source| Error::FileRead {
        what,
        path: path.to_owned(),
        source,
    })?;
    if bytes.len() as u64 > limit {
        return Err(Error::FileTooLarge { what, path: path.to_owned(), limit });
    }
    Ok(bytes)
}

/// What a file that is not a regular one is, for [`Error::NotAFile`].
pub(crate) fn file_kind(metadata: &std::fs::Metadata) -> &'static str {
    let file_type = metadata.file_type();
    if file_type.is_file() {
        "a regular file"
    } else if file_type.is_dir() {
        "a directory"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_bounded(&path, "the input file", 10).unwrap(), b"0123456789");
        assert_eq!(read_bounded(&path, "the input file", 1 << 20).unwrap(), b"0123456789");
    }

    #[test]
    fn devices_fifos_and_directories_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        for (path, kind) in [
            (Path::new("/dev/zero"), "a character device"),
            (fifo.as_path(), "a FIFO"),
            (dir.path(), "a directory"),
        ] {
            let error = read_bounded(path, "the module", MODULE_LIMIT).unwrap_err();
            assert!(matches!(&error, Error::NotAFile { kind: found, .. } if *found == kind), "{error:?}");
            let text = error.to_string();
            assert!(text.contains(&path.display().to_string()) && text.contains(kind), "{text}");
        }
    }

    #[test]
    fn modules_come_down_pipes_within_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("module.fifo");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let writer = {
            let fifo = fifo.clone();
            // Opens the FIFO after the reader may have started to wait.
            std::thread::spawn(move || std::fs::write(fifo, b"module bytes").unwrap())
        };
        assert_eq!(read_module(&fifo).unwrap(), b"module bytes");
        writer.join().unwrap();
        // Regular files as before; devices still refused.
        let file = dir.path().join("m.vmfb");
        std::fs::write(&file, b"abc").unwrap();
        assert_eq!(read_module(&file).unwrap(), b"abc");
        assert!(matches!(
            read_module(Path::new("/dev/zero")),
            Err(Error::NotAFile { kind: "a character device", .. })
        ));
        // An endless stream stops one byte past the limit.
        let error = read_stream(std::io::repeat(7), "the module", Path::new("-"), 1000).unwrap_err();
        assert!(matches!(error, Error::FileTooLarge { limit: 1000, .. }), "{error:?}");
        assert_eq!(read_stream(&[1u8, 2, 3][..], "the module", Path::new("-"), 3).unwrap(), [1, 2, 3]);
    }

    #[test]
    fn files_above_the_limit_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.npy");
        // Sparse: 3 GiB on paper, nothing on disk; refused by its size.
        File::create(&path).unwrap().set_len(3 << 30).unwrap();
        let error = read_bounded(&path, "the input file", INPUT_LIMIT).unwrap_err();
        assert!(matches!(error, Error::FileTooLarge { limit: INPUT_LIMIT, .. }), "{error:?}");
        assert!(error.to_string().contains("1073741824 bytes"), "{error}");
        let small = dir.path().join("eleven");
        std::fs::write(&small, b"01234567890").unwrap();
        assert!(matches!(
            read_bounded(&small, "the args file", 10),
            Err(Error::FileTooLarge { limit: 10, .. })
        ));
        let missing = read_bounded(&dir.path().join("missing"), "the module", 10).unwrap_err();
        assert!(
            matches!(&missing, Error::FileRead { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
        );
    }
}
