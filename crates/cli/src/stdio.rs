//! C's `stdout`: the one stream `xplug run` writes its output to, shared
//! with the plugins it runs, as `iree-run-module` shares it.
//!
//! A C plugin's `printf` goes into C's stdout buffer, and `iree-run-module`
//! prints `EXEC @fn` and the results into the same buffer, so their lines
//! come out in the order they were written, whatever stdout is. Rust's
//! stdout is another buffer: written there, xplug's results would overtake
//! a plugin's lines on a pipe or in a file (C's buffer is flushed only at
//! exit) and the output would differ from IREE's. So xplug writes through
//! C's stdio too, with C's buffering: line-buffered on a terminal, fully
//! buffered otherwise, exactly as IREE's tool, and a plugin that writes
//! straight to the descriptor (a Rust plugin's `println!`) lands where it
//! lands under `iree-run-module` as well.
//!
//! This module is the FFI edge for that stream; [`crate::output`] builds
//! on it.

use std::io;

unsafe extern "C" {
    /// glibc's `FILE *stdout` (also musl's): the process's C standard
    /// output stream, opened before `main` and never reassigned by xplug.
    #[link_name = "stdout"]
    static C_STDOUT: *mut libc::FILE;
}

fn stream() -> *mut libc::FILE {
    // SAFETY: a plain read of a pointer-sized global that the C library
    // initialises before any Rust code runs; nothing in xplug writes it.
    unsafe { C_STDOUT }
}

/// Appends `bytes` to C's stdout buffer (`fwrite`); C writes the buffer
/// out when it fills, at a newline on a terminal, on [`flush`], or at exit.
///
/// # Errors
/// The error `fwrite` met when it wrote part of a full buffer out.
pub(crate) fn write(bytes: &[u8]) -> io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    let stream = stream();
    // SAFETY: `bytes` is valid for `bytes.len()` reads for the whole call;
    // `stream` is the C library's live stdout, which stdio locks itself
    // (plugins on worker threads may write to it at the same time).
    let written = unsafe { libc::fwrite(bytes.as_ptr().cast(), 1, bytes.len(), stream) };
    if written == bytes.len() { Ok(()) } else { Err(last_stream_error()) }
}

/// Writes C's stdout buffer out (`fflush`).
///
/// # Errors
/// The write error, for example `ENOSPC` on `/dev/full`.
pub(crate) fn flush() -> io::Result<()> {
    // SAFETY: `fflush` on the C library's live stdout.
    if unsafe { libc::fflush(stream()) } == 0 { Ok(()) } else { Err(last_stream_error()) }
}

fn last_stream_error() -> io::Error {
    let error = io::Error::last_os_error();
    // A failed stdio call always sets errno on glibc; 0 would mean another
    // C library that did not, which is still a failed write.
    if error.raw_os_error() == Some(0) {
        io::Error::other("the C library's stdout reported an error")
    } else {
        error
    }
}
